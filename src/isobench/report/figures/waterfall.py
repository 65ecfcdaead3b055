"""An explained cell as a waterfall (`isobench explain`, docs/explain.md):
each setting's part of the gap as a floating bar from where the parts before
it end, then the unexplained part, then the whole from the baseline; the
axis in log ratio, labelled as percent changes, so the bars add up as the
parts do. Whiskers: each part's own interval, about where it starts."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from isobench.report.style import BASELINE_COLOR, REFERENCE_COLOR, new_figure
from isobench.results.explain import CellAnswer, steps

WORSE, BETTER = "#d62728", "#2ca02c"
UNEXPLAINED = "#7f7f7f"


def waterfall_figure(a: CellAnswer) -> Figure | None:
    """One cell's waterfall; None when nothing was tested."""
    bars = steps(a)
    if not a.shares.whole.effect.tested:
        return None
    fig = new_figure(7.0, 0.5 * len(bars) + 1.6)
    ax = fig.subplots()
    better = a.key.higher_is_better
    for i, s in enumerate(bars):
        up = s.end >= s.start
        color = (
            BASELINE_COLOR
            if s.total
            else UNEXPLAINED
            if s.label == "unexplained"
            else (BETTER if up == better else WORSE)
        )
        ax.barh(i, s.end - s.start, left=s.start, color=color, height=0.6)
        ax.errorbar(s.end, i, xerr=[[s.end - s.low], [s.high - s.end]], fmt="none", ecolor="#333333", capsize=3)
    ax.axvline(0.0, color=REFERENCE_COLOR, lw=1)
    ax.set_yticks(range(len(bars)), [s.label for s in bars], fontsize=8)
    ax.invert_yaxis()
    ticks = ax.get_xticks()
    ax.set_xticks(ticks, [f"{(math.exp(t) - 1) * 100:+.0f}%" for t in ticks], fontsize=8)
    ax.set_xlabel(f"change against {a.explained.baseline} (log scale: the bars add up)", fontsize=8)
    ax.set_title(a.name, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig
