"""Every metric's role reproduces what the report chose by name before
roles existed, so a report that reads roles draws and compares the same
metrics: the conventions below are those of report/plots.py,
report/instances.py and report/netpairs.LATENCY_METRICS as they were."""

import re

import pytest

from isobench.core.metric import (
    CPU_COST,
    CPU_UTIL,
    DURATION,
    FAIRNESS,
    LATENCY,
    PER_INSTANCE,
    ROLES,
    STARTUP,
    THROUGHPUT,
)
from isobench.host.hostinfo import HostInfo
from isobench.workloads import WORKLOADS
from workload_params import default_params

HOST = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)
# netpairs.LATENCY_METRICS: (workload, metrics) the NAT vs host comparison took; None = all
LEGACY_LATENCY = {"netlat": None, "redis": ("mean_ms", "p99_ms"), "oltp": ("p95_ms",)}
TIME_UNITS = {"ns", "us", "µs", "ms", "s"}
FREE = ("", THROUGHPUT, DURATION, STARTUP)  # roles no naming rule assigned


def legacy_role(workload: str, name: str, unit: str) -> str | None:
    """The role a naming rule implied, or None where no rule spoke."""
    if re.match(r"^instance_[0-9]+_", name):
        return PER_INSTANCE
    if name in ("jain", "imbalance"):
        return FAIRNESS
    if name.lower().startswith("cpu_util"):
        return CPU_UTIL
    if "per_gb" in name.lower() or unit.lower().endswith("/gb"):
        return CPU_COST
    if workload in LEGACY_LATENCY and (LEGACY_LATENCY[workload] is None or name in LEGACY_LATENCY[workload]):
        return LATENCY
    return None


def cells():
    for name, cls in sorted(WORKLOADS.items()):
        w = cls(default_params(name, cls), HOST)
        for case in w.cases():
            yield name, case, w.metrics(case)


@pytest.mark.parametrize(("workload", "case", "metrics"), list(cells()), ids=lambda v: v if isinstance(v, str) else "")
def test_roles_match_the_naming_rules(workload, case, metrics):
    for m in metrics:
        assert m.role in ROLES
        expected = legacy_role(workload, m.name, m.unit)
        if expected is None:
            assert m.role in FREE, f"{workload}/{case} {m.name}: {m.role!r} where no rule applied"
        else:
            assert m.role == expected, f"{workload}/{case} {m.name}: {m.role!r}, the report took it as {expected!r}"
        if m.role == THROUGHPUT:
            assert m.higher_is_better, m.name
        if m.role in (LATENCY, DURATION):
            assert not m.higher_is_better and m.unit in TIME_UNITS, m.name


@pytest.mark.parametrize(("workload", "case", "metrics"), list(cells()), ids=lambda v: v if isinstance(v, str) else "")
def test_sweep_axes_are_the_ones_picked_by_name(workload, case, metrics):
    """A sweep's throughput axis was the first higher-is-better metric that
    is no CPU, instance or fairness reading; its latency axis the first
    such lower-is-better metric in a time unit. By role: the first
    THROUGHPUT metric, and the first of role "", LATENCY or DURATION in a time unit."""
    plain = [m for m in metrics if legacy_role(workload, m.name, m.unit) in (None, LATENCY)]
    old_tput = next((m.name for m in plain if m.higher_is_better), None)
    old_lat = next((m.name for m in plain if not m.higher_is_better and m.unit in TIME_UNITS), None)
    assert next((m.name for m in metrics if m.role == THROUGHPUT), None) == old_tput
    assert (
        next(
            (
                m.name
                for m in metrics
                if m.role in ("", LATENCY, DURATION, STARTUP) and not m.higher_is_better and m.unit in TIME_UNITS
            ),
            None,
        )
        == old_lat
    )
