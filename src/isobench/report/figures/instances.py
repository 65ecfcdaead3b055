"""Figures of many-instance studies: per-instance results and fairness
against a swept parameter (a noise step, the instance count), speedup over
one instance, and density (memory per instance and startup time as
instances are added). Which metrics: report/instances.py."""

from __future__ import annotations

from matplotlib.figure import Figure

from isobench.report.instances import (
    SCALE_PARAM,
    MiB,
    fairness_metrics,
    per_instance_series,
    scaleout_metric,
    speedup,
)
from isobench.report.style import (
    REFERENCE_COLOR,
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

# axis labels of the fairness metrics isobench.analysis.stats computes; others show name and unit
FAIRNESS_LABELS = {"jain": "Jain's index (1 = fair)", "imbalance": "slowest / fastest instance"}


def per_instance_figure(table: Table, sweep: Sweep) -> Figure | None:
    """One panel per environment, one line per instance: each instance's
    mean (95% CI) against the swept parameter."""
    series = per_instance_series(sweep)
    if series is None:
        return None
    name, metrics = series
    cols = [
        (i, c)
        for i, c in enumerate(table.columns)
        if any(row.cells[i].status == OK for _, m in metrics for _, row in sweep.metric_rows(m))
    ]
    if not cols:
        return None
    fig = new_figure(min(4.0 * len(cols), 16), 3.8)
    axes = fig.subplots(1, len(cols), squeeze=False, sharey=True)[0]
    for ax, (i, col) in zip(axes, cols):
        for label, metric in metrics:
            pts = [(v, row.cells[i]) for v, row in sweep.metric_rows(metric) if row.cells[i].status == OK]
            if pts:
                ax.errorbar(
                    [v for v, _ in pts],
                    [c.mean for _, c in pts],
                    yerr=[ci_half(c) for _, c in pts],
                    marker="o",
                    markersize=3,
                    capsize=2,
                    label=label,
                    linestyle=line_style(col),
                )
        key = sweep.metric_rows(metrics[0][1])[0][1].key
        ax.set_title(env_label(col), fontsize=9)
        step_ticks(ax, [v for v, _ in sweep.metric_rows(metrics[0][1])])
        ax.set_xlabel(sweep.param)
        ax.grid(alpha=0.3)
        value_axis(ax, [v for v, _ in sweep.metric_rows(metrics[0][1])])
    axes[0].set_ylabel(f"{name} ({key.unit})" if key.unit else name)
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"{sweep.label}: {name} per instance vs {sweep.param} "
        f"({HIGHER if key.higher_is_better else LOWER}; mean, 95% CI)"
    )
    emulated_note(fig, [c for _, c in cols])
    return fig


def fairness_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Fairness across instances (Jain's index, max/min) against the sweep."""
    metrics = fairness_metrics(sweep)
    if not metrics:
        return None
    fig = new_figure(5.2 * len(metrics), 4.0)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        pts = sweep.metric_rows(metric)
        key = pts[0][1].key
        env_lines(ax, table, pts, env_colors(table.columns))
        ax.axhline(1.0, color=REFERENCE_COLOR, linewidth=0.8, linestyle=":")  # fair
        ax.set_ylabel(FAIRNESS_LABELS.get(metric, f"{metric} ({key.unit})" if key.unit else metric))
        value_axis(ax, [v for v, _ in pts])
        step_ticks(ax, [v for v, _ in pts])
        ax.set_xlabel(sweep.param)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: fairness across instances vs {sweep.param} (mean, 95% CI)")
    emulated_note(fig, table.columns)
    return fig


def scaleout_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Aggregate throughput and speedup over one instance against N."""
    metric = scaleout_metric(sweep)
    if metric is None:
        return None
    pts = sweep.metric_rows(metric)
    key = pts[0][1].key
    fig = new_figure(10.4, 4.0)
    ax_t, ax_s = fig.subplots(1, 2)
    env_lines(ax_t, table, pts, env_colors(table.columns))
    ax_t.set_ylabel(f"{metric} ({key.unit})")
    ax_t.set_title(f"aggregate {metric} {HIGHER}", fontsize=10)
    env_lines(ax_s, table, pts, env_colors(table.columns), transform=speedup)
    ns = sorted({v for v, _ in pts})
    ax_s.plot(ns, [n / ns[0] for n in ns], color=REFERENCE_COLOR, linestyle=":", label="ideal (linear)")
    ax_s.set_ylabel(f"speedup over {ns[0]:g} instance{'s' if ns[0] != 1 else ''}")
    ax_s.set_title("speedup", fontsize=10)
    for ax in (ax_t, ax_s):
        ax.set_xlabel(SCALE_PARAM)
        ax.set_xticks(ns)
        ax.grid(alpha=0.3)
    ax_s.legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: scale-out (mean, 95% CI)")
    emulated_note(fig, table.columns)
    return fig


def density_figure(table: Table, env_facts: dict[str, dict]) -> Figure | None:
    """From the groups' start: memory per instance (host MemAvailable
    drop / N, and each VM's QEMU PSS) and each added instance's startup."""
    colors = env_colors(table.columns)
    series = [(col, (env_facts.get(col.env) or {}).get("density") or []) for col in table.columns]
    series = [(col, pts) for col, pts in series if len(pts) >= 2]
    if not series:
        return None
    fig = new_figure(10.4, 4.0)
    ax_m, ax_s = fig.subplots(1, 2)
    for col, pts in series:
        ns = [p["n"] for p in pts]
        style = line_style(col)
        ax_m.plot(
            ns,
            [p["mem_per_instance_bytes"] / MiB for p in pts],
            marker="o",
            color=colors[col.env],
            linestyle=style,
            label=f"{env_label(col)}: MemAvailable drop / N",
        )
        pss = [(p["n"], p["vmm_pss_bytes"] / MiB) for p in pts if p.get("vmm_pss_bytes")]
        if pss:
            ax_m.plot(
                [n for n, _ in pss],
                [v for _, v in pss],
                marker="x",
                color=colors[col.env],
                linestyle=":",
                label=f"{col.env}: VMM PSS of instance N",
            )
        ax_s.plot(
            ns, [p["startup_s"] for p in pts], marker="o", color=colors[col.env], linestyle=style, label=env_label(col)
        )
    ax_m.set_ylabel("MiB per instance")
    ax_m.set_title("memory footprint vs instances", fontsize=10)
    ax_s.set_ylabel("s to start instance N")
    ax_s.set_title("startup time vs instances", fontsize=10)
    all_n = sorted({p["n"] for _, pts in series for p in pts})
    for ax in (ax_m, ax_s):
        ax.set_xticks(all_n)
        ax.set_xlabel("instances started (N)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Density: one reading per run, taken as the environment's instances start")
    emulated_note(fig, [c for c, _ in series])
    return fig
