"""Table I: every metric of every workload case, per environment, against the baseline."""

from __future__ import annotations

from isobench.report.blocks import DIM, NOTE, Item, Items, Para, Results
from isobench.report.section import ReportContext, Section


class ResultsSection(Section):
    slug = "results"
    title = "Table I"
    order = 10

    def blocks(self, ctx: ReportContext):
        table = ctx.table
        return [Results(table), *(Para(n, NOTE) for n in table.footnotes),
                Items(tuple(Item(line) for line in table.legend), tone=DIM)]
