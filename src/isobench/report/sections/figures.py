"""Every figure the run has data for, grouped by kind (report/figures); HTML only."""

from __future__ import annotations

from isobench.core.metric import STARTUP
from isobench.report.blocks import Figure
from isobench.report.section import HTML, ReportContext, Section

CAPTIONS = {
    "attribution": "stacked: host CPU µs per unit of work by category, client host's share removed; "
    "the VMM's threads taken out of user/system (docs/attribution.md)",
    "normalised": "bars: candidate vs baseline on a log axis, >1 is better for every metric (latency-like "
    "metrics inverted), whiskers: the table's corrected interval (an arrow where it runs off "
    "the axis), * changed after Benjamini-Hochberg correction",
    "sweep": "mean and 95% CI at each swept value",
    "throughput-latency": "each point one swept value, mean and 95% CI on both axes",
    "latency-cdf": "histograms of every repetition pooled",
    "cpu-cost": "mean and 95% CI per direction; * differs significantly from the baseline",
    "throughput-cpu": "each point one swept value, mean and 95% CI on both axes",
    STARTUP: "start request to ready; mean and 95% CI",
    "scale-out": "aggregate throughput through the proxy and its ratio to the fewest instances; dotted: linear",
    "per-instance": "each instance's own mean (95% CI): spread between the lines is unfairness",
    "fairness": "Jain's index (1 = every instance served alike) and slowest/fastest instance",
    "density": "one reading per run, as the environment's instances start one by one, page cache dropped",
}


class FiguresSection(Section):
    slug = "figures"
    title = "Figures"
    order = 55
    formats = frozenset({HTML})

    def blocks(self, ctx: ReportContext):
        # here, not above: report.figures loads matplotlib, which only HTML (this section's format) draws with
        from isobench.report.figures import KIND_ORDER, KIND_TITLES

        specs = ctx.figure_specs
        return [
            Figure(s.slug, s.title, CAPTIONS.get(kind, ""), s.figure, group=KIND_TITLES[kind])
            for kind in KIND_ORDER
            for s in specs
            if s.kind == kind
        ]
