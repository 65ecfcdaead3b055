"""Where the overhead comes from: per-unit counter costs (results/attribution.py)."""

from __future__ import annotations

from isobench.report.blocks import DIM, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.attribution import TITLE, section_lines


class AttributionSection(Section):
    slug = "attribution"
    title = TITLE
    order = 50

    def blocks(self, ctx: ReportContext):
        lines = section_lines(ctx.run)
        if not lines:
            return []
        items: list[Item] = []
        for line in lines[2:]:  # "  "-indented lines belong to the line above
            if line.startswith("  ") and items:
                items[-1] = Item(items[-1].text, items[-1].sub + (line.strip(),))
            else:
                items.append(Item(line))
        return [Para(lines[1], DIM), Items(tuple(items))]
