"""The figures' styling kit: one colour per environment in every figure of a
report, labels with the baseline and emulation marks, the TCG note under
each figure, and the axes helpers every figure shares.

Figures are built with the object API on an Agg canvas (no pyplot): no
global state, nothing kept alive between reports, safe without a display.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from isobench.results.table import EMULATED, EMULATED_NOTE, OK, Cell, Column, Row, Table

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
BASELINE_COLOR = "#333333"
REFERENCE_COLOR = "#999999"  # ideal and reference lines


def env_colors(columns: Iterable[Column]) -> dict[str, str]:
    """Same colour for an environment in every figure of a report."""
    out, i = {}, 0
    for col in columns:
        if col.is_baseline:
            out[col.env] = BASELINE_COLOR
        else:
            out[col.env] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def env_label(col: Column) -> str:
    label = col.env + (" (baseline)" if col.is_baseline else "")
    return label + (f" {EMULATED} emulated" if col.emulated else "")


def line_style(col: Column) -> str:
    """Emulated environments are dashed."""
    return "--" if col.emulated else "-"


def new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # explicit Agg canvas: PNG without any pyplot backend
    return fig


def emulated_note(fig: Figure, columns: Iterable[Column]) -> None:
    """The TCG warning travels with the figure, so a copy in a slide keeps it."""
    notes = [f"{EMULATED} {c.env}: {EMULATED_NOTE}" for c in columns if c.emulated]
    if notes:
        fig.supxlabel("\n".join(notes), fontsize=8, color="#b00020", ha="left", x=0.01)


def finite(*xs: float) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def ci_half(cell: Cell) -> float:
    """Half the width of the cell's 95% CI (0 when it has none)."""
    s = cell.summary
    return (s.ci95_high - s.ci95_low) / 2 if s is not None and finite(s.ci95_low, s.ci95_high) else 0.0


def value_axis(ax, xs: list[float]) -> None:
    """A log axis when the swept values span 8x or more."""
    pos = [x for x in xs if x > 0]
    if pos and len(pos) == len(xs) and max(pos) / min(pos) >= 8:
        ax.set_xscale("log")


def step_ticks(ax, xs: list[float]) -> None:
    """A few swept values: a tick at each (a noise step of 2 has no 0.5)."""
    values = sorted(set(xs))
    if len(values) <= 10 and ax.get_xscale() == "linear":
        ax.set_xticks(values, [f"{v:g}" for v in values])


def env_lines(ax, table: Table, pts: list[tuple[float, Row]], colors: dict[str, str], transform=None) -> None:
    """One line per environment through the rows' means, 95% CI bars;
    transform(xs, ys, errs) may rescale a line (speedup)."""
    for i, col in enumerate(table.columns):
        ok = [(v, row.cells[i]) for v, row in pts if row.cells[i].status == OK]
        if not ok:
            continue
        xs, ys, es = [v for v, _ in ok], [c.mean for _, c in ok], [ci_half(c) for _, c in ok]
        if transform is not None:
            xs, ys, es = transform(xs, ys, es)
        if xs:
            ax.errorbar(
                xs,
                ys,
                yerr=es,
                marker="o",
                markersize=4,
                capsize=2,
                color=colors[col.env],
                linestyle=line_style(col),
                label=env_label(col),
            )
