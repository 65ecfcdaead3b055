"""Performance normalised to the baseline: one bar per metric and
environment, >1 better for every metric, whiskers the table's corrected
interval, on a log axis so that a ratio of 2 and of 1/2 look alike. The axis
is bounded (AXIS_LIMIT) so one wild interval cannot squash the others: a
whisker that runs off the axis ends in an arrow."""

from __future__ import annotations

import math

from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter

from isobench.report.style import BASELINE_COLOR, emulated_note, env_colors, env_label, finite, new_figure
from isobench.report.sweeps import swept_rows
from isobench.results.table import MARKS, UNTESTED, Table

# Ratios shown between 1/AXIS_LIMIT and AXIS_LIMIT at most; bars and whiskers
# beyond are clipped at the edge with an arrow.
AXIS_LIMIT = 8.0


def performance(cell, higher_is_better: bool) -> tuple[float, float, float] | None:
    """(value, low, high) with >1 better: latency-like ratios are inverted so
    every bar reads the same way; the inverted interval is the inverse one."""
    v = cell.verdict
    if v is None or not finite(v.effect.ratio) or v.effect.ratio <= 0:
        return None
    r, lo, hi = v.effect.ratio, v.low, v.high
    if higher_is_better:
        return r, lo, hi

    def inv(x: float) -> float:
        return 1 / x if finite(x) and x > 0 else math.nan

    return 1 / r, inv(hi), inv(lo)


def axis_limits(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """A log axis around 1 that holds every bar and, where they are not
    wild, every whisker; never wider than 1/AXIS_LIMIT..AXIS_LIMIT."""
    reach = [x for value, lo, hi in points for x in (value, lo, hi) if finite(x) and x > 0]
    low = max(min(reach + [1.0]) / 1.15, 1 / AXIS_LIMIT)
    high = min(max(reach + [1.0]) * 1.15, AXIS_LIMIT)
    return low, high


def normalised_figure(table: Table, workload: str) -> Figure | None:
    """One bar per metric and environment: performance relative to the
    baseline with the table's interval and its verdict marker."""
    skip = swept_rows(table)
    rows = [r for r in table.rows if r.key.workload == workload and r not in skip]
    return ratio_figure(table, rows, f"{workload}: performance relative to {table.baseline}")


def overview_figure(table: Table, keys) -> Figure | None:
    """The front page's figure: every primary cell of every workload on one
    log axis, each row labelled with its workload."""
    wanted = set(keys)
    skip = swept_rows(table)
    rows = [r for r in table.rows if r.key in wanted and r not in skip]
    return ratio_figure(
        table,
        rows,
        f"Primary metrics: performance relative to {table.baseline}",
        labels=[f"{r.key.workload} {r.label}" for r in rows],
    )


def ratio_figure(table: Table, rows, title: str, labels: list[str] | None = None) -> Figure | None:
    labels = labels or [r.label for r in rows]
    cols = [(i, c) for i, c in enumerate(table.columns) if not c.is_baseline]
    points = []  # (row index, column index within cols, value, lo, hi, marker)
    for ri, row in enumerate(rows):
        for ci, (i, _col) in enumerate(cols):
            cell = row.cells[i]
            perf = performance(cell, row.key.higher_is_better)
            if perf is None:
                continue
            v = cell.verdict
            marker = MARKS[v.verdict] if v.effect.tested else UNTESTED
            points.append((ri, ci, *perf, marker))
    if not points:
        return None
    used_rows = sorted({p[0] for p in points})
    used_cols = sorted({p[1] for p in points})
    row_pos = {ri: k for k, ri in enumerate(used_rows)}
    col_pos = {ci: k for k, ci in enumerate(used_cols)}
    n_bars = len(used_cols)
    group_h = 0.8
    bar_h = group_h / n_bars
    colors = env_colors(table.columns)
    fig = new_figure(9, 1.4 + 0.28 * len(used_rows) * n_bars + 0.25 * len(used_rows))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    left, right_edge = axis_limits([p[2:5] for p in points])
    drawn_labels = set()
    for ri, ci, value, lo, hi, marker in points:
        col = cols[ci][1]
        y = row_pos[ri] + (col_pos[ci] - (n_bars - 1) / 2) * bar_h
        label = env_label(col) if col.env not in drawn_labels else None
        drawn_labels.add(col.env)
        shown = min(max(value, left), right_edge)
        # bars grow from 1 (no change) towards the ratio, left for worse
        ax.barh(
            y,
            shown - 1,
            left=1,
            height=bar_h * 0.9,
            color=colors[col.env],
            label=label,
            hatch="//" if col.emulated else None,
            edgecolor="white" if not col.emulated else "black",
            linewidth=0.5,
        )
        lo_c = min(max(lo, left), right_edge) if finite(lo) else shown
        hi_c = min(max(hi, left), right_edge) if finite(hi) else shown
        if finite(lo) or finite(hi):
            ax.errorbar(
                shown,
                y,
                xerr=[[max(shown - lo_c, 0.0)], [max(hi_c - shown, 0.0)]],
                fmt="none",
                ecolor="black",
                elinewidth=1,
                capsize=2,
            )
        for beyond, edge, arrow in ((lo < left, left, "<"), (hi > right_edge, right_edge, ">")):
            if beyond:  # nan compares False: no interval, no arrow
                ax.plot(edge, y, marker=arrow, color="black", markersize=5, clip_on=False)
        ax.text(hi_c if hi_c < right_edge else shown, y, f" {value:.3g}{marker}", va="center", fontsize=8)
    ax.axvline(1.0, color=BASELINE_COLOR, linewidth=1, linestyle="--")
    ax.set_xlim(left, right_edge)
    # ratios as plain numbers at powers of two; matplotlib's default labels
    # the minor ticks of a sub-decade log axis in overlapping 10^x notation
    ticks = [2.0**k for k in range(-6, 7) if left <= 2.0**k <= right_edge]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter([f"1/{1 / t:g}" if t < 1 else f"{t:g}" for t in ticks]))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_yticks(range(len(used_rows)), [labels[ri] for ri in used_rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel(
        f"performance relative to {table.baseline}, log scale (>1 better; \u2193 metrics inverted: "
        f"{table.baseline}/value);\nthe table's interval, \u25b6 where it runs off the axis; "
        f"{MARKS['changed']} changed, {MARKS['equivalent']} equivalent, {MARKS['inconclusive']} "
        f"inconclusive",
        fontsize=8,
    )
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    emulated_note(fig, [c for _, c in cols])
    return fig
