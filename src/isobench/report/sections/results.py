"""Table I: every metric of every workload case, per environment, against the baseline."""

from __future__ import annotations

from isobench.report.blocks import DIM, NOTE, Item, Items, Para, Results
from isobench.report.section import TERMINAL, ReportContext, Section
from isobench.results.placebo import bias_lines
from isobench.results.table import CENTRE_KEY


def short_key(baseline: str) -> str:
    """What a short cell holds (the first legend line where cells are short)."""
    return (
        f"Cell: centre, change vs {baseline} [interval, %], verdict; the sd and, for times, the median "
        f"(min..max) are in `report --format md` and `html`. {CENTRE_KEY.format(baseline=baseline)}"
    )


class ResultsSection(Section):
    slug = "results"
    title = "Table I"
    order = 10

    def blocks(self, ctx: ReportContext):
        table = ctx.table
        legend = list(table.legend)
        if legend and ctx.fmt == TERMINAL:  # the terminal draws short cells (report.terminal.short_text)
            legend[0] = short_key(table.baseline)
        return [
            Results(table),
            # a placebo in the run: its change is the harness's own bias, said beside the table
            *(Para(line, NOTE) for line in bias_lines(ctx.run, table)),
            *(Para(n, NOTE) for n in table.footnotes),
            Items(tuple(Item(line) for line in legend), tone=DIM),
        ]
