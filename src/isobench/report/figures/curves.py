"""Curves along a sweep: every metric against the swept parameter, and
throughput against latency or CPU utilisation, one line per environment."""

from __future__ import annotations

from matplotlib.figure import Figure

from isobench.core.metric import PER_INSTANCE
from isobench.report.style import (
    BASELINE_COLOR,
    ci_half,
    emulated_note,
    env_colors,
    env_label,
    env_lines,
    line_style,
    new_figure,
    step_ticks,
    value_axis,
)
from isobench.report.sweeps import Sweep
from isobench.results.table import HIGHER, LOWER, OK, Table


def sweep_figure(table: Table, sweep: Sweep) -> Figure | None:
    """One panel per metric, one line per environment: mean and 95% CI
    against the swept parameter (clients, threads)."""
    per_instance = set(sweep.metrics_with_role(PER_INSTANCE))  # drawn per instance elsewhere
    metrics = [m for m, pts in sweep.curves.items() if len({v for v, _ in pts}) >= 2 and m not in per_instance]
    if not metrics:
        return None
    colors = env_colors(table.columns)
    # a grid, not one row: a workload with dozens of metrics (webstore's per
    # operation latencies) squeezed into one row collapsed every panel
    cols = min(len(metrics), 4)
    rows = -(-len(metrics) // cols)
    fig = new_figure(min(5.2 * cols, 20), 4.2 * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    for ax, metric in zip(axes, metrics):
        pts = sweep.metric_rows(metric)
        key = pts[0][1].key
        env_lines(ax, table, pts, colors)
        value_axis(ax, [v for v, _ in pts])
        step_ticks(ax, [v for v, _ in pts])
        ax.set_xlabel(sweep.param)
        ax.set_ylabel(f"{metric} ({key.unit})" if key.unit else metric)
        ax.set_title(f"{metric} {HIGHER if key.higher_is_better else LOWER}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: vs {sweep.param} (mean, 95% CI)")
    emulated_note(fig, table.columns)
    return fig


def _xy_figure(table: Table, sweep: Sweep, x_metric: str, y_metric: str, title: str) -> Figure | None:
    x_pts = dict(sweep.metric_rows(x_metric))
    y_pts = dict(sweep.metric_rows(y_metric))
    common = sorted(set(x_pts) & set(y_pts))
    if len(common) < 2:
        return None
    colors = env_colors(table.columns)
    fig = new_figure(7, 4.8)
    ax = fig.add_subplot()
    drawn, xs = 0, []
    for i, col in enumerate(table.columns):
        pts = [(v, x_pts[v].cells[i], y_pts[v].cells[i]) for v in common]
        pts = [(v, cx, cy) for v, cx, cy in pts if cx.status == OK and cy.status == OK]
        if not pts:
            continue
        drawn += 1
        xs += [cx.mean for _, cx, _ in pts]
        ax.errorbar(
            [cx.mean for _, cx, _ in pts],
            [cy.mean for _, _, cy in pts],
            xerr=[ci_half(cx) for _, cx, _ in pts],
            yerr=[ci_half(cy) for _, _, cy in pts],
            marker="o",
            markersize=4,
            capsize=2,
            color=colors[col.env],
            linestyle=line_style(col),
            label=env_label(col),
        )
        if col.is_baseline:  # the swept value beside each point, once
            for v, cx, cy in pts:
                ax.annotate(
                    f"{v:g}",
                    (cx.mean, cy.mean),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color=BASELINE_COLOR,
                )
    if not drawn:
        return None
    # latencies spanning 8x or more (ms natively, tens of ms emulated) on a
    # log axis, where a wide interval at small n cannot reach below zero
    value_axis(ax, xs)
    xkey, ykey = x_pts[common[0]].key, y_pts[common[0]].key
    ax.set_xlabel(f"{x_metric} ({xkey.unit})")
    ax.set_ylabel(f"{y_metric} ({ykey.unit})")
    ax.set_title(f"{sweep.label}: {title} (points: {sweep.param})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    emulated_note(fig, table.columns)
    return fig


def throughput_latency_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Throughput against latency along the sweep, one curve per environment."""
    t, lat = sweep.throughput_metric(), sweep.latency_metric()
    if t is None or lat is None:
        return None
    return _xy_figure(table, sweep, lat, t, "throughput vs latency")


def throughput_cpu_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Throughput against CPU utilisation along the sweep (IBM's MySQL figure)."""
    t, cpu = sweep.throughput_metric(), sweep.cpu_metric()
    if t is None or cpu is None:
        return None
    return _xy_figure(table, sweep, cpu, t, "throughput vs CPU utilisation")
