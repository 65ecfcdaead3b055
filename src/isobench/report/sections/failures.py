"""Failed samples per workload case and environment, with their distinct reasons."""

from __future__ import annotations

from isobench.report.blocks import BAD, Item, Items
from isobench.report.section import ReportContext, Section


class FailuresSection(Section):
    slug = "failures"
    title = "Failures"
    order = 70

    def blocks(self, ctx: ReportContext):
        items = tuple(
            Item(
                f"{f.count} failed",
                tuple(r + (f" (\u00d7{k})" if k > 1 else "") for r, k in f.reasons),
                strong=f"{f.workload}/{f.case} on {f.env}:",
                tone=BAD,
            )
            for f in ctx.table.failures
        )
        return [Items(items)] if items else []
