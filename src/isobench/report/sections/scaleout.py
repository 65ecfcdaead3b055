"""Speedup over the fewest instances, when the run sweeps instances."""

from __future__ import annotations

from isobench.report.blocks import Grid
from isobench.report.instances import speedup_lines
from isobench.report.section import HTML, MARKDOWN, ReportContext, Section
from isobench.report.sweeps import sweeps


class ScaleOutSection(Section):
    slug = "scale-out"
    title = "Scale-out"
    order = 60
    formats = frozenset({MARKDOWN, HTML})

    def blocks(self, ctx: ReportContext):
        rows = speedup_lines(ctx.table, sweeps(ctx.table))
        header = ("workload", "environment", "instances", "throughput (mean)", "speedup")
        return [Grid(header, tuple(tuple(r) for r in rows))] if rows else []
