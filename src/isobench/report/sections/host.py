"""The run and the host it ran on, and host settings that may bias it."""

from __future__ import annotations

from isobench.report.blocks import WARN, Block, Facts, Item, Items
from isobench.report.section import ReportContext, Section
from isobench.results.runfacts import doctor_warnings, host_facts, run_facts


class HostSection(Section):
    slug = "host"
    title = "Run and host"
    order = 80

    def blocks(self, ctx: ReportContext) -> list[Block]:
        out: list[Block] = [Facts(tuple(run_facts(ctx.run)) + tuple(host_facts(ctx.run)))]
        if warnings := doctor_warnings(ctx.run):
            out.append(
                Items(
                    tuple(Item(w) for w in warnings),
                    tone=WARN,
                    heading="Host settings that may bias these results (isobench doctor):",
                )
            )
        return out
