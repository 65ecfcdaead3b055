"""The report's sections, one module each; importing this package registers
them all (report/section.py). Adding a section is adding its module."""

from __future__ import annotations

from isobench.report.blocks import Block
from isobench.report.section import SECTIONS, TERMINAL, ReportContext, Section, discover

discover(__path__, f"{__name__}.")


def sections_for(ctx: ReportContext, fmt: str) -> list[tuple[Section, list[Block]]]:
    """The sections a format shows for this run, in order, with their blocks."""
    ctx.fmt = fmt
    chosen = sorted((s for s in SECTIONS.values() if fmt in s.formats), key=lambda s: s.order)
    heads, chosen = [s for s in chosen if s.head], [s for s in chosen if not s.head]
    if fmt == TERMINAL:
        chosen = heads + [s for s in chosen if not s.lead] + [s for s in chosen if s.lead]
    else:
        chosen = heads + [s for s in chosen if s.lead] + [s for s in chosen if not s.lead]
    out = []
    for section in chosen:
        if section.applies(ctx):
            blocks = section.blocks(ctx)
            if blocks:
                out.append((section, blocks))
    return out
