"""The placebo: an environment with the least isolation its kind allows,
known by its recorded facts (``placebo: true``, from its spec when it
started), never by its name. Against a baseline on the host itself (native)
nothing is left to cost anything, so its change is the harness's own bias:
Table I says so under the table, and `isobench calibrate --seam` reads it
as "A/A across the seam"."""

from __future__ import annotations

from collections import Counter

from isobench.analysis.verdicts import Verdict
from isobench.results.analysis import interval_text
from isobench.results.model import MetricKey, RunData
from isobench.results.primary import primary_keys
from isobench.results.table import Table

NOTE = "{env} (least isolation the engine allows) reads the harness's own bias: {cells}"


def is_placebo(run: RunData, env: str) -> bool:
    facts = run.env_facts.get(env)
    return isinstance(facts, dict) and facts.get("placebo") is True


def bias_cells(run: RunData, table: Table) -> dict[str, list[tuple[MetricKey, Verdict]]]:
    """Each placebo column but the baseline: its primary cells that were
    compared with the baseline, in table order, with their verdicts."""
    primaries = set(primary_keys(run))
    out: dict[str, list[tuple[MetricKey, Verdict]]] = {}
    for env in (c.env for c in table.columns if not c.is_baseline and is_placebo(run, c.env)):
        out[env] = [
            (row.key, cell.verdict)
            for row in table.rows
            if row.key in primaries
            for cell in row.cells
            if cell.env == env and cell.verdict is not None
        ]
    return out


def cell_name(key: MetricKey, alone: bool) -> str:
    """The workload alone when it is its only primary in the run, else with its case and metric."""
    if alone:
        return key.workload
    case = "" if key.case in ("", "default") else f" {key.case}"
    return f"{key.workload}{case} {key.metric}"


def bias_lines(run: RunData, table: Table) -> list[str]:
    """One line per placebo column: each primary cell's change and interval."""
    lines = []
    for env, cells in bias_cells(run, table).items():
        per_workload = Counter(key.workload for key, _ in cells)
        said = [f"{cell_name(key, per_workload[key.workload] == 1)} {interval_text(v)}" for key, v in cells]
        if said:
            lines.append(NOTE.format(env=env, cells="; ".join(said)))
    return lines
