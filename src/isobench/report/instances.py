"""Figures of many-instance studies: per-instance results and fairness
against a swept parameter (a noise step, the instance count), speedup over
one instance, and density (memory per instance and startup time as
instances are added). Pure functions of the Table I and the environments'
facts, like plots.py; conventions (docs/reports.md):

* metrics ``instance_<i>_<name>``: one instance's value; drawn per
  environment, one line per instance, against the sweep;
* metrics ``jain`` and ``imbalance``: fairness, drawn against the sweep;
* a sweep over ``instances``: the first higher-is-better metric divided by
  its value at the fewest instances is the speedup, beside the ideal line;
* environment facts ``density`` (envs/group.py): footprint and startup vs N.
"""

from __future__ import annotations

import re

from matplotlib.figure import Figure

from isobench.report.plots import (
    Sweep,
    _ci_half,
    _emulated_note,
    _new_figure,
    _value_axis,
    env_colors,
    env_label,
    env_lines,
)
from isobench.report.table import HIGHER, LOWER, OK, Table

INSTANCE_RE = re.compile(r"^instance_(?P<index>[0-9]+)_(?P<name>.+)$")
FAIRNESS_METRICS = ("jain", "imbalance")
SCALE_PARAM = "instances"
MiB = 1024 * 1024


def is_per_instance(metric: str) -> bool:
    return bool(INSTANCE_RE.match(metric))


def per_instance_figure(table: Table, sweep: Sweep) -> Figure | None:
    """One panel per environment, one line per instance: each instance's
    mean (95% CI) against the swept parameter."""
    by_name: dict[str, list[tuple[int, str]]] = {}
    for metric in sweep.curves:
        m = INSTANCE_RE.match(metric)
        if m:
            by_name.setdefault(m["name"], []).append((int(m["index"]), metric))
    if not by_name:
        return None
    name, metrics = next(iter(by_name.items()))  # the first per-instance quantity
    metrics.sort()
    cols = [(i, c) for i, c in enumerate(table.columns)
            if any(row.cells[i].status == OK for _, m in metrics for _, row in sweep.metric_rows(m))]
    if not cols:
        return None
    fig = _new_figure(min(4.0 * len(cols), 16), 3.8)
    axes = fig.subplots(1, len(cols), squeeze=False, sharey=True)[0]
    for ax, (i, col) in zip(axes, cols):
        for index, metric in metrics:
            pts = [(v, row.cells[i]) for v, row in sweep.metric_rows(metric) if row.cells[i].status == OK]
            if pts:
                ax.errorbar([v for v, _ in pts], [c.summary.mean for _, c in pts],
                            yerr=[_ci_half(c) for _, c in pts], marker="o", markersize=3, capsize=2,
                            label=f"instance {index}", linestyle="--" if col.emulated else "-")
        key = sweep.metric_rows(metrics[0][1])[0][1].key
        ax.set_title(env_label(col), fontsize=9)
        _step_ticks(ax, [v for v, _ in sweep.metric_rows(metrics[0][1])])
        ax.set_xlabel(sweep.param)
        ax.grid(alpha=0.3)
        _value_axis(ax, [v for v, _ in sweep.metric_rows(metrics[0][1])])
    axes[0].set_ylabel(f"{name} ({key.unit})" if key.unit else name)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{sweep.label}: {name} per instance vs {sweep.param} "
                 f"({HIGHER if key.higher_is_better else LOWER}; mean, 95% CI)")
    _emulated_note(fig, [c for _, c in cols])
    return fig


def _step_ticks(ax, xs: list[float]) -> None:
    """A few swept values: a tick at each (a noise step of 2 has no 0.5)."""
    values = sorted(set(xs))
    if len(values) <= 10 and ax.get_xscale() == "linear":
        ax.set_xticks(values, [f"{v:g}" for v in values])


def fairness_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Jain's index and max/min across instances against the sweep."""
    metrics = [m for m in FAIRNESS_METRICS if len({v for v, _ in sweep.metric_rows(m)}) >= 2]
    if not metrics:
        return None
    fig = _new_figure(5.2 * len(metrics), 4.0)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        pts = sweep.metric_rows(metric)
        env_lines(ax, table, pts, env_colors(table.columns))
        if metric == "jain":
            ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle=":")
            ax.set_ylabel("Jain's index (1 = fair)")
        else:
            ax.axhline(1.0, color="#999999", linewidth=0.8, linestyle=":")
            ax.set_ylabel("slowest / fastest instance")
        _value_axis(ax, [v for v, _ in pts])
        _step_ticks(ax, [v for v, _ in pts])
        ax.set_xlabel(sweep.param)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: fairness across instances vs {sweep.param} (mean, 95% CI)")
    _emulated_note(fig, table.columns)
    return fig


def speedup(xs: list[float], ys: list[float], es: list[float]) -> tuple[list[float], list[float], list[float]]:
    """Each point over the one at the fewest instances (its CI scaled alike). Pure."""
    base = ys[xs.index(min(xs))]
    if base <= 0:
        return [], [], []
    return xs, [y / base for y in ys], [e / base for e in es]


def scaleout_figure(table: Table, sweep: Sweep) -> Figure | None:
    """Aggregate throughput and speedup over one instance against N."""
    if sweep.param != SCALE_PARAM:
        return None
    metric = sweep.throughput_metric()
    if metric is None:
        return None
    pts = sweep.metric_rows(metric)
    key = pts[0][1].key
    fig = _new_figure(10.4, 4.0)
    ax_t, ax_s = fig.subplots(1, 2)
    env_lines(ax_t, table, pts, env_colors(table.columns))
    ax_t.set_ylabel(f"{metric} ({key.unit})")
    ax_t.set_title(f"aggregate {metric} {HIGHER}", fontsize=10)
    env_lines(ax_s, table, pts, env_colors(table.columns), transform=speedup)
    ns = sorted({v for v, _ in pts})
    ax_s.plot(ns, [n / ns[0] for n in ns], color="#999999", linestyle=":", label="ideal (linear)")
    ax_s.set_ylabel(f"speedup over {ns[0]:g} instance{'s' if ns[0] != 1 else ''}")
    ax_s.set_title("speedup", fontsize=10)
    for ax in (ax_t, ax_s):
        ax.set_xlabel("instances")
        ax.set_xticks(ns)
        ax.grid(alpha=0.3)
    ax_s.legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: scale-out (mean, 95% CI)")
    _emulated_note(fig, table.columns)
    return fig


def density_figure(table: Table, env_facts: dict[str, dict]) -> Figure | None:
    """From the groups' start: memory per instance (host MemAvailable
    drop / N, and each VM's QEMU PSS) and each added instance's startup."""
    colors = env_colors(table.columns)
    series = [(col, (env_facts.get(col.env) or {}).get("density") or []) for col in table.columns]
    series = [(col, pts) for col, pts in series if len(pts) >= 2]
    if not series:
        return None
    fig = _new_figure(10.4, 4.0)
    ax_m, ax_s = fig.subplots(1, 2)
    for col, pts in series:
        ns = [p["n"] for p in pts]
        style = "--" if col.emulated else "-"
        ax_m.plot(ns, [p["mem_per_instance_bytes"] / MiB for p in pts], marker="o", color=colors[col.env],
                  linestyle=style, label=f"{env_label(col)}: MemAvailable drop / N")
        pss = [(p["n"], p["vmm_pss_bytes"] / MiB) for p in pts if p.get("vmm_pss_bytes")]
        if pss:
            ax_m.plot([n for n, _ in pss], [v for _, v in pss], marker="x", color=colors[col.env],
                      linestyle=":", label=f"{col.env}: QEMU PSS of instance N")
        ax_s.plot(ns, [p["startup_s"] for p in pts], marker="o", color=colors[col.env], linestyle=style,
                  label=env_label(col))
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
    _emulated_note(fig, [c for c, _ in series])
    return fig


# -- the same as text (Markdown and terminal reports) -------------------------------------

def density_lines(env_facts: dict[str, dict], envs: list[str]) -> list[list[str]]:
    """Rows: environment, N, startup of instance N, MiB per instance, QEMU PSS."""
    rows = []
    for env in envs:
        for p in (env_facts.get(env) or {}).get("density") or []:
            pss = p.get("vmm_pss_bytes")
            rows.append([env, str(p["n"]), f"{p['startup_s']:.2f}", f"{p['mem_per_instance_bytes'] / MiB:.0f}",
                         f"{pss / MiB:.0f}" if pss else "-"])
    return rows


def speedup_lines(table: Table, sweeps: list[Sweep]) -> list[list[str]]:
    """Rows: workload, environment, N, mean throughput, speedup over the fewest instances."""
    rows = []
    for sweep in sweeps:
        metric = sweep.throughput_metric() if sweep.param == SCALE_PARAM else None
        if metric is None:
            continue
        pts = sweep.metric_rows(metric)
        for i, col in enumerate(table.columns):
            ok = [(v, row.cells[i].summary.mean) for v, row in pts if row.cells[i].status == OK]
            if not ok:
                continue
            base = ok[0][1]
            rows += [[sweep.label, col.env, f"{v:g}", f"{mean:.4g}", f"{mean / base:.2f}" if base > 0 else "-"]
                     for v, mean in ok]
    return rows
