"""The rounds of one step of a run: each round's cells in the slots the
schedule gives (one sample at a time, or a duet), every sample stored the
moment it exists, and, after each block, the look (a budget's or adaptive
repetitions') that says how many rounds more. The runner (run/runner.py)
starts the environments and tears them down around this."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from isobench.analysis.budget import Plan as BudgetPlan
from isobench.checks.health import Watch, ask_health
from isobench.core.errors import EnvironmentError_
from isobench.envs.base import Environment
from isobench.host.noise import Noise
from isobench.run.duet import run_duet
from isobench.run.duetcalls import settle
from isobench.run.looks import Clock, budget_look, fit_rounds, next_block_of, record_adaptive, round_label
from isobench.run.measure import discarded, record, record_failure, take
from isobench.run.plan import Cell
from isobench.run.schedule import Schedule, Slot
from isobench.run.warmup import warmup_failed
from isobench.store.db import Store
from isobench.study import StudyMeta

DUET_TRIES = 3  # a duet measured at most this often while it does not run as planned


class Progress(Protocol):
    def start(self, total: int) -> None: ...
    def step(self, label: str) -> None: ...
    def advance(self) -> None: ...
    def note(self, message: str) -> None: ...
    def extend(self, more: int) -> None: ...  # more samples than start() said (a budget's next block)


class SilentProgress:
    def start(self, total: int) -> None: ...
    def step(self, label: str) -> None: ...
    def advance(self) -> None: ...
    def note(self, message: str) -> None: ...
    def extend(self, more: int) -> None: ...


@dataclass
class RunContext:
    """What every slot of a run reads and writes."""

    store: Store
    run_id: str
    meta: StudyMeta
    done: set
    skip: dict
    watch: Watch
    progress: Progress
    prepare_failures: dict
    placed: set = field(default_factory=set)  # environments a duet left on one side's CPUs
    paired: set = field(default_factory=set)  # (env, workload, case, round, partner) of ok duet samples stored
    planned: set = field(default_factory=set)  # the same for every duet side the run must end with


def run_round(
    ctx: RunContext,
    schedule: Schedule,
    cells: list[Cell],
    envs: list[Environment],
    round_: int,
    rounds: int,
    clock: Clock,
    noise: dict | None,
) -> None:
    """One round of these cells in their slots; a command table's duet call
    is made before its first measured round, and each cell's measured time
    goes to the budget's clock."""
    warmup = ctx.meta.warmup
    for cell in cells:
        if schedule.decides(cell.workload, cell.case) and round_ >= min(warmup, 1):
            runs = [e for e in envs if (e.name, cell.key) not in ctx.skip and not ctx.watch.skips(e)]
            settle(ctx.store, ctx.run_id, schedule, cell, runs, ctx.meta, ctx.progress, rounds - round_, noise)
        began, measured_here = time.monotonic(), False
        for slot in schedule.slots(cell.workload, envs, round_ - warmup):
            measured_here |= _run_slot(ctx, slot, cell, round_, noise, rounds)
        if measured_here and round_ >= warmup:  # resumed cells took no time
            clock.add((cell.key, cell.case), time.monotonic() - began)


def slot_sides(slot: Slot, key: str, skip: dict) -> tuple[list[Environment], bool]:
    """The slot's environments that run this workload, and whether they run
    as a duet (two of them together)."""
    envs = [e for e in slot.envs if (e.name, key) not in skip]
    return envs, slot.together and len(envs) == 2


def missing_sides(
    done: set, paired: set, envs: list[Environment], together: bool, key: str, case: str, round_: int
) -> list[Environment]:
    """The slot's environments without their ok sample of this round: a
    duet's side counts only a sample taken beside this partner (not alone,
    not beside another environment), so --resume measures every side a
    duet is missing."""
    if together:
        a, b = envs
        return [e for e, p in ((a, b), (b, a)) if (e.name, key, case, round_, p.name) not in paired]
    return [e for e in envs if (e.name, key, case, round_) not in done]


def _run_slot(ctx: RunContext, slot: Slot, cell: Cell, round_: int, noise_facts: dict | None, rounds: int) -> bool:
    """Measure the slot's missing samples (alone or as a duet) and store
    them; returns whether anything was measured. A warm-up sample that failed
    stops the run (run/warmup.py): nothing after it would be worth measuring."""
    meta, key, case = ctx.meta, cell.key, cell.case
    envs, together = slot_sides(slot, key, ctx.skip)
    if together:  # both sides must end with their sample of this duet
        a, b = envs
        ctx.planned |= {(a.name, key, case, round_, b.name), (b.name, key, case, round_, a.name)}
    missing = missing_sides(ctx.done, ctx.paired, envs, together, key, case, round_)
    # an environment whose engine or guest died is skipped, and a duet's other
    # side with it (alone it would not be this duet): --resume measures them
    lost = [e for e in envs if ctx.watch.skips(e)]
    skipped = (envs if missing else []) if together and lost else [e for e in missing if e in lost]
    for _ in skipped:  # a duet missing a side takes (and counts) both
        ctx.progress.advance()
    missing = [e for e in missing if e not in skipped]
    if not missing:
        return False
    warmup = round_ < meta.warmup
    duet = together and not any(ctx.prepare_failures.get((key, e.name)) for e in envs)
    names = " with ".join(e.name for e in (envs if duet else missing))
    ctx.progress.step(f"{round_label(meta, round_, rounds)} {key}/{case} in {names}" + (" (duet)" if duet else ""))
    if duet:
        failed = _run_duet_slot(ctx, slot, cell, envs, missing, round_, warmup, noise_facts)
    else:
        failed = _alone_slot(ctx, cell, missing, round_, warmup, noise_facts)
    if warmup and failed:
        env, error = failed[0]
        raise warmup_failed(env.name, f"{key}/{case}", error, ask_health(env))
    for env, error in failed:
        ctx.watch.failed(env, f"{key}/{case}", error)
    return True


def _alone_slot(
    ctx: RunContext, cell: Cell, missing: list[Environment], round_: int, warmup: bool, noise_facts
) -> list[tuple[Environment, str]]:
    """Each missing environment's sample alone, stored (a failed preparation
    as a failed sample); returns each failed one and why."""
    key, case = cell.key, cell.case
    failed: list[tuple[Environment, str]] = []
    for env in missing:
        problem = ctx.prepare_failures.get((key, env.name))
        if problem is not None:
            record_failure(ctx.store, ctx.run_id, key, case, env, round_, warmup, problem)
            error = problem if warmup else None  # said as it was prepared; a warm-up stops on it
        else:
            if env.name in ctx.placed:  # alone again: back where its own spec places it
                env.place(None)
                ctx.placed.discard(env.name)
            taken = take(cell.workload_in(env.name), cell.workload_case, env, noise_facts)
            error = record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, taken)
        ctx.progress.advance()
        if error is not None:
            failed.append((env, error))
            if warmup:
                break  # the run stops: the slot's other samples would be measured for nothing
    return failed


def _run_duet_slot(
    ctx: RunContext,
    slot: Slot,
    cell: Cell,
    envs: list[Environment],
    missing: list[Environment],
    round_: int,
    warmup: bool,
    noise_facts: dict | None,
) -> list[tuple[Environment, str]]:
    """The duet measured and its missing sides stored; returns each failed
    side and why. A side whose partner failed is kept as failed (it ran
    alone in part: both are measured again), and a side whose sample of
    this duet was stored already only kept the missing one company (kept as
    failed too: one sample a side a round)."""
    key, case = cell.key, cell.case
    failed: list[tuple[Environment, str]] = []
    try:
        takens = _duet_as_planned(ctx, slot, cell, envs, round_, warmup, noise_facts)
    except EnvironmentError_ as exc:
        for env in envs:
            if env in missing:
                record_failure(ctx.store, ctx.run_id, key, case, env, round_, warmup, f"duet: {exc}"[:500])
                failed.append((env, str(exc)))
            ctx.progress.advance()
        return failed
    finally:
        ctx.placed.update(e.name for e in envs)
    for i, (env, taken) in enumerate(zip(envs, takens)):
        partner, theirs = envs[1 - i], takens[1 - i]
        if env not in missing:
            why = f"its sample of this duet was stored already: measured again only beside {partner.name}'s"
            record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, discarded(taken, why))
        elif taken.measurement is not None and theirs.measurement is None:  # the partner's failure is said
            why = f"its partner {partner.name} failed, so it ran alone in part: the duet is measured again"
            record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, discarded(taken, why))
        else:
            error = record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, taken)
            if error is not None:
                failed.append((env, error))
        ctx.progress.advance()
    return failed


def _duet_as_planned(
    ctx: RunContext, slot: Slot, cell: Cell, live: list[Environment], round_: int, warmup: bool, noise_facts
) -> list:
    """A duet's two samples, measured again (DUET_TRIES in all) while one of
    them did not run as planned (run/duet.py not_as_planned); each discarded
    try is stored as a failed sample that keeps its values and says why. The
    last try is kept whatever it says: its record says it. A side that failed
    (or timed out) is not tried again here: its failure is its own, and
    --resume measures the duet again."""
    cpus = (slot.cpus[0], slot.cpus[1])
    sides = (cell.workload_in(live[0].name), cell.workload_in(live[1].name))
    for attempt in range(DUET_TRIES):
        takens = run_duet(sides, cell.workload_case, (live[0], live[1]), cpus, noise_facts)
        why = [t.extra["duet"].get("not_as_planned", "") for t in takens]
        if not any(why) or attempt == DUET_TRIES - 1 or any(t.measurement is None for t in takens):
            return takens
        for env, taken in zip(live, takens):
            gone = discarded(taken, f"duet not as planned ({why[0] or why[1]}): measured again")
            record(ctx.store, ctx.run_id, cell.key, cell.case, cell.workload, env, round_, warmup, gone)
        ctx.progress.note(f"{cell.key}/{cell.case} in {live[0].name} with {live[1].name}: {why[0] or why[1]}; again")
    return takens


def run_step(
    ctx: RunContext,
    schedule: Schedule,
    step: int | None,
    step_cells: list[Cell],
    started: list[Environment],
    envs: list[Environment],
    noise: Noise | None,
    budget: BudgetPlan | None,
    clock: Clock,
) -> set[tuple]:
    """Every round of one step's cells: the first block, then the blocks a
    budget's or adaptive repetitions' looks ask for. Returns the (env,
    workload, case, round) the run must end with an ok sample."""
    meta = ctx.meta
    own = {(c.key, c.case): meta.warmup + first_block(meta, budget, c, len(started)) for c in step_cells}
    noise_facts = _step_noise(ctx, noise, step, step_cells, started, own)
    rounds, first = max(own.values(), default=meta.warmup), 0
    active = {(c.key, c.case) for c in step_cells}
    # case -> rounds (warm-up included) when it ended before the step's last:
    # its own whole periods (first_block) or a budget's stop
    ended: dict[tuple[str, str], int] = {case: n for case, n in own.items() if n < rounds}
    warm_s = 0.0  # the warm-up rounds' time: measure_for fits the rounds to it
    while True:
        round_ = first
        while round_ < rounds:
            if round_ == meta.warmup and meta.measure_for is not None and budget is None:
                rounds = meta.warmup + fit_rounds(ctx, schedule, step, step_cells, len(started), warm_s)
            began_round = time.monotonic()
            due = [c for c in step_cells if (c.key, c.case) in active and round_ < ended.get((c.key, c.case), rounds)]
            run_round(ctx, schedule, due, started, round_, rounds, clock, noise_facts)
            warm_s += time.monotonic() - began_round if round_ < meta.warmup else 0.0
            round_ += 1
        more = _look(ctx, schedule, step, step_cells, len(started), active, ended, rounds, budget, clock)
        if more == 0:
            break
        first, rounds = rounds, rounds + more
    return {
        (e.name, c.key, c.case, r)
        for c in step_cells
        for r in range(ended.get((c.key, c.case), rounds))
        for e in envs
        if (e.name, c.key) not in ctx.skip
    }


def first_block(meta: StudyMeta, budget: BudgetPlan | None, cell: Cell, envs: int) -> int:
    """A cell's measured rounds before the first look: a budget's first
    block, adaptive repetitions' least, or a fixed run's rounds (in whole
    periods of the rotation where its cells run one at a time:
    StudyMeta.rounds_for; a measure_for run fits them after the warm-up)."""
    if budget is not None:
        return budget.first
    if meta.adaptive:
        return meta.adaptive_schedule.min_rounds
    return meta.rounds_for(cell.workload, envs)


def _step_noise(
    ctx: RunContext,
    noise: Noise | None,
    step: int | None,
    step_cells: list[Cell],
    started: list[Environment],
    own: dict[tuple[str, str], int],
) -> dict | None:
    """Start a noise study's stressor for this step, unless a resumed run
    has measured all of the step's first block already (``own``: each
    case's rounds in it, warm-up included)."""
    if noise is None or step is None:
        return None
    cells = [(c, own[(c.key, c.case)]) for c in step_cells]
    if all((e.name, c.key, c.case, r) in ctx.done for c, n in cells for r in range(n) for e in started):
        return None
    ctx.progress.note(f"noise: {noise.spec.stressor} stressor, {step} workers")
    return noise.start_step(step)


def _look(
    ctx: RunContext,
    schedule: Schedule,
    step: int | None,
    step_cells: list[Cell],
    n_envs: int,
    active: set,
    ended: dict,
    rounds: int,
    budget: BudgetPlan | None,
    clock: Clock,
) -> int:
    """After a block: the rounds of the next one (0: the step is done). A
    budget's look also narrows ``active`` to the cases it still measures and
    notes in ``ended`` when the others stopped."""
    meta = ctx.meta
    if budget is not None:
        alloc = budget_look(
            ctx.store, ctx.run_id, step_cells, active, rounds - meta.warmup, budget, clock, n_envs, meta.tolerance_pct
        )
        ctx.progress.note(f"budget: {alloc.text}")
        ended.update({c.case: rounds for c in alloc.calls if c.case not in alloc.measure})
        active.clear()
        active.update(alloc.measure)
        if alloc.stop:
            return 0
        per_round = sum(schedule.samples_per_round(c.workload, n_envs) for c in step_cells if (c.key, c.case) in active)
        ctx.progress.extend(alloc.more * per_round)
        return alloc.more
    if not meta.adaptive:
        return 0
    decision = next_block_of(ctx.store, ctx.run_id, step_cells, rounds - meta.warmup, meta)
    ctx.progress.note(f"adaptive repetitions: {decision.text}")
    record_adaptive(ctx.store, ctx.run_id, step, rounds - meta.warmup, decision)
    return 0 if decision.stop else decision.more
