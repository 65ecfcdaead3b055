"""Each workload for real on the host, at tiny sizes: the tools, argv,
prepare, parse and cleanup together."""

import os

import pytest

from isobench.core.owner import owning
from isobench.envs.native import NativeEnvironment
from isobench.host.hostinfo import HostInfo
from isobench.workloads import get

pytestmark = [pytest.mark.integration, pytest.mark.beside]

HOST = HostInfo(
    cores=os.cpu_count() or 1, mem_bytes=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), disk_free_bytes=0
)


@pytest.fixture
def env():
    e = NativeEnvironment(name="native", run_id="itest")
    with owning(e.run_id):  # a global `isobench clean` beside it keeps its scratch
        e.start()
        try:
            yield e
        finally:
            e.stop()
        assert not os.path.exists(e.paths.data) and not os.path.exists(e.paths.tmp)


def assert_cleaned(env) -> None:
    """cleanup() removed what prepare() wrote, before the env's stop()."""
    assert os.listdir(env.paths.data) == [] and os.listdir(env.paths.tmp) == []


def measure(env, name: str, **params) -> dict[str, dict[str, float]]:
    cls = get(name)
    w = cls(cls.Params(**params), HOST)
    w.prepare(env)
    try:
        out = {}
        for case in w.cases():
            m = w.run(case, env)
            assert set(m.values) == {x.name for x in w.metrics(case)}
            out[case] = m
        return out
    finally:
        w.cleanup(env)


def test_compression(env):
    m = measure(env, "compression", size_mb=16)["default"]
    v = m.values
    assert 0.5 < v["throughput_mbs"] < 1000
    assert v["user_s"] > 0 and v["real_s"] > 0 and v["sys_s"] >= 0
    assert v["throughput_mbs"] == pytest.approx(16 / v["real_s"])
    assert_cleaned(env)


def test_hpcc(env):
    m = measure(env, "hpcc", n=1152)["default"]
    v = m.values
    assert 0.05 < v["hpl_gflops"] < 10_000
    assert 0.5 < v["stream_triad_gbs"] < 10_000
    assert 0 < v["random_access_gups"] < 1000
    assert m.extra["summary"]["HPL_N"] == 1152
    assert m.extra["summary"]["CommWorldProcs"] == HOST.cores
    assert_cleaned(env)


def test_fio(env):
    got = measure(env, "fio", size_mb=64, runtime_s=2, ramp_s=0, cases=["randread", "seqwrite"])
    rr, sw = got["randread"], got["seqwrite"]
    assert 10 < rr.values["iops"] < 10_000_000
    assert 0 < rr.values["read_clat_p50_us"] <= rr.values["read_clat_p99_9_us"] < 10_000_000
    assert rr.extra["read_clat_hist"]
    assert 1 < sw.values["bandwidth_mbs"] < 100_000
    assert_cleaned(env)
