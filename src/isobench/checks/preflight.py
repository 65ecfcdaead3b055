"""Checks a valid study against this host before anything starts: sizes
that cannot fit in its memory or on its disk are refused with one line
naming the file and the field."""

from __future__ import annotations

import math
from dataclasses import dataclass

from isobench.analysis.order import periods_text
from isobench.core.numbers import fmt_duration, plural
from isobench.envs.kinds import kind_of
from isobench.envs.pinning import duet_sides, side_host, usable_cpus
from isobench.host.hostinfo import HostInfo
from isobench.host.samplecgroup import cpus_limited_by, duet_cpus_remedy
from isobench.study import Study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import Workload, WorkloadError

MEMORY_SHARE = 0.8  # leave the kernel, engine and VMM room to breathe
DISK_SHARE = 0.9

GiB = 2**30


def preflight(study: Study, host: HostInfo) -> list[str]:
    """One-line problems; empty when the study fits. Every environment holds
    its own copy of each workload's inputs at the same time (all are
    prepared before the first round), so needs are multiplied by their count."""
    n_envs = len(study.environments)
    problems: list[str] = []
    totals = {"memory": 0, "disk": 0}
    biggest: dict[str, tuple[str, int]] = {}
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        try:
            prints = workload.footprint()
        except WorkloadError as exc:
            sep = "." if exc.field else ": "  # the message starts with the field it names
            problems.append(f"{study.path}: workloads.{entry.key}{sep}{exc}")
            continue
        for fp in prints:
            need = fp.bytes * n_envs
            totals[fp.resource] += need
            if need > biggest.get(fp.resource, ("", -1))[1]:
                biggest[fp.resource] = (f"workloads.{entry.key}.{fp.field}", need)
    # what each kind holds of the host itself (a guest's RAM), all instances
    for name, spec in study.environments.items():
        problems += [
            f"{study.path}: environments.{name}.{field}: {problem}" for field, problem in kind_of(spec.kind).check(spec)
        ]
        for fp in kind_of(spec.kind).footprint(spec):
            totals[fp.resource] += fp.bytes
            if fp.bytes > biggest.get(fp.resource, ("", -1))[1]:
                biggest[fp.resource] = (f"environments.{name}.{fp.field}", fp.bytes)
    # the noisy neighbour holds its memory beside every environment's (its top step)
    need = study.noise.held_memory() if study.noise is not None else 0
    if need:
        totals["memory"] += need
        if need > biggest.get("memory", ("", -1))[1]:
            biggest["memory"] = ("noise.vm_bytes_mb", need)
    problems += duet_problems(study, host, usable_cpus())
    limits = {
        "memory": (
            host.mem_bytes * MEMORY_SHARE,
            f"{MEMORY_SHARE:.0%} of this host's {host.mem_bytes / GiB:.1f} GiB of memory",
        ),
        "disk": (
            host.disk_free_bytes * DISK_SHARE,
            f"{DISK_SHARE:.0%} of the {host.disk_free_bytes / GiB:.1f} GiB free on the disk",
        ),
    }
    for resource, total in totals.items():
        limit, what = limits[resource]
        if total and limit and total > limit:
            field, _ = biggest[resource]
            problems.append(
                f"{study.path}: {field}: {n_envs} environments need {total / GiB:.1f} GiB of "
                f"{resource} in all, more than {what}; lower it"
            )
    return problems


def duet_problems(study: Study, host: HostInfo, cpus: list[int]) -> list[str]:
    """What keeps a duet study from running on these CPUs, one line each:
    too few CPUs for two sides, an environment that cannot be placed or
    places itself, a workload that needs more CPUs than a side has."""
    if study.meta.schedule != "duet":
        return [
            f"{study.path}: workloads.{e.key}.duet: true asks for a duet, but the study runs one sample at a time; "
            'add schedule = "duet" to [study] (or --schedule duet), or leave duet out'
            for e in study.workloads
            if e.params.duet is True and WORKLOADS[e.workload](e.params, host).duet_mode() is not None
        ]
    side = len(duet_sides(cpus)[0])
    if side < 1:
        return [
            f"{study.path}: study.schedule: a duet needs at least two usable host CPUs, this host has "
            f'{len(cpus)}{duet_cpus_remedy(cpus_limited_by())}; or use schedule = "sequential"'
        ]
    problems = [
        f"{study.path}: environments.{name}.{field}: {problem}"
        for name, spec in study.environments.items()
        for field, problem in kind_of(spec.kind).duet_problems(spec, side)
    ]
    half = side_host(host)
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, half)
        if entry.params.duet and not type(workload).duet:
            problems.append(
                f"{study.path}: workloads.{entry.key}.duet: {entry.workload} cannot run as a duet "
                "(its work is not confined to the CPUs it is given); leave duet out"
            )
        if workload.duets and workload.cpus_needed() > side:
            problems.append(
                f"{study.path}: workloads.{entry.key}: one sample keeps {workload.cpus_needed()} CPUs "
                f"busy, a duet side has {side}; lower it (0 = a side's CPUs) or use "
                f'schedule = "sequential"'
            )
    return problems


# --- the study's size -------------------------------------------------------------------
# Beyond these a study is refused unless --allow-large says it is meant (a
# typo such as 2,000 environments must not start 2,000 containers).
MAX_INSTANCES_PER_CORE = 8  # environments (all instances) per host core, at least MIN_INSTANCES
MIN_INSTANCES = 32
MAX_SAMPLES = 20_000
MAX_HOURS = 24.0
START_S = 5.0  # a rough per-instance start and stop, on top of the samples
# Between samples: a duet's slot places both sides, reads the counters and
# stores two samples (1.4 to 1.8 s a slot in the quick runs of 2026-11-27;
# about 0.8 s in three of 2026-11-28, their byte code kept, quiet: each
# run's samples span less their walls, over its 44 slots and 33 single
# samples); one sample at a time, about 0.2 s.
DUET_SLOT_S = 0.9
SAMPLE_GAP_S = 0.2


@dataclass(frozen=True)
class Periods:
    """The workloads whose fixed rounds are rounded up to whole periods of
    the rotation (StudyMeta.rounds_for), and to how many."""

    keys: tuple[str, ...] = ()
    rounds: int = 0  # their measured rounds
    planned: int = 0  # the study's repetitions
    envs: int = 0

    def line(self) -> str:
        """ "fio: 12 rounds, not 10: whole periods of the 3-environment
        rotation (6 rounds each)"; "" when no workload's rounds were rounded."""
        return f"{', '.join(self.keys)}: {periods_text(self.rounds, self.planned, self.envs)}" if self.keys else ""

    def as_json(self) -> dict | None:
        return {"workloads": list(self.keys), "rounds": self.rounds} if self.keys else None


@dataclass(frozen=True)
class StudySize:
    environments: int
    instances: int
    cells: int  # workload cases (x noise steps)
    rounds: int  # warm-up + repetitions
    samples: int  # cells x environments x rounds
    estimated_s: float
    warmup: int = 0
    round_s: float = 0.0  # one round of every cell in every environment
    fixed_s: float = 0.0  # starting and stopping the instances, once
    guessed_s: float = 0.0  # the part of round_s that is a guess (Workload.duration_known)
    # a budgeted study: the measured rounds of every case its budget pays for
    # at this estimate (``budget_rounds``); None otherwise. ``rounds`` and
    # ``samples`` stay the first block's, which the limits are checked on.
    budget_rounds: int | None = None
    # the workloads that run more rounds than ``rounds`` says, whole periods
    # of the rotation: their time and samples are in ``estimated_s`` and ``samples``
    periods: Periods = Periods()

    def describe(self) -> str:
        n = plural
        rounds, samples = n(self.rounds, "round"), self.samples
        p = self.periods
        if p.keys and self.warmup + p.rounds != self.rounds:  # some workloads only
            rounds += f" ({self.warmup + p.rounds} for {', '.join(p.keys)})"
        if self.budget_rounds is not None and self.rounds > 0:  # the one rounds figure a budget is said in
            rounds = f"{self.warmup} warm-up + about {n(self.budget_rounds, 'round')}"
            samples = self.samples // self.rounds * (self.warmup + self.budget_rounds)
        return (
            f"size: {n(self.environments, 'environment')} ({n(self.instances, 'instance')}), "
            f"{n(self.cells, 'cell')}, {rounds}, {n(samples, 'sample')}, about {fmt_duration(self.estimated_s)}"
        )

    def seconds_at(self, measured_rounds: int) -> float:
        """The same estimate for another number of measured rounds (warm-up kept)."""
        return self.round_s * (self.warmup + measured_rounds) + self.fixed_s


def study_size(study: Study, host: HostInfo) -> StudySize:
    """How big the study is, and roughly how long it takes, from the
    workloads' own expected durations (Workload.expected_s)."""
    steps = len(study.noise.steps) if study.noise is not None else 1
    n_envs = len(study.environments)
    duet = study.meta.schedule == "duet" and n_envs > 1
    cells, round_s, round_samples, guessed_s = 0, 0.0, 0, 0.0
    own: list[tuple[str, int, float, int]] = []  # (key, measured rounds, seconds and samples a round)
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        cells += len(workload.cases()) * steps
        case_s, samples = _round_of(workload, n_envs, duet, steps)
        round_s, round_samples = round_s + case_s, round_samples + samples
        guessed_s += 0.0 if workload.duration_known else case_s
        own.append((entry.key, study.meta.rounds_for(workload, n_envs), case_s, samples))
    instances = sum(spec.instances for spec in study.environments.values())
    plan = study.budget_plan()
    # the rounds of every workload (some run whole periods beyond them); an adaptive
    # study: its most rounds; a budgeted one: its first block, and its budget as its length
    least = min((r for _, r, _, _ in own), default=study.meta.planned_rounds)
    rounds = study.meta.warmup + (plan.first if plan else least)
    extra_s = sum((r - least) * s for _, r, s, _ in own)
    estimated = round_s * rounds + extra_s + START_S * instances
    rounded = tuple(k for k, r, _, _ in own if r != study.meta.planned_rounds)
    most = max((r for _, r, _, _ in own), default=0)
    return StudySize(
        n_envs,
        instances,
        cells,
        rounds,
        round_samples * rounds + sum((r - least) * n for _, r, _, n in own),
        max(estimated, plan.budget_s) if plan else estimated,
        study.meta.warmup,
        round_s,
        START_S * instances,
        guessed_s,
        budget_rounds(plan, round_s, START_S * instances, study.meta.warmup) if plan else None,
        Periods(rounded, most, study.meta.planned_rounds, n_envs) if rounded else Periods(),
    )


def _round_of(workload: Workload, n_envs: int, duet: bool, steps: int) -> tuple[float, int]:
    """One round of a workload's cells in every environment: its expected
    seconds and its samples."""
    cases = workload.cases()
    # a duet runs the baseline beside each other environment: n - 1 slots of
    # two samples at once, where one at a time takes n slots of one
    slots, per_slot = (n_envs - 1, 2) if duet and workload.duets else (n_envs, 1)
    gap = DUET_SLOT_S if per_slot == 2 else SAMPLE_GAP_S
    return sum(workload.expected_s(c) + gap for c in cases) * steps * slots, len(cases) * steps * slots * per_slot


def budget_rounds(plan, round_s: float, fixed_s: float, warmup: int) -> int:
    """Measured rounds of every case a budget pays for at ``round_s`` a
    round, within its plan's first block and cap (analysis.budget.Plan)."""
    if round_s <= 0:
        return int(plan.cap)
    fits = int((plan.budget_s - fixed_s) / round_s) - warmup
    return int(min(max(fits, plan.first), plan.cap))


def budget_problem(study: Study, size: StudySize, label: str = "study.budget") -> str | None:
    """A budget shorter than the first block: nothing could be decided in it.
    Only the block's known part counts: a command workload's sample time is
    a guess until it runs, and the advice a run gives once it ran ("--budget
    1m") comes from its measured pace, which a refusal on the guess would
    contradict. A run whose first block overruns still finishes it, and
    stops there if that spent the budget (analysis.budget)."""
    plan = study.budget_plan()
    if plan is None:
        return None
    need = size.seconds_at(plan.first) - size.guessed_s * (size.warmup + plan.first)
    if plan.budget_s >= need:
        return None
    return (
        f"{study.path}: {label}: {study.meta.budget} is shorter than the first block ({plan.first} rounds of "
        f"every case, about {fmt_duration(need)} here); give at least {math.ceil(need / 60)}m, or fewer "
        "repetitions"
    )


def size_problems(study: Study, size: StudySize, host: HostInfo) -> list[str]:
    """One line per limit exceeded, naming the field to lower and the flag."""
    flag = "or pass --allow-large if it is meant"
    max_instances = max(MIN_INSTANCES, MAX_INSTANCES_PER_CORE * host.cores)
    problems = []
    if size.instances > max_instances:
        problems.append(
            f"{study.path}: environments: {size.instances} instances on a {host.cores}-core host "
            f"(limit {max_instances}); remove some {flag}"
        )
    if size.samples > MAX_SAMPLES:
        problems.append(
            f"{study.path}: study.repetitions: {size.samples} samples (limit {MAX_SAMPLES}); "
            f"lower repetitions or the workloads' cases {flag}"
        )
    if size.estimated_s > MAX_HOURS * 3600:
        problems.append(
            f"{study.path}: study.repetitions: an estimated {fmt_duration(size.estimated_s)} "
            f"(limit {MAX_HOURS:.0f} h); lower repetitions or durations {flag}"
        )
    return problems
