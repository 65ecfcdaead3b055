"""Which metrics answer a workload case's question (its primaries).

The one place that says which metrics of a run are its primaries. Verdict
families (Table I, compare), the compare gate, history and adaptive stopping
test the primaries; every other metric is descriptive (docs/statistics.md).

A run stores them: each workload case declares its primaries
(``Metric.primary``; a study's ``primary = [...]`` overrides per workload
table) and the run's metric definitions keep the flag. A run stored before
that (no metric flagged) gets the role-based choice it always had: a case's
throughput metrics, else its latency metrics, else its durations, else (a
run stored before roles) its first metric; such a run is judged in one
family, as before. In a flagged run a case with no metric flagged is
descriptive: every workload declares a primary in every case (since primaries
were stored), so only a study's ``primary = ["CASE:METRIC", ...]`` naming
other cases of its table leaves one without (workloads/base.py primaries).
"""

from __future__ import annotations

from collections.abc import Iterable

from isobench.core.metric import DURATION, LATENCY, STARTUP, THROUGHPUT
from isobench.results.model import MetricKey, RunData
from isobench.results.roles import role_of

_BY_ROLE = (THROUGHPUT, LATENCY, DURATION, STARTUP)

# (workload, case, metric): a cell's metric across runs (keys differ in units, flags)
Ident = tuple[str, str, str]


def stores_primaries(run: RunData) -> bool:
    """The run stored primary flags (measured since workloads declare
    them): its primaries and the other metrics form two verdict families.
    False for a run stored before (one family over every metric)."""
    return any(k.primary for k in run.metrics)


def primary_keys(run: RunData) -> list[MetricKey]:
    """The run's primary metrics, in study order: the stored flags when the
    run has them (a case with none is descriptive), else the role-based
    choice (the module docstring)."""
    if stores_primaries(run):
        return [k for k in run.metrics if k.primary]
    by_case: dict[tuple[str, str], list[MetricKey]] = {}
    for key in run.metrics:
        by_case.setdefault((key.workload, key.case), []).append(key)
    chosen: set[MetricKey] = set()
    for keys in by_case.values():
        chosen.update(_by_role(keys))
    return [k for k in run.metrics if k in chosen]


def _by_role(keys: list[MetricKey]) -> list[MetricKey]:
    for role in _BY_ROLE:
        picked = [k for k in keys if role_of(k) == role]
        if picked:
            return picked
    return keys[:1]  # no metric with one of those roles (a run stored before roles): its first metric


def is_primary(run: RunData, key: MetricKey) -> bool:
    return key in set(primary_keys(run))


def ident(key: MetricKey) -> Ident:
    return key.workload, key.case, key.metric


def primary_family(runs: Iterable[RunData]) -> set[Ident] | None:
    """The primaries of a comparison of runs (compare, history), as
    (workload, case, metric): those of the last run given that stores
    primaries (the newest: its study decides what it asks), or None when no
    run stores any (every cell in one family, as before primaries)."""
    flagged = [r for r in runs if stores_primaries(r)]
    if not flagged:
        return None
    return {ident(k) for k in primary_keys(flagged[-1])}
