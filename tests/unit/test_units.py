"""Every registered workload declares its units of work from a run's own values."""

from isobench.host.hostinfo import HostInfo
from isobench.workloads import WORKLOADS
from isobench.workloads.base import Measurement
from workload_params import default_params

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)

EXPECTED = {
    "compression": "MB",
    "fio": "I/O",
    "hpcc": "run",
    "netbw": "MB",
    "netlat": "round trip",
    "redis": "request",
    "oltp": "transaction",
    "api": "task",
    "redis-scaleout": "request",
    "startup": "start",
    "webstore": "run",
    "command": "run",
}


def test_each_workload_names_its_unit():
    for name, cls in WORKLOADS.items():
        w = cls(default_params(name, cls), HOST)
        case = w.cases()[0]
        m = Measurement(
            values={"iops": 1000.0, "tps": 50.0, "mean_us": 100.0, "bandwidth_mbs": 10.0},
            extra={"bytes": 3e9, "transactions": 777},
        )
        unit, count = w.units(case, m)
        if name in EXPECTED:
            assert unit == EXPECTED[name], name
        assert count >= 0, name


def test_units_from_values():
    netlat = WORKLOADS["netlat"](WORKLOADS["netlat"].Params(), HOST)
    assert netlat.units("tcp", Measurement({"mean_us": 100.0}, {"transactions": 777})) == ["round trip", 777.0]
    assert netlat.units("tcp", Measurement({"mean_us": 100.0}, {}))[1] == 5 * 1e6 / 100
    fio = WORKLOADS["fio"](WORKLOADS["fio"].Params(runtime_s=10), HOST)
    assert fio.units("randread", Measurement({"iops": 1000.0}))[1] == 10_000
    webstore = WORKLOADS["webstore"](WORKLOADS["webstore"].Params(duration_s=20), HOST)
    assert webstore.units("instances=1", Measurement({"ops_per_s": 30.0})) == ["operation", 600.0]
    netbw = WORKLOADS["netbw"](WORKLOADS["netbw"].Params(), HOST)
    assert netbw.units("rx", Measurement({"gbps": 1.0}, {"bytes": 3e9})) == ["MB", 3000.0]
