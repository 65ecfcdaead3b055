"""Performance normalised to the baseline: one bar per metric and
environment, >1 better for every metric, 95% CI whiskers of the ratio."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from isobench.report.style import BASELINE_COLOR, emulated_note, env_colors, env_label, finite, new_figure
from isobench.report.sweeps import swept_rows
from isobench.report.table import SIGNIFICANT, UNTESTED, Table
from isobench.stats import VERDICT_SMALL_N


def performance(cell, higher_is_better: bool) -> tuple[float, float, float] | None:
    """(value, low, high) with >1 better: latency-like ratios are inverted so
    every bar reads the same way; the inverted CI is the inverse interval."""
    c = cell.comparison
    if c is None or not finite(c.ratio) or c.ratio <= 0:
        return None
    if higher_is_better:
        return c.ratio, c.ratio_ci95_low, c.ratio_ci95_high
    lo = 1 / c.ratio_ci95_high if finite(c.ratio_ci95_high) and c.ratio_ci95_high > 0 else math.nan
    hi = 1 / c.ratio_ci95_low if finite(c.ratio_ci95_low) and c.ratio_ci95_low > 0 else math.nan
    return 1 / c.ratio, lo, hi


def normalised_figure(table: Table, workload: str) -> Figure | None:
    """One bar per metric and environment: performance relative to the
    baseline with its 95% CI; ``*`` marks a significant difference."""
    skip = swept_rows(table)
    rows = [r for r in table.rows if r.key.workload == workload and r not in skip]
    cols = [(i, c) for i, c in enumerate(table.columns) if not c.is_baseline]
    points = []  # (row index, column index within cols, value, lo, hi, marker)
    for ri, row in enumerate(rows):
        for ci, (i, col) in enumerate(cols):
            cell = row.cells[i]
            perf = performance(cell, row.key.higher_is_better)
            if perf is None:
                continue
            marker = ""
            if cell.comparison.significant:
                marker = SIGNIFICANT
            elif cell.comparison.verdict == VERDICT_SMALL_N:
                marker = UNTESTED
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
    xmax = 1.0
    drawn_labels = set()
    for ri, ci, value, lo, hi, marker in points:
        col = cols[ci][1]
        y = row_pos[ri] + (col_pos[ci] - (n_bars - 1) / 2) * bar_h
        label = env_label(col) if col.env not in drawn_labels else None
        drawn_labels.add(col.env)
        ax.barh(y, value, height=bar_h * 0.9, color=colors[col.env], label=label,
                hatch="//" if col.emulated else None, edgecolor="white" if not col.emulated else "black",
                linewidth=0.5)
        err_lo = value - lo if finite(lo) else 0.0
        err_hi = hi - value if finite(hi) else 0.0
        if finite(lo) or finite(hi):
            ax.errorbar(value, y, xerr=[[max(err_lo, 0.0)], [max(err_hi, 0.0)]], fmt="none",
                        ecolor="black", elinewidth=1, capsize=2)
        right = hi if finite(hi) else value
        xmax = max(xmax, right, value)
        ax.text(right, y, f" {value:.3g}{marker}", va="center", fontsize=8)
    ax.axvline(1.0, color=BASELINE_COLOR, linewidth=1, linestyle="--")
    ax.set_xlim(0, xmax * 1.18)
    ax.set_yticks(range(len(used_rows)), [rows[ri].label for ri in used_rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel(f"performance relative to {table.baseline} (>1 better; \u2193 metrics inverted: "
                  f"{table.baseline}/value); 95% CI; {SIGNIFICANT} significant (Welch, p < 0.05)",
                  fontsize=8)
    ax.set_title(f"{workload}: performance relative to {table.baseline}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    emulated_note(fig, [c for _, c in cols])
    return fig
