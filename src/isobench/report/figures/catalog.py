"""Every figure a run has data for, in report order, each with its slug
(file name stem and HTML id), kind and title."""

from __future__ import annotations

import re
from dataclasses import dataclass

from matplotlib.figure import Figure

from isobench.core.metric import STARTUP
from isobench.report.figures.attribution import cpu_per_unit_figure
from isobench.report.figures.bars import cpu_cost_figure, startup_figure
from isobench.report.figures.cdf import HIST_SUFFIX, histograms, latency_cdf_figure
from isobench.report.figures.curves import sweep_figure, throughput_cpu_figure, throughput_latency_figure
from isobench.report.figures.instances import density_figure, fairness_figure, per_instance_figure, scaleout_figure
from isobench.report.figures.limits import p90_limits_figure
from isobench.report.figures.normalised import normalised_figure
from isobench.report.sweeps import is_startup, sweeps
from isobench.results.attribution import counters_of, cpu_per_unit
from isobench.results.table import Table

# Figure kinds, in the order a report shows them.
KIND_NORMALISED = "normalised"
KIND_SWEEP = "sweep"
KIND_TPUT_LAT = "throughput-latency"
KIND_P90_LIMITS = "p90-limits"
KIND_CDF = "latency-cdf"
KIND_CPU_COST = "cpu-cost"
KIND_TPUT_CPU = "throughput-cpu"
KIND_STARTUP = STARTUP  # the role names the figure
KIND_SCALEOUT = "scale-out"
KIND_INSTANCES = "per-instance"
KIND_FAIRNESS = "fairness"
KIND_DENSITY = "density"
KIND_ATTRIBUTION = "attribution"
KIND_ORDER = (
    KIND_NORMALISED,
    KIND_SWEEP,
    KIND_TPUT_LAT,
    KIND_P90_LIMITS,
    KIND_CDF,
    KIND_CPU_COST,
    KIND_TPUT_CPU,
    KIND_STARTUP,
    KIND_SCALEOUT,
    KIND_INSTANCES,
    KIND_FAIRNESS,
    KIND_DENSITY,
    KIND_ATTRIBUTION,
)
KIND_TITLES = {
    KIND_NORMALISED: "Performance relative to the baseline",
    KIND_SWEEP: "Curves vs the swept parameter (concurrency, noise step, instances)",
    KIND_TPUT_LAT: "Throughput vs latency",
    KIND_P90_LIMITS: "Per-operation p90 vs load, with the response-time limits",
    KIND_CDF: "Latency CDFs",
    KIND_CPU_COST: "CPU cost per GB",
    KIND_TPUT_CPU: "Throughput vs CPU utilisation",
    KIND_STARTUP: "Startup time",
    KIND_SCALEOUT: "Scale-out: aggregate throughput and speedup vs instances",
    KIND_INSTANCES: "Per-instance results vs the swept parameter",
    KIND_FAIRNESS: "Fairness across instances",
    KIND_DENSITY: "Density: footprint and startup vs instances",
    KIND_ATTRIBUTION: "Where the overhead comes from: CPU per unit of work",
}


@dataclass(frozen=True)
class FigureSpec:
    slug: str  # file name stem and HTML id
    kind: str  # one of KIND_ORDER
    title: str
    figure: Figure


def slugify(*parts: str) -> str:
    text = "-".join(p for p in parts if p)
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "figure"


def build_figures(
    table: Table, extras: dict[tuple[str, str, str], list[dict]] | None = None, env_facts: dict[str, dict] | None = None
) -> list[FigureSpec]:
    """Every figure the run has data for, in report order. ``extras``
    (Store.extras) gives latency CDFs, ``env_facts`` (RunData.env_facts)
    the density figure of instance groups."""
    specs: list[FigureSpec] = []

    def add(kind: str, slug: str, title: str, fig: Figure | None) -> None:
        if fig is not None:
            specs.append(FigureSpec(slug, kind, title, fig))

    workloads = list(dict.fromkeys(r.key.workload for r in table.rows))
    for w in workloads:
        if not all(is_startup(r) for r in table.rows if r.key.workload == w):
            add(
                KIND_NORMALISED,
                slugify("normalised", w),
                f"{w}: performance relative to {table.baseline}",
                normalised_figure(table, w),
            )
    found = sweeps(table)
    for s in found:
        add(
            KIND_SWEEP,
            slugify("sweep", s.workload, s.series, s.param),
            f"{s.label} vs {s.param}",
            sweep_figure(table, s),
        )
    for s in found:
        add(
            KIND_TPUT_LAT,
            slugify("throughput-latency", s.workload, s.series, s.param),
            f"{s.label}: throughput vs latency",
            throughput_latency_figure(table, s),
        )
        add(
            KIND_P90_LIMITS,
            slugify("p90-limits", s.workload, s.series, s.param),
            f"{s.label}: per-operation p90 vs {s.param}",
            p90_limits_figure(table, s),
        )
    for (w, case, name), per_env in histograms(extras or {}).items():
        add(
            KIND_CDF,
            slugify("cdf", w, case, name[: -len(HIST_SUFFIX)]),
            f"{w} {case}: latency CDF",
            latency_cdf_figure(table, w, case, name, per_env),
        )
    for w in workloads:
        add(KIND_CPU_COST, slugify("cpu-cost", w), f"{w}: CPU cost per GB", cpu_cost_figure(table, w))
    for s in found:
        add(
            KIND_TPUT_CPU,
            slugify("throughput-cpu", s.workload, s.series, s.param),
            f"{s.label}: throughput vs CPU utilisation",
            throughput_cpu_figure(table, s),
        )
    add(KIND_STARTUP, KIND_STARTUP, "Startup time per environment", startup_figure(table))
    for s in found:
        add(
            KIND_SCALEOUT,
            slugify("scale-out", s.workload, s.series),
            f"{s.label}: scale-out",
            scaleout_figure(table, s),
        )
        add(
            KIND_INSTANCES,
            slugify("per-instance", s.workload, s.series, s.param),
            f"{s.label}: per instance vs {s.param}",
            per_instance_figure(table, s),
        )
        add(
            KIND_FAIRNESS,
            slugify("fairness", s.workload, s.series, s.param),
            f"{s.label}: fairness vs {s.param}",
            fairness_figure(table, s),
        )
    add(KIND_DENSITY, "density", "Density: footprint and startup vs instances", density_figure(table, env_facts or {}))
    add(
        KIND_ATTRIBUTION,
        "attribution-cpu-per-unit",
        "CPU per unit of work by category",
        cpu_per_unit_figure(cpu_per_unit(counters_of(extras or {})), [c.env for c in table.columns]),
    )
    # Unique slugs even if two names slugify alike.
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        n = seen.get(spec.slug, 0)
        seen[spec.slug] = n + 1
        out.append(spec if n == 0 else FigureSpec(f"{spec.slug}-{n + 1}", spec.kind, spec.title, spec.figure))
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    return sorted(out, key=lambda s: order[s.kind])  # stable: keeps workload order within a kind
