"""The studies' figures, as matplotlib Figures computed from a run.

Pure functions: each takes the Table I (and, for latency CDFs, the samples'
histograms) and returns a Figure, or None when the run holds nothing to
draw, so a report never shows an empty frame. Figures are built with the
object API on an Agg canvas (no pyplot): no global state, nothing kept
alive between reports, safe without a display.

Which figure a metric lights up is decided by conventions a workload author
follows (docs/reports.md):

* every metric: performance normalised to the baseline, 95% CI error bars;
* case ``<param>=<number>`` or ``<series>,<param>=<number>`` (``clients=4``,
  ``get,threads=8``): a sweep; each metric becomes a curve against param,
  and the sweep also gives throughput vs latency (first higher-is-better
  metric against first lower-is-better metric in a time unit) and, with a
  ``cpu_util*`` metric, throughput vs CPU utilisation;
* metric named ``*per_gb*`` or with a unit ending ``/GB``: CPU cost per GB,
  one bar group per case (the direction: ``transmit``, ``receive``);
* workload named ``startup`` (or ``startup-*``): startup time per environment;
* sample extra ``<name>_hist`` = ``[[latency_us, count], ...]``: a latency
  CDF per (workload, case), histograms of all repetitions pooled.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from isobench.report.table import (
    EMULATED,
    EMULATED_NOTE,
    HIGHER,
    LOWER,
    OK,
    SIGNIFICANT,
    UNTESTED,
    Column,
    Row,
    Table,
)
from isobench.stats import VERDICT_SMALL_N

# -- conventions -------------------------------------------------------------------

# the series may itself be a point of another sweep ("instances=2,noise=4":
# a noise curve per instance count)
SWEEP_RE = re.compile(r"^(?:(?P<series>[^,]+),)?(?P<param>[A-Za-z_][A-Za-z0-9_]*)="
                      r"(?P<value>[0-9]+(?:\.[0-9]+)?)$")
TIME_UNITS = {"ns", "us", "µs", "\u03bcs", "ms", "s"}
HIST_SUFFIX = "_hist"
STARTUP_RE = re.compile(r"^startup(?:[-_].*)?$")

# Figure kinds, in the order a report shows them.
KIND_NORMALISED = "normalised"
KIND_SWEEP = "sweep"
KIND_TPUT_LAT = "throughput-latency"
KIND_CDF = "latency-cdf"
KIND_CPU_COST = "cpu-cost"
KIND_TPUT_CPU = "throughput-cpu"
KIND_STARTUP = "startup"
KIND_SCALEOUT = "scale-out"
KIND_INSTANCES = "per-instance"
KIND_FAIRNESS = "fairness"
KIND_DENSITY = "density"
KIND_ORDER = (KIND_NORMALISED, KIND_SWEEP, KIND_TPUT_LAT, KIND_CDF, KIND_CPU_COST, KIND_TPUT_CPU,
              KIND_STARTUP, KIND_SCALEOUT, KIND_INSTANCES, KIND_FAIRNESS, KIND_DENSITY)
KIND_TITLES = {
    KIND_NORMALISED: "Performance relative to the baseline",
    KIND_SWEEP: "Curves vs the swept parameter (concurrency, noise step, instances)",
    KIND_TPUT_LAT: "Throughput vs latency",
    KIND_CDF: "Latency CDFs",
    KIND_CPU_COST: "CPU cost per GB",
    KIND_TPUT_CPU: "Throughput vs CPU utilisation",
    KIND_STARTUP: "Startup time",
    KIND_SCALEOUT: "Scale-out: aggregate throughput and speedup vs instances",
    KIND_INSTANCES: "Per-instance results vs the swept parameter",
    KIND_FAIRNESS: "Fairness across instances",
    KIND_DENSITY: "Density: footprint and startup vs instances",
}


@dataclass(frozen=True)
class SweepPoint:
    series: str  # "" when the case has no series prefix
    param: str
    value: float


def sweep_point(case: str) -> SweepPoint | None:
    m = SWEEP_RE.match(case)
    if m is None:
        return None
    return SweepPoint(m["series"] or "", m["param"], float(m["value"]))


def is_startup(workload: str) -> bool:
    return bool(STARTUP_RE.match(workload))


def is_cpu_cost(metric: str, unit: str) -> bool:
    return "per_gb" in metric.lower() or unit.lower().endswith("/gb")


def is_cpu_util(metric: str) -> bool:
    return metric.lower().startswith("cpu_util")


def _is_instance_stat(metric: str) -> bool:
    """Fairness and per-instance metrics: neither a throughput nor a latency."""
    return metric in ("jain", "imbalance") or bool(re.match(r"^instance_[0-9]+_", metric))


def is_time_unit(unit: str) -> bool:
    return unit.strip() in TIME_UNITS


@dataclass(frozen=True)
class Sweep:
    workload: str
    series: str
    param: str
    # metric name -> rows ordered by the swept value
    curves: dict[str, list[tuple[float, Row]]]

    @property
    def label(self) -> str:
        return f"{self.workload}" + (f" ({self.series})" if self.series else "")

    def metric_rows(self, metric: str) -> list[tuple[float, Row]]:
        return self.curves.get(metric, [])

    def throughput_metric(self) -> str | None:
        return next((m for m, pts in self.curves.items()
                     if pts[0][1].key.higher_is_better and not is_cpu_util(m) and not _is_instance_stat(m)), None)

    def latency_metric(self) -> str | None:
        return next((m for m, pts in self.curves.items()
                     if not pts[0][1].key.higher_is_better and is_time_unit(pts[0][1].key.unit)
                     and not is_cpu_util(m) and not _is_instance_stat(m)), None)


    def cpu_metric(self) -> str | None:
        return next((m for m in self.curves if is_cpu_util(m)), None)


def sweeps(table: Table) -> list[Sweep]:
    """Swept cases grouped by (workload, series, param); two values at least."""
    groups: dict[tuple[str, str, str], dict[str, list[tuple[float, Row]]]] = {}
    for row in table.rows:
        pt = sweep_point(row.key.case)
        if pt is None or is_startup(row.key.workload):
            continue
        curves = groups.setdefault((row.key.workload, pt.series, pt.param), {})
        curves.setdefault(row.key.metric, []).append((pt.value, row))
    out = []
    for (workload, series, param), curves in groups.items():
        values = {v for pts in curves.values() for v, _ in pts}
        if len(values) < 2:
            continue  # a single point is no curve; it stays in the normalised figure
        out.append(Sweep(workload, series, param,
                         {m: sorted(pts, key=lambda p: p[0]) for m, pts in curves.items()}))
    return out


def _swept_rows(table: Table) -> set[Row]:
    return {row for s in sweeps(table) for pts in s.curves.values() for _, row in pts}


# -- styling -----------------------------------------------------------------------

_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"]
BASELINE_COLOR = "#333333"


def env_colors(columns: Iterable[Column]) -> dict[str, str]:
    """Same colour for an environment in every figure of a report."""
    out, i = {}, 0
    for col in columns:
        if col.is_baseline:
            out[col.env] = BASELINE_COLOR
        else:
            out[col.env] = _PALETTE[i % len(_PALETTE)]
            i += 1
    return out


def env_label(col: Column) -> str:
    label = col.env + (" (baseline)" if col.is_baseline else "")
    return label + (f" {EMULATED} emulated (TCG)" if col.emulated else "")


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # explicit Agg canvas: PNG without any pyplot backend
    return fig


def _emulated_note(fig: Figure, columns: Iterable[Column]) -> None:
    """The TCG warning travels with the figure, so a copy in a slide keeps it."""
    notes = [f"{EMULATED} {c.env}: {EMULATED_NOTE}" for c in columns if c.emulated]
    if notes:
        fig.supxlabel("\n".join(notes), fontsize=8, color="#b00020", ha="left", x=0.01)


def _finite(*xs: float) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def _ci_half(row_cell) -> float:
    s = row_cell.summary
    return (s.ci95_high - s.ci95_low) / 2 if s is not None and _finite(s.ci95_low, s.ci95_high) else 0.0


def _short_label(row: Row) -> str:
    return row.label


# -- performance normalised to the baseline ------------------------------------------

def _performance(cell, higher_is_better: bool) -> tuple[float, float, float] | None:
    """(value, low, high) with >1 better: latency-like ratios are inverted so
    every bar reads the same way; the inverted CI is the inverse interval."""
    c = cell.comparison
    if c is None or not _finite(c.ratio) or c.ratio <= 0:
        return None
    if higher_is_better:
        return c.ratio, c.ratio_ci95_low, c.ratio_ci95_high
    lo = 1 / c.ratio_ci95_high if _finite(c.ratio_ci95_high) and c.ratio_ci95_high > 0 else math.nan
    hi = 1 / c.ratio_ci95_low if _finite(c.ratio_ci95_low) and c.ratio_ci95_low > 0 else math.nan
    return 1 / c.ratio, lo, hi


def normalised_figure(table: Table, workload: str) -> Figure | None:
    """One bar per metric and environment: performance relative to the
    baseline with its 95% CI; ``*`` marks a significant difference."""
    skip = _swept_rows(table)
    rows = [r for r in table.rows if r.key.workload == workload and r not in skip]
    cols = [(i, c) for i, c in enumerate(table.columns) if not c.is_baseline]
    points = []  # (row index, column index within cols, value, lo, hi, marker)
    for ri, row in enumerate(rows):
        for ci, (i, col) in enumerate(cols):
            cell = row.cells[i]
            perf = _performance(cell, row.key.higher_is_better)
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
    fig = _new_figure(9, 1.4 + 0.28 * len(used_rows) * n_bars + 0.25 * len(used_rows))
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
        err_lo = value - lo if _finite(lo) else 0.0
        err_hi = hi - value if _finite(hi) else 0.0
        if _finite(lo) or _finite(hi):
            ax.errorbar(value, y, xerr=[[max(err_lo, 0.0)], [max(err_hi, 0.0)]], fmt="none",
                        ecolor="black", elinewidth=1, capsize=2)
        right = hi if _finite(hi) else value
        xmax = max(xmax, right, value)
        ax.text(right, y, f" {value:.3g}{marker}", va="center", fontsize=8)
    ax.axvline(1.0, color=BASELINE_COLOR, linewidth=1, linestyle="--")
    ax.set_xlim(0, xmax * 1.18)
    ax.set_yticks(range(len(used_rows)), [_short_label(rows[ri]) for ri in used_rows], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel(f"performance relative to {table.baseline} (>1 better; \u2193 metrics inverted: "
                  f"{table.baseline}/value); 95% CI; {SIGNIFICANT} significant (Welch, p < 0.05)",
                  fontsize=8)
    ax.set_title(f"{workload}: performance relative to {table.baseline}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="x", alpha=0.3)
    _emulated_note(fig, [c for _, c in cols])
    return fig


# -- sweeps --------------------------------------------------------------------------

def _value_axis(ax, xs: list[float]) -> None:
    pos = [x for x in xs if x > 0]
    if pos and len(pos) == len(xs) and max(pos) / min(pos) >= 8:
        ax.set_xscale("log")


def sweep_figure(table: Table, sweep: Sweep) -> Figure | None:
    """One panel per metric, one line per environment: mean and 95% CI
    against the swept parameter (clients, threads)."""
    from isobench.report.instances import is_per_instance  # drawn per instance there
    metrics = [m for m, pts in sweep.curves.items() if len({v for v, _ in pts}) >= 2 and not is_per_instance(m)]
    if not metrics:
        return None
    colors = env_colors(table.columns)
    fig = _new_figure(min(5.2 * len(metrics), 15), 4.2)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, metric in zip(axes, metrics):
        pts = sweep.metric_rows(metric)
        key = pts[0][1].key
        env_lines(ax, table, pts, colors)
        _value_axis(ax, [v for v, _ in pts])
        ax.set_xlabel(sweep.param)
        ax.set_ylabel(f"{metric} ({key.unit})" if key.unit else metric)
        ax.set_title(f"{metric} {HIGHER if key.higher_is_better else LOWER}", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{sweep.label}: vs {sweep.param} (mean, 95% CI)")
    _emulated_note(fig, table.columns)
    return fig


def env_lines(ax, table: Table, pts: list[tuple[float, Row]], colors: dict[str, str],
              transform=None) -> None:
    """One line per environment through the rows' means, 95% CI bars;
    transform(xs, ys, errs) may rescale a line (speedup)."""
    for i, col in enumerate(table.columns):
        ok = [(v, row.cells[i]) for v, row in pts if row.cells[i].status == OK]
        if not ok:
            continue
        xs, ys, es = [v for v, _ in ok], [c.summary.mean for _, c in ok], [_ci_half(c) for _, c in ok]
        if transform is not None:
            xs, ys, es = transform(xs, ys, es)
        if xs:
            ax.errorbar(xs, ys, yerr=es, marker="o", markersize=4, capsize=2, color=colors[col.env],
                        linestyle="--" if col.emulated else "-", label=env_label(col))


def _xy_figure(table: Table, sweep: Sweep, x_metric: str, y_metric: str, title: str) -> Figure | None:
    x_pts = dict(sweep.metric_rows(x_metric))
    y_pts = dict(sweep.metric_rows(y_metric))
    common = sorted(set(x_pts) & set(y_pts))
    if len(common) < 2:
        return None
    colors = env_colors(table.columns)
    fig = _new_figure(7, 4.8)
    ax = fig.add_subplot()
    drawn = 0
    for i, col in enumerate(table.columns):
        pts = [(v, x_pts[v].cells[i], y_pts[v].cells[i]) for v in common]
        pts = [(v, cx, cy) for v, cx, cy in pts if cx.status == OK and cy.status == OK]
        if not pts:
            continue
        drawn += 1
        ax.errorbar([cx.summary.mean for _, cx, _ in pts], [cy.summary.mean for _, _, cy in pts],
                    xerr=[_ci_half(cx) for _, cx, _ in pts], yerr=[_ci_half(cy) for _, _, cy in pts],
                    marker="o", markersize=4, capsize=2, color=colors[col.env],
                    linestyle="--" if col.emulated else "-", label=env_label(col))
        if col.is_baseline:  # the swept value beside each point, once
            for v, cx, cy in pts:
                ax.annotate(f"{v:g}", (cx.summary.mean, cy.summary.mean), textcoords="offset points",
                            xytext=(4, 4), fontsize=7, color=BASELINE_COLOR)
    if not drawn:
        return None
    xkey, ykey = x_pts[common[0]].key, y_pts[common[0]].key
    ax.set_xlabel(f"{x_metric} ({xkey.unit})")
    ax.set_ylabel(f"{y_metric} ({ykey.unit})")
    ax.set_title(f"{sweep.label}: {title} (points: {sweep.param})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _emulated_note(fig, table.columns)
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


# -- bars of absolute values: CPU cost, startup ------------------------------------------

def _bar_panels(table: Table, panels: list[tuple[str, list[Row]]], title: str,
                group_label) -> Figure | None:
    """Per panel (metric): groups of bars (rows), one bar per environment,
    mean with 95% CI, ``*`` where the environment differs significantly."""
    panels = [(name, rows) for name, rows in panels
              if any(c.status == OK for r in rows for c in r.cells)]
    if not panels:
        return None
    colors = env_colors(table.columns)
    envs = [(i, c) for i, c in enumerate(table.columns)
            if any(r.cells[i].status == OK for _, rows in panels for r in rows)]
    n_env = len(envs)
    # One group per panel (startup): environments side by side, named on the axis.
    single = all(len(rows) == 1 for _, rows in panels)
    width = 0.8 if single else 0.8 / n_env
    fig = _new_figure(min(max(6.0, 1.2 + 0.5 * n_env * max(len(r) for _, r in panels)) * len(panels), 15),
                      4.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (name, rows) in zip(axes, panels):
        drawn = set()
        for gi, row in enumerate(rows):
            for k, (i, col) in enumerate(envs):
                cell = row.cells[i]
                if cell.status != OK:
                    continue
                x = k if single else gi + (k - (n_env - 1) / 2) * width
                mean = cell.summary.mean
                half = _ci_half(cell)
                ax.bar(x, mean, width=width * 0.9, color=colors[col.env],
                       hatch="//" if col.emulated else None,
                       edgecolor="black" if col.emulated else "white", linewidth=0.5,
                       yerr=half if half else None, capsize=2,
                       label=env_label(col) if col.env not in drawn else None)
                drawn.add(col.env)
                marker = SIGNIFICANT if cell.comparison is not None and cell.comparison.significant else ""
                ax.text(x, mean + half, f"{mean:.3g}{marker}", ha="center", va="bottom", fontsize=7)
        key = rows[0].key
        if single:
            ax.set_xticks(range(n_env), [c.env + (f" {EMULATED}" if c.emulated else "") for _, c in envs],
                          fontsize=9)
        else:
            ax.set_xticks(range(len(rows)), [group_label(r) for r in rows], fontsize=9)
        ax.set_ylabel(f"{key.metric} ({key.unit})" if key.unit else key.metric)
        ax.set_title(f"{name} {HIGHER if key.higher_is_better else LOWER}", fontsize=10)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    _emulated_note(fig, [c for _, c in envs])
    return fig


def cpu_cost_figure(table: Table, workload: str) -> Figure | None:
    """CPU cost per GB moved, per direction (case), per environment."""
    by_metric: dict[str, list[Row]] = {}
    for row in table.rows:
        if row.key.workload == workload and is_cpu_cost(row.key.metric, row.key.unit):
            by_metric.setdefault(row.key.metric, []).append(row)
    return _bar_panels(table, list(by_metric.items()),
                       f"{workload}: CPU cost per GB (mean, 95% CI; {SIGNIFICANT} vs {table.baseline})",
                       lambda r: r.key.case)


def startup_figure(table: Table) -> Figure | None:
    """Start request to ready, per environment: one panel per startup metric."""
    rows = [r for r in table.rows if is_startup(r.key.workload)]
    if not rows:
        return None
    panels: dict[str, list[Row]] = {}
    for r in rows:
        name = r.key.metric if r.key.case in ("", "default") else f"{r.key.case}: {r.key.metric}"
        panels.setdefault(name, []).append(r)
    return _bar_panels(table, list(panels.items()),
                       f"Startup time per environment (mean, 95% CI; {SIGNIFICANT} vs {table.baseline})",
                       lambda r: r.key.workload)


# -- latency CDFs ------------------------------------------------------------------------

Histogram = list[tuple[float, float]]  # (latency, count), sorted by latency


def pool_histograms(hists: Iterable[Iterable]) -> Histogram:
    """Repetitions' histograms pooled: counts summed per latency bin."""
    total: dict[float, float] = {}
    for hist in hists:
        for lat, count in hist:
            total[float(lat)] = total.get(float(lat), 0.0) + float(count)
    return sorted((lat, c) for lat, c in total.items() if c > 0)


def histograms(extras: dict[tuple[str, str, str], list[dict]]) -> dict[tuple[str, str, str], dict[str, Histogram]]:
    """``Store.extras`` → {(workload, case, hist name): {env: pooled histogram}}."""
    out: dict[tuple[str, str, str], dict[str, list]] = {}
    for (env, workload, case), samples in extras.items():
        for extra in samples:
            if not isinstance(extra, dict):
                continue
            for name, hist in extra.items():
                if name.endswith(HIST_SUFFIX) and isinstance(hist, list) and hist:
                    out.setdefault((workload, case, name), {}).setdefault(env, []).append(hist)
    return {k: {env: pool_histograms(h) for env, h in per_env.items()} for k, per_env in out.items()}


def latency_cdf_figure(table: Table, workload: str, case: str, name: str,
                       per_env: dict[str, Histogram]) -> Figure | None:
    """Cumulative fraction of completions against latency, one line per
    environment (histograms of all repetitions pooled)."""
    colors = env_colors(table.columns)
    lines = [(col, per_env[col.env]) for col in table.columns if per_env.get(col.env)]
    if not lines:
        return None
    fig = _new_figure(7.5, 4.6)
    ax = fig.add_subplot()
    lo, hi = math.inf, 0.0
    for col, hist in lines:
        total = sum(c for _, c in hist)
        xs, ys, acc = [], [], 0.0
        for lat, c in hist:
            acc += c
            xs.append(lat)
            ys.append(acc / total)
        lo, hi = min(lo, xs[0]), max(hi, xs[-1])
        ax.step(xs, ys, where="post", color=colors[col.env], linestyle="--" if col.emulated else "-",
                label=env_label(col))
    if lo > 0 and hi / lo >= 10:
        ax.set_xscale("log")
    metric = name[: -len(HIST_SUFFIX)]
    ax.set_xlabel(f"{metric.replace('_', ' ')} (\u00b5s)")
    ax.set_ylabel("fraction of I/Os or requests \u2264 latency")
    ax.set_ylim(0, 1.01)
    ax.set_title(f"{workload} {case}: {metric.replace('_', ' ')} CDF (all repetitions pooled)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    _emulated_note(fig, [c for c, _ in lines])
    return fig


# -- all of them -------------------------------------------------------------------------

@dataclass(frozen=True)
class FigureSpec:
    slug: str  # file name stem and HTML id
    kind: str  # one of KIND_ORDER
    title: str
    figure: Figure


def slugify(*parts: str) -> str:
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "figure"


def build_figures(table: Table, extras: dict[tuple[str, str, str], list[dict]] | None = None,
                  env_facts: dict[str, dict] | None = None) -> list[FigureSpec]:
    """Every figure the run has data for, in report order. ``env_facts``
    (RunData.env_facts) gives the density figure of instance groups."""
    from isobench.report import instances as inst
    specs: list[FigureSpec] = []

    def add(kind: str, slug: str, title: str, fig: Figure | None) -> None:
        if fig is not None:
            specs.append(FigureSpec(slug, kind, title, fig))

    workloads = list(dict.fromkeys(r.key.workload for r in table.rows))
    for w in workloads:
        if not is_startup(w):
            add(KIND_NORMALISED, slugify("normalised", w), f"{w}: performance relative to {table.baseline}",
                normalised_figure(table, w))
    found = sweeps(table)
    for s in found:
        add(KIND_SWEEP, slugify("sweep", s.workload, s.series, s.param), f"{s.label} vs {s.param}",
            sweep_figure(table, s))
    for s in found:
        add(KIND_TPUT_LAT, slugify("throughput-latency", s.workload, s.series, s.param),
            f"{s.label}: throughput vs latency", throughput_latency_figure(table, s))
    for (w, case, name), per_env in histograms(extras or {}).items():
        add(KIND_CDF, slugify("cdf", w, case, name[: -len(HIST_SUFFIX)]), f"{w} {case}: latency CDF",
            latency_cdf_figure(table, w, case, name, per_env))
    for w in workloads:
        add(KIND_CPU_COST, slugify("cpu-cost", w), f"{w}: CPU cost per GB", cpu_cost_figure(table, w))
    for s in found:
        add(KIND_TPUT_CPU, slugify("throughput-cpu", s.workload, s.series, s.param),
            f"{s.label}: throughput vs CPU utilisation", throughput_cpu_figure(table, s))
    add(KIND_STARTUP, "startup", "Startup time per environment", startup_figure(table))
    for s in found:
        add(KIND_SCALEOUT, slugify("scale-out", s.workload, s.series), f"{s.label}: scale-out",
            inst.scaleout_figure(table, s))
        add(KIND_INSTANCES, slugify("per-instance", s.workload, s.series, s.param),
            f"{s.label}: per instance vs {s.param}", inst.per_instance_figure(table, s))
        add(KIND_FAIRNESS, slugify("fairness", s.workload, s.series, s.param),
            f"{s.label}: fairness vs {s.param}", inst.fairness_figure(table, s))
    add(KIND_DENSITY, "density", "Density: footprint and startup vs instances",
        inst.density_figure(table, env_facts or {}))
    # Unique slugs even if two names slugify alike.
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        n = seen.get(spec.slug, 0)
        seen[spec.slug] = n + 1
        out.append(spec if n == 0 else FigureSpec(f"{spec.slug}-{n + 1}", spec.kind, spec.title, spec.figure))
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    return sorted(out, key=lambda s: order[s.kind])  # stable: keeps workload order within a kind


# -- output ------------------------------------------------------------------------------

# Text stays text in SVG (searchable, selectable, small); dates and hash salts
# fixed so the same run gives byte-identical files.
_SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "isobench"}


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context(_SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def to_png(fig: Figure, dpi: int = 150) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def write_figures(specs: list[FigureSpec], directory) -> list[str]:
    """Every figure as SLUG.svg and SLUG.png; returns the paths written."""
    from pathlib import Path
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        svg, png = d / f"{spec.slug}.svg", d / f"{spec.slug}.png"
        svg.write_text(to_svg(spec.figure))
        png.write_bytes(to_png(spec.figure))
        written += [str(svg), str(png)]
    return written
