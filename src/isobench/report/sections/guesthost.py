"""The report's first lines when the host is itself a virtual machine: what
native means there, and the steal time seen during the run."""

from __future__ import annotations

from isobench.report.blocks import WARN, Block, Item, Items
from isobench.report.section import ReportContext, Section
from isobench.results.runfacts import vm_lines


class GuestHostSection(Section):
    slug = "guest-host"
    title = "The host is a virtual machine"
    order = -10
    head = True  # first in every format: it changes what every number below means

    def blocks(self, ctx: ReportContext) -> list[Block]:
        lines = vm_lines(ctx.run)
        return [Items(tuple(Item(line) for line in lines), tone=WARN)] if lines else []
