"""Every inconclusive cell (Verdict.open: tested, neither changed nor
equivalent; a cell its data cannot test is the answer's "not tested", not
here): what the data allow, and the rounds that would settle it."""

from __future__ import annotations

from isobench.report.blocks import Item, Items
from isobench.report.section import ReportContext, Section
from isobench.results.model import RunData
from isobench.results.primary import primary_keys
from isobench.results.table import Table
from isobench.results.why import why_inconclusive


def inconclusive_lines(table: Table) -> list[str]:
    """One line per inconclusive cell: what the data allow, and the rounds
    per side that would settle it at the observed noise."""
    return [
        f"{row.key.workload} {row.label} on {cell.env}: {cell.verdict.text}"
        for row in table.rows
        for cell in row.cells
        if cell.verdict is not None and cell.verdict.open
    ]


def inconclusive_whys(run: RunData, table: Table) -> list[str]:
    """Why each of ``inconclusive_lines``' cells is inconclusive (results/why.py), same order."""
    return [
        why_inconclusive(run, row.key, cell.env, cell.verdict)
        for row in table.rows
        for cell in row.cells
        if cell.verdict is not None and cell.verdict.open
    ]


class InconclusiveSection(Section):
    slug = "inconclusive"
    title = "Inconclusive"
    order = 30

    def blocks(self, ctx: ReportContext):
        lines = inconclusive_lines(ctx.table)
        whys = inconclusive_whys(ctx.run, ctx.table)
        return [Items(tuple(Item(line, (why,) if why else ()) for line, why in zip(lines, whys)))] if lines else []

    def fold(self, ctx: ReportContext, blocks) -> str:
        n = sum(len(b.items) for b in blocks if isinstance(b, Items))
        primary = set(primary_keys(ctx.run))
        p = sum(1 for r in ctx.table.rows if r.key in primary for c in r.cells if c.verdict and c.verdict.open)
        which = f" ({p} primary, as the answer counts them; {n - p} descriptive)" if p != n else ""
        return (
            f"{n} inconclusive cell(s){which}, each with the change this run could call and the rounds that "
            "would settle it"
        )
