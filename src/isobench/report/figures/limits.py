"""Per-operation p90 against load with response-time limits: for a sweep
whose metrics include per-operation 90th percentiles (names ending in
``_p90_ms`` or ``_p90_worst_ms``, in ms), one panel per operation, one line
per environment, and the limits the workload checked (its pass_<L>
metrics, isobench.core.metric.limit_metric: the limits come from its parameters)
as horizontal lines. The worst instance's p90 is drawn when the sweep has it."""

from __future__ import annotations

from matplotlib.figure import Figure

from isobench.core.metric import parse_limit_metric
from isobench.report.style import emulated_note, env_colors, env_lines, new_figure, step_ticks, value_axis
from isobench.report.sweeps import Sweep
from isobench.results.table import Table

WORST, POOLED = "_p90_worst_ms", "_p90_ms"
LIMIT_STYLES = ("--", ":", "-.", (0, (1, 4)))


def limits_of(sweep: Sweep) -> list[float]:
    """The response-time limits (ms) the sweep's workload checked, ascending."""
    return sorted({ms for m in sweep.curves if (ms := parse_limit_metric(m)) is not None})


def p90_metrics(sweep: Sweep) -> dict[str, str]:
    """operation -> the metric to draw for it (the worst instance's when present)."""
    found: dict[str, str] = {}
    for m, pts in sweep.curves.items():
        if pts[0][1].key.unit != "ms" or pts[0][1].key.higher_is_better:
            continue
        if m.endswith(WORST):
            found[m[: -len(WORST)]] = m
        elif m.endswith(POOLED) and m != POOLED.lstrip("_"):
            found.setdefault(m[: -len(POOLED)], m)
    return found


def p90_limits_figure(table: Table, sweep: Sweep) -> Figure | None:
    ops = p90_metrics(sweep)
    if not ops:
        return None
    colors = env_colors(table.columns)
    limits = limits_of(sweep)
    n = len(ops)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig = new_figure(5 * cols, 3.6 * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (op, metric) in zip(axes, sorted(ops.items())):
        pts = sweep.metric_rows(metric)
        env_lines(ax, table, pts, colors)
        value_axis(ax, [v for v, _ in pts])
        step_ticks(ax, [v for v, _ in pts])
        for limit, style in zip(limits, LIMIT_STYLES):
            ax.axhline(limit, color="grey", linestyle=style, linewidth=1, label=f"{limit:g} ms")
        ax.set_yscale("log")
        ax.set_xlabel(sweep.param)
        ax.set_ylabel(f"{metric} (ms)")
        ax.set_title(op, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[n:]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    shown = f", limits {'/'.join(f'{x:g}' for x in limits)} ms" if limits else ""
    fig.suptitle(f"{sweep.label}: per-operation p90 vs {sweep.param}{shown}")
    emulated_note(fig, table.columns)
    return fig
