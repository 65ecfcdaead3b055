"""What a metric is, for the report: its role (isobench.core.metric).

Workloads declare each metric's role and the store keeps it, so the report
chooses figures and comparisons by role alone. A metric stored without one
(role "": a run stored before roles existed, or a workload that declares
none) falls back to the naming conventions the report used before roles;
they live here and nowhere else, so that such a run reports as it always
did.
"""

from __future__ import annotations

import re

from isobench.core.metric import (
    CPU_COST,
    CPU_UTIL,
    DURATION,
    FAIRNESS,
    LATENCY,
    PER_INSTANCE,
    STARTUP,
    THROUGHPUT,
    parse_instance_metric,
)
from isobench.results.model import MetricKey

# Roles a sweep may take its throughput axis (higher is better) and its
# latency axis (lower is better, a time) from: a plain value, or one of
# these; never a CPU, per-instance or fairness reading.
THROUGHPUT_AXIS = ("", THROUGHPUT)
LATENCY_AXIS = ("", LATENCY, DURATION, STARTUP)


def role_of(key: MetricKey) -> str:
    """The metric's declared role, or for role "" the one its name implied
    before roles existed ("" when none)."""
    if key.role in ("", DURATION) and _LEGACY_STARTUP.match(key.workload):
        return STARTUP  # stored before the startup role: its times were durations
    return key.role or _legacy_role(key)


# -- the fallback: naming conventions of runs stored before roles ------------------------

_LEGACY_STARTUP = re.compile(r"^startup(?:[-_].*)?$")

# (workload, metric) pairs the NAT vs host comparison took; None = every metric
_LEGACY_LATENCY: dict[str, tuple[str, ...] | None] = {
    "netlat": None,
    "redis": ("mean_ms", "p99_ms"),
    "oltp": ("p95_ms",),
}


def _legacy_role(key: MetricKey) -> str:
    name = key.metric.lower()
    if parse_instance_metric(key.metric) is not None:
        return PER_INSTANCE
    if key.metric in ("jain", "imbalance"):
        return FAIRNESS
    if name.startswith("cpu_util"):
        return CPU_UTIL
    if "per_gb" in name or key.unit.lower().endswith("/gb"):
        return CPU_COST
    if key.workload in _LEGACY_LATENCY:
        wanted = _LEGACY_LATENCY[key.workload]
        if wanted is None or key.metric in wanted:
            return LATENCY
    return ""
