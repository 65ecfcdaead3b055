"""The studies' figures, as matplotlib Figures computed from a run's Table I:
pure functions that return a Figure, or None when the run holds nothing to
draw. Which metric lights up which figure: docs/reports.md. This face hands
on the names a report needs; each figure lives in its own module."""

from isobench.report.figures.bars import cpu_cost_figure, startup_figure
from isobench.report.figures.catalog import (
    KIND_CDF,
    KIND_CPU_COST,
    KIND_DENSITY,
    KIND_FAIRNESS,
    KIND_INSTANCES,
    KIND_NORMALISED,
    KIND_ORDER,
    KIND_SCALEOUT,
    KIND_STARTUP,
    KIND_SWEEP,
    KIND_TITLES,
    KIND_TPUT_CPU,
    KIND_TPUT_LAT,
    FigureSpec,
    build_figures,
    slugify,
)
from isobench.report.figures.cdf import histograms, latency_cdf_figure, pool_histograms
from isobench.report.figures.curves import sweep_figure, throughput_cpu_figure, throughput_latency_figure
from isobench.report.figures.instances import density_figure, fairness_figure, per_instance_figure, scaleout_figure
from isobench.report.figures.normalised import normalised_figure
from isobench.report.figures.output import to_png, to_svg, write_figures
from isobench.report.sweeps import Sweep, SweepPoint, sweep_point, sweeps

__all__ = [
    "cpu_cost_figure",
    "startup_figure",
    "FigureSpec",
    "KIND_CDF",
    "KIND_CPU_COST",
    "KIND_DENSITY",
    "KIND_FAIRNESS",
    "KIND_INSTANCES",
    "KIND_NORMALISED",
    "KIND_ORDER",
    "KIND_SCALEOUT",
    "KIND_STARTUP",
    "KIND_SWEEP",
    "KIND_TITLES",
    "KIND_TPUT_CPU",
    "KIND_TPUT_LAT",
    "build_figures",
    "slugify",
    "histograms",
    "latency_cdf_figure",
    "pool_histograms",
    "sweep_figure",
    "throughput_cpu_figure",
    "throughput_latency_figure",
    "density_figure",
    "fairness_figure",
    "per_instance_figure",
    "scaleout_figure",
    "normalised_figure",
    "to_png",
    "to_svg",
    "write_figures",
    "Sweep",
    "SweepPoint",
    "sweep_point",
    "sweeps",
]
