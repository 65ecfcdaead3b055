"""Sweeps: the cases of a workload that are points along a parameter.

A case named ``<param>=<number>`` or ``<series>,<param>=<number>``
(``clients=4``, ``get,threads=8``) is one point of a sweep; the points of
one workload, series and parameter make a curve per metric. Which metric a
sweep plots as its throughput, latency or CPU utilisation follows the
metrics' roles (report.roles) and directions (docs/reports.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from isobench.core.metric import CPU_UTIL, STARTUP, is_time_unit
from isobench.results.roles import LATENCY_AXIS, THROUGHPUT_AXIS, role_of
from isobench.results.table import Row, Table

# the series may itself be a point of another sweep ("instances=2,noise=4":
# a noise curve per instance count)
SWEEP_RE = re.compile(
    r"^(?:(?P<series>[^,]+),)?(?P<param>[A-Za-z_][A-Za-z0-9_]*)="
    r"(?P<value>[0-9]+(?:\.[0-9]+)?)$"
)


@dataclass(frozen=True)
class SweepPoint:
    series: str  # "" when the case has no series prefix
    param: str
    value: float


def sweep_point(case: str) -> SweepPoint | None:
    m = SWEEP_RE.match(case)
    if m is None:
        return None
    return SweepPoint(m["series"] or "", m["param"], float(m["value"]))


def is_startup(row: Row) -> bool:
    """A time from a start request to ready: drawn as bars, never as a sweep."""
    return role_of(row.key) == STARTUP


@dataclass(frozen=True)
class Sweep:
    workload: str
    series: str
    param: str
    # metric name -> rows ordered by the swept value
    curves: dict[str, list[tuple[float, Row]]]

    @property
    def label(self) -> str:
        return f"{self.workload}" + (f" ({self.series})" if self.series else "")

    def metric_rows(self, metric: str) -> list[tuple[float, Row]]:
        return self.curves.get(metric, [])

    def metrics_with_role(self, role: str) -> list[str]:
        return [m for m, pts in self.curves.items() if role_of(pts[0][1].key) == role]

    def throughput_metric(self) -> str | None:
        """The first higher-is-better metric that may be a throughput."""
        return next(
            (
                m
                for m, pts in self.curves.items()
                if pts[0][1].key.higher_is_better and role_of(pts[0][1].key) in THROUGHPUT_AXIS
            ),
            None,
        )

    def latency_metric(self) -> str | None:
        """The first lower-is-better metric in a time unit that may be a latency."""
        return next(
            (
                m
                for m, pts in self.curves.items()
                if not pts[0][1].key.higher_is_better
                and is_time_unit(pts[0][1].key.unit)
                and role_of(pts[0][1].key) in LATENCY_AXIS
            ),
            None,
        )

    def cpu_metric(self) -> str | None:
        return next(iter(self.metrics_with_role(CPU_UTIL)), None)


def sweeps(table: Table) -> list[Sweep]:
    """Swept cases grouped by (workload, series, param); two values at least."""
    groups: dict[tuple[str, str, str], dict[str, list[tuple[float, Row]]]] = {}
    for row in table.rows:
        pt = sweep_point(row.key.case)
        if pt is None or is_startup(row):
            continue
        curves = groups.setdefault((row.key.workload, pt.series, pt.param), {})
        curves.setdefault(row.key.metric, []).append((pt.value, row))
    out = []
    for (workload, series, param), curves in groups.items():
        values = {v for pts in curves.values() for v, _ in pts}
        if len(values) < 2:
            continue  # a single point is no curve; it stays in the normalised figure
        out.append(Sweep(workload, series, param, {m: sorted(pts, key=lambda p: p[0]) for m, pts in curves.items()}))
    return out


def swept_rows(table: Table) -> set[Row]:
    return {row for s in sweeps(table) for pts in s.curves.values() for _, row in pts}
