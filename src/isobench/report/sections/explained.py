"""A run that `isobench explain` took apart: its explain runs in the same
store (ReportContext.explained_by), each with its environment and the
answer line of every cell it explained (results/explain.py). Absent when
the run has none."""

from __future__ import annotations

from isobench.report.blocks import DIM, Block, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.explain import answer_lines, explained_of


class ExplainedSection(Section):
    slug = "explained"
    title = "Explained: which setting costs what"
    order = 5  # right after the answer it takes apart

    def applies(self, ctx: ReportContext) -> bool:
        return bool(ctx.explained_by)

    def blocks(self, ctx: ReportContext) -> list[Block]:
        items = []
        for run in ctx.explained_by:
            ex = explained_of(run)
            if ex is None:  # the caller chose them by this fact; a run without it is no explain
                continue
            status = "" if run.status == "complete" else f", {run.status}"
            lead = f"run {run.run_id} ({ex.env} against {ex.baseline}{status}):"
            said = f"`isobench report {run.run_id}` shows every variant"
            items.append(Item(said, sub=answer_lines(run), strong=lead))
        if not items:
            return []
        return [
            Para(
                f"{len(items)} explain run(s) took a changed cell of this run apart, one setting at a time "
                "(docs/explain.md); each line: the whole gap, then each setting's part, then what no setting "
                "explains. Measured on the host and at the time of the explain, not of this run.",
                DIM,
            ),
            Items(tuple(items)),
        ]
