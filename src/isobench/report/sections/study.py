"""The study file as it was run."""

from __future__ import annotations

from isobench.report.blocks import Code, Para
from isobench.report.section import HTML, MARKDOWN, ReportContext, Section


class StudySection(Section):
    slug = "study"
    title = "Study file"
    order = 90
    formats = frozenset({MARKDOWN, HTML})

    def blocks(self, ctx: ReportContext):
        run = ctx.run
        return [Para(f"{run.study_name} · hash {run.study_hash}"), Code(run.study_text or "", "toml")]
