"""One study on many hosts: each host's Table I (results/table.py, called as
is), side by side, and a cross-host summary per cell. For an environment
other than the baseline the per-host number is its overhead vs that host's
own native (Effect.overhead_pct: positive = worse); for the baseline itself
it is the host's mean relative to the fleet's median, so a native-only
fleet still shows which host is off. Pure: runs in, data out."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from isobench.results.model import RunData
from isobench.results.table import OK, Table, build_table


@dataclass(frozen=True)
class HostValue:
    host: str
    text: str  # the host's Table I cell text
    pct: float  # overhead vs the host's native, or (baseline) vs the fleet median; nan when unknown


@dataclass(frozen=True)
class CrossCell:
    workload: str
    label: str  # row label (case: metric (unit))
    env: str
    is_baseline: bool
    values: tuple[HostValue, ...]  # host order
    spread_pp: float  # max - min of pct across hosts, percentage points; nan with < 2 hosts
    median_pct: float
    outlier: str  # host furthest from the median; "" with < 3 hosts measured


@dataclass(frozen=True)
class FleetReport:
    fleet_id: str
    hosts: tuple[str, ...]
    tables: tuple[Table, ...]  # per host
    cells: tuple[CrossCell, ...]
    envs: tuple[str, ...]


def _pct(cell) -> float:
    v = cell.verdict
    return v.effect.overhead_pct if v is not None else math.nan


def cross_cell(
    workload: str, label: str, env: str, is_baseline: bool, per_host: list[tuple[str, str, float]]
) -> CrossCell:
    """PER_HOST: (host, text, pct or — baseline — mean). Spread, median and
    the outlier over the hosts with a number."""
    if is_baseline:
        means = [m for _, _, m in per_host if math.isfinite(m)]
        med = statistics.median(means) if means else math.nan
        per_host = [(h, t, (m / med - 1) * 100 if math.isfinite(m) and med else math.nan) for h, t, m in per_host]
    values = tuple(HostValue(h, t, p) for h, t, p in per_host)
    known = [v for v in values if math.isfinite(v.pct)]
    if not known:
        return CrossCell(workload, label, env, is_baseline, values, math.nan, math.nan, "")
    pcts = [v.pct for v in known]
    median = statistics.median(pcts)
    spread = max(pcts) - min(pcts) if len(pcts) > 1 else math.nan
    outlier = max(known, key=lambda v: abs(v.pct - median)).host if len(known) >= 3 and spread > 0 else ""
    return CrossCell(workload, label, env, is_baseline, values, spread, median, outlier)


def build_fleet(fleet_id: str, runs: list[tuple[str, RunData]]) -> FleetReport:
    """RUNS: (inventory host name, its run), one per host."""
    tables = [build_table(run) for _, run in runs]
    hosts = tuple(h for h, _ in runs)
    envs: list[str] = []
    rows: dict[tuple, dict] = {}
    for host, table in zip(hosts, tables):
        for col in table.columns:
            if col.env not in envs:
                envs.append(col.env)
        for row in table.rows:
            k = row.key
            for col, cell in zip(table.columns, row.cells):
                slot = rows.setdefault(
                    (k.workload, k.case, k.metric, col.env), {"label": row.label, "base": col.is_baseline, "hosts": {}}
                )
                number = (
                    (cell.summary.mean if cell.summary is not None and cell.status == OK else math.nan)
                    if col.is_baseline
                    else _pct(cell)
                )
                slot["hosts"][host] = (cell.text, number)
    cells = []
    for (w, _c, _m, env), slot in rows.items():
        per_host = [(h, *slot["hosts"].get(h, ("\u2014", math.nan))) for h in hosts]
        cells.append(cross_cell(w, slot["label"], env, slot["base"], per_host))
    return FleetReport(fleet_id, hosts, tuple(tables), tuple(cells), tuple(envs))
