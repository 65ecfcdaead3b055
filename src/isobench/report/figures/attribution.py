"""CPU per unit of work by category, stacked, one bar per environment and a
panel per workload case (docs/attribution.md: how to read it)."""

from __future__ import annotations

from matplotlib.figure import Figure

from isobench.report.style import new_figure
from isobench.results.attribution import CATEGORIES

# Fixed colours per category (not per environment): the stack reads the same in every panel.
CATEGORY_COLORS = {
    "user": "#4C72B0",
    "system": "#DD8452",
    "softirq": "#C44E52",
    "irq": "#8172B3",
    "guest": "#55A868",
    "VMM threads": "#937860",
}
MAX_PANELS = 8


def cpu_per_unit_figure(
    cells: dict[tuple[str, str], tuple[str, dict[str, dict[str, float]]]],
    envs: list[str],
    title: str = "CPU per unit of work",
) -> Figure | None:
    """``cells``: results.attribution.cpu_per_unit output. None when empty."""
    items = [(wc, unit, per_env) for wc, (unit, per_env) in cells.items() if per_env][:MAX_PANELS]
    if not items:
        return None
    fig = new_figure(max(7.0, min(4.2 * len(items), 16)), 4.6)
    axes = fig.subplots(1, len(items), squeeze=False)[0]
    for ax, ((w, c), unit, per_env) in zip(axes, items):
        names = [e for e in envs if e in per_env] + [e for e in per_env if e not in envs]
        bottoms = [0.0] * len(names)
        for cat in CATEGORIES:
            heights = [per_env[e].get(cat, 0.0) for e in names]
            if not any(heights):
                continue
            ax.bar(range(len(names)), heights, bottom=bottoms, color=CATEGORY_COLORS[cat], label=cat, width=0.7)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        for i, total in enumerate(bottoms):
            ax.text(
                i, total, f"{total:,.0f}" if total >= 1000 else f"{total:.3g}", ha="center", va="bottom", fontsize=7
            )
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel(f"CPU µs per {unit}")
        ax.set_title(f"{w} {c}" if c != "default" else w, fontsize=10)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            ax.legend(handles, labels, fontsize=7, loc="upper left")
    fig.suptitle(title + " (host-wide, client host's share removed)", fontsize=10)
    return fig
