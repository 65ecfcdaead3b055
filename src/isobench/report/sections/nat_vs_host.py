"""Docker NAT vs host networking compared directly (report/netpairs.py)."""

from __future__ import annotations

from isobench.report.blocks import DIM, Item, Items, Para
from isobench.report.netpairs import TITLE, section_lines
from isobench.report.section import ReportContext, Section


class NatVsHostSection(Section):
    slug = "nat-vs-host"
    title = TITLE
    order = 40

    def blocks(self, ctx: ReportContext):
        lines = section_lines(ctx.run)
        if not lines:
            return []
        return [Para(lines[1], DIM), Items(tuple(Item(line) for line in lines[2:]))]
