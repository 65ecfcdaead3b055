"""What every report is computed from: a run as read back from the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ALL_METRICS = "*"  # a validity note about every metric of a case


@dataclass(frozen=True)
class MetricKey:
    workload: str
    case: str
    metric: str
    unit: str
    higher_is_better: bool
    role: str = ""  # isobench.core.metric role; read it through results.roles.role_of
    # stored as one of its case's primaries; False in runs stored before
    # primaries: read them through results.primary, which falls back to roles
    primary: bool = False


@dataclass
class RunData:
    run_id: str
    study_name: str
    started_at: str
    finished_at: str | None
    status: str  # running | complete | interrupted | failed
    host_facts: dict[str, Any]
    study_text: str
    study_hash: str
    baseline: str  # environment name the others are compared to
    environments: list[str]  # in study order
    env_facts: dict[str, dict[str, Any]]  # environment name -> facts
    metrics: list[MetricKey]  # in study order
    # (MetricKey, environment) -> measured values of the non-warm-up, successful samples
    values: dict[tuple[MetricKey, str], list[float]] = field(default_factory=dict)
    # (workload, case, environment) -> one-line reasons of failed samples
    failures: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    # the round of each value in ``values``: same keys, same order, so values of
    # one round can be paired across environments; filled by Store.load_run
    # (empty for runs built in memory)
    rounds: dict[tuple[MetricKey, str], list[int]] = field(default_factory=dict)
    # the store's id of each value's sample (same keys and order): a sample is
    # committed before the next one starts, so ids rank a round's samples in the
    # order they started (analysis.order); empty for runs built in memory
    sample_ids: dict[tuple[MetricKey, str], list[int]] = field(default_factory=dict)
    # the duet partner of values in ``values`` that ran as a duet (run/duet.py):
    # same keys, {index in the values list: the other environment's name}; a
    # baseline has one value per partner and round, paired only with that partner
    partners: dict[tuple[MetricKey, str], dict[int, str]] = field(default_factory=dict)
    # the host CPUs each of those duet values ran on (same keys and indices):
    # the paired test is blocked by side (analysis.stats.log_crossover)
    sides: dict[tuple[MetricKey, str], dict[int, str]] = field(default_factory=dict)
    # (workload, case, environment, metric) -> what the workload said that
    # figure does not mean there (Workload.validity), distinct texts in order
    validity: dict[tuple[str, str, str, str], list[str]] = field(default_factory=dict)
    # (workload, case, environment) -> [(round, counter deltas, [unit, count])] of
    # the measured samples that carry counters (isobench.host.counters); filled by
    # Store.load_run, read by results.attribution
    counters: dict[tuple[str, str, str], list[tuple[int, dict[str, float], list[Any]]]] = field(default_factory=dict)
    # (workload, environment) -> (wall seconds, samples) over every sample, warm-up
    # and failed ones included: where the run's time went; filled by Store.load_run
    time_spent: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    # warm-up rounds the run measured first (a run of n more rounds takes them again)
    warmup_rounds: int = 0
    # rounds it took, warm-ups included; 0 when unknown (built in memory)
    rounds_run: int = 0
    # workload -> seconds its samples' summed wall time counts twice, a duet's
    # two sides having run at once (store.readback._duet_overlap)
    overlap_s: dict[str, float] = field(default_factory=dict)
    # each environment's duet samples: (its gate: "held" or why not, its work's signed start skew, s)
    duet_starts: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    # each environment's duet samples' swap periods, s (run/duet.py swap_period; stored since 2026-11-29)
    duet_periods: dict[str, list[float]] = field(default_factory=dict)

    def wall_s(self) -> float:
        """The run's samples' wall time, a duet's overlapping sides counted once."""
        return sum(w for w, _ in self.time_spent.values()) - sum(self.overlap_s.values())

    def seconds_per_round(self) -> float | None:
        """One round of every case in every environment, at this run's own
        wall pace (warm-ups and failures included; a duet's sides ran at
        once); None when the store kept no times."""
        wall = self.wall_s()
        samples = sum(n for _, n in self.time_spent.values())
        cases = {(k.workload, k.case) for k in self.metrics}
        if wall <= 0 or not samples or not cases:
            return None
        if self.rounds_run > 0:
            return wall / self.rounds_run
        return wall / samples * len(cases) * len(self.environments)
