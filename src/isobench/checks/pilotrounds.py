"""The rounds a study's primary cells need, sized from a stored run of the
same work on this host (a pilot): each primary cell's paired per-round SD of
the log ratio against the baseline there, and the rounds that settle it
(changed, or equivalent within the study's ±tolerance) 4 times in 5 at the
level the study's primaries are corrected at, alpha/m with m its primary
cells (checks/resolution.compared_cells), allowing for the SD being an
estimate from the pilot's pairs (analysis/settle.rounds_to_settle, the rule
every "about N rounds would settle it" uses). `benchmarks/primary_rounds.py`
prints it for a stored run; the pilot may have run other levels and more
metrics: only the study's primaries are looked up in it. Pure but for the
workloads' constructors."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from isobench.analysis.settle import rounds_to_settle
from isobench.analysis.stats import ALPHA
from isobench.checks.resolution import compared_cells
from isobench.host.hostinfo import HostInfo
from isobench.results.analysis import pairs
from isobench.results.model import RunData
from isobench.study import Study
from isobench.workloads import WORKLOADS


@dataclass(frozen=True)
class Need:
    """One primary cell of the study, as the pilot measured it."""

    cell: str  # "netlat/tcp p50_us"
    env: str
    sd: float | None  # paired SD per round of the log ratio; None: the pilot lacks the cell
    pairs: int  # the rounds the pilot paired
    rounds: int | None  # that settle the cell 4 times in 5 at the study's level; None: unknown
    planned: int  # the study's measured rounds of it (whole periods where they apply)

    @property
    def settles(self) -> bool:
        return self.rounds is not None and self.rounds <= self.planned


def primary_needs(study: Study, host: HostInfo, pilot: RunData) -> tuple[int, list[Need]]:
    """(m, each primary cell's need), in study order: the cells Table I will
    correct together, each with what the pilot's paired rounds say it needs."""
    m = max(compared_cells(study, host).cells, 1)
    q, tol = ALPHA / m, study.meta.tolerance_pct
    skip, baseline = study.unsupported(), study.meta.baseline
    by_ident = {(k.workload, k.case, k.metric): k for k in pilot.metrics}
    needs = []
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        planned = study.meta.rounds_for(workload, len(study.environments))
        envs = [e for e in study.environments if e != baseline and (e, entry.key) not in skip]
        for case in workload.cases():
            for metric in workload.primaries(case):
                key = by_ident.get((entry.key, case, metric))
                for env in envs:
                    found = pairs(pilot, key, env, baseline) if key is not None else None
                    sd = paired_sd(found or [])
                    n = len(found or [])
                    rounds = rounds_to_settle(sd, n - 1, q, tol) if sd is not None else None
                    needs.append(Need(f"{entry.key}/{case} {metric}", env, sd, n, rounds, planned))
    return m, needs


def paired_sd(found: list[tuple[float, float]]) -> float | None:
    """The SD of the rounds' log ratios; None under two rounds or a value not positive."""
    if len(found) < 2 or any(v <= 0 or r <= 0 for v, r in found):
        return None
    return statistics.stdev(math.log(v / r) for v, r in found)
