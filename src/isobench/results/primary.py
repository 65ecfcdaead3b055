"""Which metrics answer a workload case's question (its primaries).

Verdict families, the compare gate, history and adaptive stopping test the
primaries; every other metric is descriptive. Until workloads declare their
primaries, a case's primaries are chosen by role: its throughput metrics,
else its latency metrics, else its durations, else (a run stored before
roles) its first metric.
"""

from __future__ import annotations

from isobench.metric import DURATION, LATENCY, STARTUP, THROUGHPUT
from isobench.results.model import MetricKey, RunData
from isobench.results.roles import role_of

_BY_ROLE = (THROUGHPUT, LATENCY, DURATION, STARTUP)


def primary_keys(run: RunData) -> list[MetricKey]:
    """The run's primary metrics, in study order."""
    by_case: dict[tuple[str, str], list[MetricKey]] = {}
    for key in run.metrics:
        by_case.setdefault((key.workload, key.case), []).append(key)
    chosen: set[MetricKey] = set()
    for keys in by_case.values():
        for role in _BY_ROLE:
            picked = [k for k in keys if role_of(k) == role]
            if picked:
                chosen.update(picked)
                break
        else:  # no metric with one of those roles (a run stored before roles): its first metric
            chosen.add(keys[0])
    return [k for k in run.metrics if k in chosen]


def is_primary(run: RunData, key: MetricKey) -> bool:
    return key in set(primary_keys(run))
