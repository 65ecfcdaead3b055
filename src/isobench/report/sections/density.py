"""Density: memory and startup as an environment's instances start one by one."""

from __future__ import annotations

from isobench.report.blocks import Grid, Para
from isobench.report.instances import density_lines
from isobench.report.section import HTML, MARKDOWN, ReportContext, Section


class DensitySection(Section):
    slug = "density"
    title = "Density"
    order = 61
    formats = frozenset({MARKDOWN, HTML})

    def blocks(self, ctx: ReportContext):
        rows = density_lines(ctx.run.env_facts, ctx.run.environments)
        if not rows:
            return []
        header = ("environment", "N", "startup of instance N (s)", "MiB per instance", "VMM PSS (MiB)")
        return [
            Para("As each environment's instances started (page cache dropped before each reading):"),
            Grid(header, tuple(tuple(r) for r in rows)),
        ]
