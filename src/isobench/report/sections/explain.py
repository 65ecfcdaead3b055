"""An explain run's answer (`isobench explain`, results/explain.py): each
explained cell's gap, the part of each setting, what is left, and whether
the parts add up; a waterfall per cell (a figure in HTML, text elsewhere)."""

from __future__ import annotations

import math

from isobench.report.blocks import BAD, DIM, Block, Code, Figure, Grid, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.analysis import interval_text
from isobench.results.explain import CellAnswer, Step, answer_line, answers, explained_of, notes, steps
from isobench.results.numbers import fmt_pct

BAR_WIDTH = 40  # characters of the text waterfall's widest span


class ExplainSection(Section):
    slug = "explain"
    title = "Which setting costs what"
    # what the run is for: first on a page, before the answer (whose cells are
    # each variant against the baseline); last in a terminal
    lead = True
    order = -5

    def applies(self, ctx: ReportContext) -> bool:
        return explained_of(ctx.run) is not None

    def heading(self, ctx: ReportContext) -> str:
        ex = explained_of(ctx.run)
        assert ex is not None  # applies() said so
        return f"{self.title}: {ex.env} against {ex.baseline} (explains run {ex.explains})"

    def blocks(self, ctx: ReportContext) -> list[Block]:
        out: list[Block] = []
        for a in answers(ctx.run):
            out.append(Para(answer_line(a)))
            out.append(grid(a))
            out.append(Items(tuple(Item(n, tone=BAD if n.startswith("The parts do not") else "") for n in notes(a))))
            figure = _figure(ctx, a)
            out.append(figure if figure is not None else Code(waterfall_text(steps(a))))
        if not out:
            out.append(Para("No explained cell has a primary metric measured in this run.", DIM))
        return out


def grid(a: CellAnswer) -> Grid:
    """Each setting, its part of the gap and what moving it back gets."""
    rows = [(s.label, s.variant, interval_text(v), fmt_pct((1 / v.effect.ratio - 1) * 100)) for s, v in a.parts()]
    sh = a.shares
    rows.append(("unexplained", "", interval_text(sh.unexplained), ""))
    if sh.interaction is not None:
        rows.append(("of it: interaction", "", interval_text(sh.interaction), ""))
    rows.append(("whole", a.explained.env, interval_text(sh.whole), ""))
    header = ("setting (baseline's side\u2192here)", "measured as", "part of the gap", "moving it back")
    return Grid(header, tuple(rows))


def _figure(ctx: ReportContext, a: CellAnswer) -> Figure | None:
    if not ctx.wants_figures:
        return None
    from isobench.report.figures.waterfall import waterfall_figure  # matplotlib: only where drawn

    fig = waterfall_figure(a)
    if fig is None:
        return None
    return Figure(
        f"explain-{a.key.workload}-{a.key.case}-{a.key.metric}",
        f"{a.name}: the gap, setting by setting",
        "bars: each setting's part from where the parts before it end, then the unexplained part, then the "
        "whole; log axis, so the bars add up; whiskers: each part's interval",
        fig,
    )


def waterfall_text(bars: list[Step]) -> str:
    """The waterfall in characters: each bar where it lies between the
    smallest and largest running sum (the baseline is the '|')."""
    ends = [0.0] + [x for s in bars for x in (s.start, s.end)]
    lo, hi = min(ends), max(ends)
    scale = BAR_WIDTH / (hi - lo) if hi > lo else 0.0
    width = max(len(s.label) for s in bars)

    def at(x: float) -> int:
        return round((x - lo) * scale)

    lines = []
    for s in bars:
        a, b = sorted((at(s.start), at(s.end)))
        row = [" "] * (BAR_WIDTH + 1)
        row[at(0.0)] = "|"
        for i in range(a, b):
            row[i] = "\u2588"
        if a == b:  # no width at this scale: a hairline where it stands
            row[a] = "\u258f"
        pct = fmt_pct((math.exp(s.end - s.start) - 1) * 100)
        lines.append(f"{s.label.ljust(width)}  {pct:>7}  {''.join(row)}")
    return "\n".join(lines)
