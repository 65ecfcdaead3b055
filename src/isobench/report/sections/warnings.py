"""What the samples of a cell say about themselves: outliers, drift, validity notes."""

from __future__ import annotations

from isobench.report.blocks import WARN, Item, Items
from isobench.report.section import ReportContext, Section


class WarningsSection(Section):
    slug = "warnings"
    title = "Warnings"
    order = 20

    def blocks(self, ctx: ReportContext):
        lines = ctx.table.warnings
        return [Items(tuple(Item(line) for line in lines), tone=WARN)] if lines else []
