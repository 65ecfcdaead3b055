"""History's figure: one per workload and host class, small multiples (one
panel per primary metric), each environment's change vs the baseline over
run dates as a line with its interval as a band, and every confirmed step
marked where it happened, labelled with the facts that changed across it."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from isobench.report.style import PALETTE, REFERENCE_COLOR, new_figure
from isobench.results.history import Series, parse_started

# A step's label holds this many changed facts, each cut to this many
# characters: the full list is printed beside the figure.
LABEL_FACTS = 2
LABEL_CHARS = 38


def _clip(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "\u2026"


def step_label(change) -> str:
    lines = change.fact_lines()
    more = len(lines) - LABEL_FACTS
    label = [f"{change.cell.env}: {change.step_pct:+.1f}%"] + [_clip(x) for x in lines[:LABEL_FACTS]]
    if more > 0:
        label.append(f"(+{more} more)")
    return "\n".join(label)


def history_figure(title: str, series: list[Series]) -> Figure | None:
    """SERIES of one workload in one host class; None when no series has a
    dated point."""
    panels: dict[str, list[Series]] = {}
    for s in series:
        if any(parse_started(p.started_at) for p in s.points):
            panels.setdefault(s.cell.metric_label, []).append(s)
    if not panels:
        return None
    envs = list(dict.fromkeys(s.cell.env for s in series))
    colors = {env: PALETTE[i % len(PALETTE)] for i, env in enumerate(envs)}
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig = new_figure(max(7.5, min(5.6 * cols, 17)), 3.8 * rows + 0.8)
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True).ravel()
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    for ax, (label, members) in zip(axes, panels.items()):
        for s in members:
            pts = [(d, p) for p in s.points if (d := parse_started(p.started_at)) is not None]
            xs = [d for d, _ in pts]
            ys = [p.pct for _, p in pts]
            lo = [(p.verdict.low - 1) * 100 for _, p in pts]
            hi = [(p.verdict.high - 1) * 100 for _, p in pts]
            color = colors[s.cell.env]
            ax.plot(xs, ys, marker="o", markersize=3.5, color=color, label=f"{s.cell.env} vs {s.cell.baseline}")
            if all(math.isfinite(v) for v in lo + hi):
                ax.fill_between(xs, lo, hi, color=color, alpha=0.18, linewidth=0)
            for c in s.changes:
                a, b = parse_started(c.before[-1].started_at), parse_started(c.after[0].started_at)
                if a is None or b is None:
                    continue
                x = a + (b - a) / 2
                ax.axvline(x, color=color, linestyle="--", linewidth=1)
                ax.annotate(
                    step_label(c),
                    xy=(x, 0.98),
                    xycoords=("data", "axes fraction"),
                    fontsize=6.5,
                    ha="left",
                    va="top",
                    color=color,
                    xytext=(3, 0),
                    textcoords="offset points",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.85},
                )
        ax.axhline(0, color=REFERENCE_COLOR, linewidth=0.8)
        ax.set_title(label, fontsize=10)
        ax.set_ylabel("change vs baseline (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
        for tick in ax.get_xticklabels():
            tick.set_rotation(30)
            tick.set_horizontalalignment("right")
    fig.suptitle(title, fontsize=10)
    return fig
