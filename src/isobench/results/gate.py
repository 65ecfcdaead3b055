"""The blind gate (`--require-resolution PCT`, docs/output.md): the gated
cells of a run's own Table I that could not have seen a change of PCT, and
the one way a blind cell is said: its interval and the rounds, wall time and
`--budget` that would resolve it (results.suggestion). compare,
history and run name their blind cells with it."""

from __future__ import annotations

from collections.abc import Iterator

from isobench.analysis.verdicts import Verdict
from isobench.results.analysis import DESCRIPTIVE
from isobench.results.model import MetricKey, RunData
from isobench.results.suggestion import cell_suggestion, suggestion_text
from isobench.results.table import Cell, Row, Table


def cell_name(key: MetricKey, env: str, baseline: str = "") -> str:
    """ "fio/randread iops on docker-nat": how the gates name a cell."""
    case = "" if key.case in ("", "default") else f"/{key.case}"
    return f"{key.workload}{case} {key.metric} on {env}" + (f" vs {baseline}" if baseline else "")


def why_blind(verdict: Verdict | None, run: RunData | None, budget: bool = True) -> str:
    """ "its interval is ±12.3%; about 72 rounds (4 times in 5, about 10 min
    here), or --budget 14m (...) would resolve it", at RUN's own pace (its
    seconds per round and warm-up rounds; results.suggestion); ``budget``
    False for a cell between two runs (compare), which no budgeted run
    aims at. An untested cell says why it is not tested."""
    if verdict is None:
        return "no verdict: a side has no ok sample"
    if not verdict.effect.tested:
        return f"not tested ({verdict.effect.reason})"
    return (
        f"its interval is \u00b1{verdict.half_width_pct:.1f}%; "
        f"{suggestion_text(cell_suggestion(verdict, run, budget))} would resolve it"
    )


def gated_count(table: Table) -> int:
    """Table I's cells the gate checks: each primary row's (every row's, in
    a run stored before primaries) cells against the baseline that ran."""
    return sum(1 for _, _ in _gated(table))


def table_blind(table: Table, pct: float) -> list[tuple[MetricKey, str, Verdict | None]]:
    """(metric, environment, verdict) of the gated cells neither resolved
    nor narrow enough to have seen a change of PCT percent
    (Verdict.resolves); a cell that failed in every round has no verdict
    and is blind too."""
    return [
        (row.key, cell.env, cell.verdict)
        for row, cell in _gated(table)
        if cell.verdict is None or not cell.verdict.resolves(pct)
    ]


def _gated(table: Table) -> Iterator[tuple[Row, Cell]]:
    for row in table.rows:
        if row.family == DESCRIPTIVE:
            continue
        for cell in row.cells:
            if cell.env != table.baseline and cell.status != "unsupported":
                yield row, cell
