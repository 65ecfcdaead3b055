"""Where the overhead comes from: per-unit counter costs (results/attribution.py),
the environment's own counters apart from host-wide ones, and listed as a
cost only where the case's primary result changed; the others in a folded
section of their own (`report --all`)."""

from __future__ import annotations

from isobench.report.blocks import DIM, Block, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.attribution import SCOPE_HEADINGS, TITLE, UNCHANGED_TITLE, Group, intro

LIMIT = 8  # rows per list; the export has them all


def group_blocks(groups: list[Group], note: str = "") -> list[Block]:
    out: list[Block] = []
    for g in groups:
        items = []
        for where, rows in g.lists():
            sub = tuple(r.text() for r in rows[:LIMIT])
            if len(rows) > LIMIT:
                sub += (f"... and {len(rows) - LIMIT} more changed counters (see the export)",)
            items.append(Item(SCOPE_HEADINGS[where], sub=sub))
        out.append(Items(tuple(items), heading=g.name + note))
    return out


class AttributionSection(Section):
    slug = "attribution"
    title = TITLE
    order = 50

    def applies(self, ctx: ReportContext) -> bool:
        return bool(ctx.run.counters)

    def blocks(self, ctx: ReportContext):
        rows, groups = ctx.attribution
        costs = [g for g in groups if g.primary_changed]
        out: list[Block] = [Para(intro(ctx.run, rows), DIM)]
        if not costs:
            out.append(Para("No per-unit counter changed significantly in a cell whose primary result changed."))
        return out + group_blocks(costs)


class UnchangedAttributionSection(Section):
    """Counters that changed in cells whose primary result did not: not a cost
    of the environment (a host-wide burst, a neighbour, a cache), shown when asked."""

    slug = "attribution-unchanged"
    title = UNCHANGED_TITLE
    order = 51

    def applies(self, ctx: ReportContext) -> bool:
        return bool(ctx.run.counters)

    def blocks(self, ctx: ReportContext):
        others = [g for g in ctx.attribution[1] if not g.primary_changed]
        if not others:
            return []
        head = Para(
            "These cells' primary result did not change against the baseline, so their changed counters are "
            "not listed as the environment's cost; host-wide ones include neighbours (other processes on this host).",
            DIM,
        )
        return [head] + group_blocks(others, " (primary result not changed)")

    def fold(self, ctx: ReportContext, blocks) -> str:
        n = sum(1 for b in blocks if isinstance(b, Items))
        cells, show = ("cell", "shows") if n == 1 else ("cells", "show")
        return f"{n} {cells} whose primary result did not change still {show} changed counters (not a cost)"
