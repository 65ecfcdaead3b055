"""Runs a study's matrix: environments × workload cases × rounds.

Each round runs every cell once in every environment, in the slots its
schedule gives (run/schedule.py: one sample at a time in a Williams square's
order, or the baseline beside each other environment at once, a duet).
Every sample is stored the moment it exists. A budgeted or adaptive study
measures, after each block, only what its looks (run/looks.py) still want.
The runner starts, measures, records and stops.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from isobench.checks.doctor import findings_as_facts, judge, read_host
from isobench.checks.health import Watch, clean_pending, final_status, remember_leftovers
from isobench.clienthost import ClientHost
from isobench.core.errors import EnvironmentError_
from isobench.envs import make_environment
from isobench.envs.base import Environment
from isobench.host.facts import host_facts
from isobench.host.hostinfo import HostInfo, host_info
from isobench.host.noise import Noise
from isobench.images import study_packages
from isobench.run.clean import clean
from isobench.run.duet import run_duet
from isobench.run.duetcalls import restore, settle
from isobench.run.looks import (
    Clock,
    budget_look,
    fit_rounds,
    next_block_of,
    record_adaptive,
    record_budget_plan,
    round_label,
)
from isobench.run.measure import record, record_failure, take
from isobench.run.plan import Cell, by_step, needs_image, new_run_id, plan, planted_of
from isobench.run.prepare import ProgramsDiffer, check_same, prepare, programs, with_programs
from isobench.run.schedule import Schedule, Slot, make_schedule
from isobench.store.db import Store, StoreWriteError
from isobench.study import Study, StudyMeta
from isobench.workloads.base import Workload
from isobench.workloads.server import ServerWorkload


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


def run_study(
    study: Study,
    store: Store,
    progress: Progress | None = None,
    image_provider: Callable[[], str] | None = None,
    resume: str | None = None,
    on_run_id: Callable[[str], None] | None = None,
    run_id: str | None = None,
    host_noise: dict | None = None,
) -> str:
    """Run the study to the end (or to Ctrl-C); returns the run id. Whatever
    happens, everything started here is stopped before returning. With
    resume=RUN_ID, continue that run: cells already measured are skipped.
    ``host_noise`` (the noise pilot's figures, measured by the caller before
    this starts) is kept among a new run's host facts. The Debian packages
    its workloads add to isobench's own are part of the image's recipe
    while it runs (an image of their own) and installed by the kinds that
    run the host's programs."""
    host = host_info()
    cells = plan(study, host)
    with study_packages(p for c in cells for p in c.workload.added_packages()) as added:
        return _run_study(
            study, store, progress, image_provider, resume, on_run_id, run_id, host_noise, host, cells, list(added)
        )


def _run_study(
    study: Study,
    store: Store,
    progress: Progress | None,
    image_provider: Callable[[], str] | None,
    resume: str | None,
    on_run_id: Callable[[str], None] | None,
    run_id: str | None,
    host_noise: dict | None,
    host: HostInfo,
    cells: list[Cell],
    added: list[str],
) -> str:
    progress = progress or SilentProgress()
    clock = Clock(time.monotonic())
    schedule = make_schedule(study.meta.schedule, study.meta.baseline, study.meta.order)
    image = image_provider() if (image_provider and needs_image(study)) else None
    if resume is None:
        run_id = run_id or new_run_id(study)  # a fleet controller chooses the id
        facts = {**host_facts(), "doctor": findings_as_facts(judge(read_host()))}
        if host_noise is not None:
            facts["host_noise"] = host_noise
        facts["schedule"] = schedule_facts(schedule, cells)
        store.create_run(run_id, study, facts)
        done: set[tuple] = set()
    else:
        run_id = resume
        done = store.measured_cells(run_id)
        store.reopen_run(run_id)
        clock.spent_before = float((store.run_facts(run_id).get("budget") or {}).get("spent_s") or 0.0)
        for item in clean(run_id):  # what a killed attempt left: its containers' names are taken (409)
            progress.note(f"removed a leftover of this run's earlier attempt: {item}")
    if on_run_id is not None:
        on_run_id(run_id)
    for item in clean_pending(clean):  # what an earlier run's teardown could not remove (engine was down)
        progress.note(f"removed a leftover of an earlier run: {item}")
    skip = study.unsupported()  # (env, workload key) -> why it is never run there
    for (env_name, key), reason in skip.items():
        progress.note(f"{key} is not run in {env_name}: {reason}")
    watch = Watch(run_id, progress.note)
    envs = [make_environment(name, spec, run_id, host, image) for name, spec in study.environments.items()]
    for cell in cells:
        store.define_metrics(run_id, cell.key, cell.case, cell.workload.defined_metrics(cell.workload_case))
    started: list[Environment] = []
    client: ClientHost | None = None
    noise = Noise(study.noise, run_id) if study.noise is not None else None
    status, env_facts = "failed", {}
    try:
        # server workloads: the client host exists before environments start,
        # so Docker bridge environments can publish on its bridge address
        client = attach_client_host(run_id, [c.workload for c in cells], envs)
        for env in envs:
            progress.note(f"starting {env.name}")
            env.start()
            started.append(env)
            if added:
                env.provide_packages(added, progress.note)
            packages = sorted({p for c in cells for p in c.workload.versioned_packages()})
            not_run = {key: reason for (name, key), reason in skip.items() if name == env.name}
            env_facts[env.name] = {
                **env.facts(),
                "tool_versions": env.package_versions(packages),
                **({"unsupported": not_run} if not_run else {}),
            }
            store.set_env_facts(run_id, env.name, env_facts[env.name])
        workloads, planted = {c.key: c.workload for c in cells}, planted_of(cells)
        prepare_failures = prepare(workloads, started, progress, planted)
        found = programs(workloads, started, skip, planted)  # what each environment runs, kept with its facts
        for name, table in found.items():
            store.set_env_facts(run_id, name, with_programs(env_facts[name], table))
        check_same(workloads, found, study.meta.baseline, progress)  # before the first sample
        meta = study.meta
        if resume is not None:
            restore(store, run_id, cells)  # the duet calls it made
        runnable = sum(
            schedule.samples_per_round(c.workload, sum((e.name, c.key) not in skip for e in envs)) for c in cells
        )
        ctx = _Run(store, run_id, meta, done, skip, watch, progress, prepare_failures)
        budget = study.budget_plan()
        if budget is not None:
            record_budget_plan(store, run_id, budget)
        progress.start((meta.warmup + (budget.first if budget else meta.planned_rounds)) * runnable - len(done))
        planned: set[tuple] = set()  # (env, workload, case, round) the run must end with an ok sample
        for step, step_cells in by_step(cells):
            noise_facts = None
            if noise is not None and any(
                (e.name, c.key, c.case, r) not in done
                for r in range(meta.warmup + meta.adaptive_schedule.min_rounds)
                for c in step_cells
                for e in started
            ):
                assert study.noise is not None and step is not None  # a noise study's cells have steps
                progress.note(f"noise: {study.noise.stressor} stressor, {step} workers")
                noise_facts = noise.start_step(step)
            if budget:
                first_block = budget.first
            elif meta.adaptive:
                first_block = meta.adaptive_schedule.min_rounds
            else:
                first_block = int(meta.repetitions)
            rounds, first = meta.warmup + first_block, 0
            active = {(c.key, c.case) for c in step_cells}
            ended: dict[tuple[str, str], int] = {}  # case -> rounds (warm-up included) when a budget stopped it
            warm_s = 0.0  # the warm-up rounds' time: measure_for fits the rounds to it
            while True:
                round_ = first
                while round_ < rounds:
                    if round_ == meta.warmup and meta.measure_for is not None and budget is None:
                        rounds = meta.warmup + fit_rounds(ctx, schedule, step, step_cells, len(started), warm_s)
                    began_round = time.monotonic()
                    cells_now = [c for c in step_cells if (c.key, c.case) in active]
                    _run_round(ctx, schedule, cells_now, started, round_, rounds, clock, noise_facts)
                    warm_s += time.monotonic() - began_round if round_ < meta.warmup else 0.0
                    round_ += 1
                if budget is not None:
                    alloc = budget_look(
                        store,
                        run_id,
                        step_cells,
                        active,
                        rounds - meta.warmup,
                        budget,
                        clock,
                        len(started),
                        meta.tolerance_pct,
                    )
                    progress.note(f"budget: {alloc.text}")
                    ended.update({c.case: rounds for c in alloc.calls if c.case not in alloc.measure})
                    active = set(alloc.measure)
                    if alloc.stop:
                        break
                    first, rounds = rounds, rounds + alloc.more
                    progress.extend(
                        alloc.more
                        * sum(
                            schedule.samples_per_round(c.workload, len(started))
                            for c in step_cells
                            if (c.key, c.case) in active
                        )
                    )
                    continue
                if not meta.adaptive:
                    break
                decision = next_block_of(store, run_id, step_cells, rounds - meta.warmup, meta)
                progress.note(f"adaptive repetitions: {decision.text}")
                record_adaptive(store, run_id, step, rounds - meta.warmup, decision)
                if decision.stop:
                    break
                first, rounds = rounds, rounds + decision.more
            planned |= {
                (e.name, c.key, c.case, r)
                for c in step_cells
                for r in range(ended.get((c.key, c.case), rounds))
                for e in envs
                if (e.name, c.key) not in skip
            }
        status = final_status(planned, store.measured_cells(run_id))
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except ProgramsDiffer:  # nothing measured: a new run leaves no trace, a resumed one is as it was
        status = "discard" if resume is None else "interrupted"
        raise
    except StoreWriteError as exc:
        status = "interrupted"
        raise StoreWriteError(
            f"{exc}; the run stopped, every sample before this one is kept in run {run_id}; "
            f"then `isobench run --resume {run_id}` finishes it"
        ) from None
    finally:
        if noise is not None:
            noise.stop()
        _cleanup_workloads(cells, started)
        leftovers = _teardown([*envs, client] if client is not None else envs, run_id)
        if leftovers:
            remember_leftovers(run_id, leftovers)
            progress.note(
                f"teardown could not finish: {'; '.join(leftovers)[:300]}; the next run's start "
                "(or `isobench clean`) removes what is left"
            )
        try:
            if status == "discard":
                store.discard_run(run_id)
            else:
                store.finish_run(run_id, status)
        except Exception:  # noqa: BLE001 - a full disk: `isobench runs` shows the run as died
            pass
    return run_id


def attach_client_host(run_id: str, workloads: list[Workload], envs: list[Environment]) -> ClientHost | None:
    """When any workload serves from the environment, create the client
    host, tell every environment its benchmark address and the ports to
    expose (before they start), and hand the client host to the workloads.
    Returns None when no workload needs one."""
    servers = [w for w in workloads if isinstance(w, ServerWorkload)]
    if not servers:
        return None
    ch = ClientHost(run_id).start()
    ports = sorted({p for w in servers for p in w.ports})
    for env in envs:
        env.expose(ch.host_addr, ports)
    for w in servers:
        w.client = ch
    return ch


@dataclass
class _Run:
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


def schedule_facts(schedule: Schedule, cells: list[Cell]) -> dict:
    """Kept with the run: the schedule, a duet's CPU sides, and which
    schedule each workload case ran under."""
    return {
        "name": schedule.name,
        **schedule.facts(),
        "cells": {f"{c.key}/{c.case}": schedule.used_for(c.workload) for c in cells},
    }


def _run_round(
    ctx: _Run,
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
        if schedule.decides(cell.workload) and round_ >= min(warmup, 1):
            runs = [e for e in envs if (e.name, cell.key) not in ctx.skip and not ctx.watch.skips(e)]
            settle(ctx.store, ctx.run_id, schedule, cell, runs, ctx.meta, ctx.progress, rounds - round_, noise)
        began, measured_here = time.monotonic(), False
        for slot in schedule.slots(cell.workload, envs, round_ - warmup):
            measured_here |= _run_slot(ctx, slot, cell, round_, noise)
        if measured_here and round_ >= warmup:  # resumed cells took no time
            clock.add((cell.key, cell.case), time.monotonic() - began)


def _run_slot(ctx: _Run, slot: Slot, cell: Cell, round_: int, noise_facts: dict | None) -> bool:
    """Measure one slot's samples (alone or as a duet) and store them;
    returns whether anything was measured."""
    meta, key, case = ctx.meta, cell.key, cell.case
    # a duet is done when its other side is: both samples are stored together
    if (slot.envs[-1].name, key, case, round_) in ctx.done:
        return False
    envs = [e for e in slot.envs if (e.name, key) not in ctx.skip]
    live = [e for e in envs if not ctx.watch.skips(e)]  # its engine or guest died: --resume measures these
    for _ in range(len(envs) - len(live)):
        ctx.progress.advance()
    if not live:
        return False
    warmup = round_ < meta.warmup
    duet = slot.together and len(live) == 2 and not any(ctx.prepare_failures.get((key, e.name)) for e in live)
    ctx.progress.step(
        f"{round_label(meta, round_)} {key}/{case} in {' with '.join(e.name for e in live)}"
        + (" (duet)" if duet else "")
    )
    if duet:
        try:
            cpus = (slot.cpus[0], slot.cpus[1])
            sides = (cell.workload_in(live[0].name), cell.workload_in(live[1].name))
            takens = run_duet(sides, cell.workload_case, (live[0], live[1]), cpus, noise_facts)
        except EnvironmentError_ as exc:
            for env in live:
                record_failure(ctx.store, ctx.run_id, key, case, env, round_, warmup, f"duet: {exc}"[:500])
                ctx.watch.failed(env, f"{key}/{case}", str(exc))
                ctx.progress.advance()
            return True
        finally:
            ctx.placed.update(e.name for e in live)
        for env, taken in zip(live, takens):
            error = record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, taken)
            if error is not None:
                ctx.watch.failed(env, f"{key}/{case}", error)
            ctx.progress.advance()
        return True
    for env in live:
        problem = ctx.prepare_failures.get((key, env.name))
        if problem is not None:
            record_failure(ctx.store, ctx.run_id, key, case, env, round_, warmup, problem)
        else:
            if env.name in ctx.placed:  # alone again: back where its own spec places it
                env.place(None)
                ctx.placed.discard(env.name)
            taken = take(cell.workload_in(env.name), cell.workload_case, env, noise_facts)
            error = record(ctx.store, ctx.run_id, key, case, cell.workload, env, round_, warmup, taken)
            if error is not None:
                ctx.watch.failed(env, f"{key}/{case}", error)
        ctx.progress.advance()
    return True


def _cleanup_workloads(cells: list[Cell], envs: list[Environment]) -> None:
    """Stop servers and remove inputs the workloads started (a native
    redis-server would outlive the run otherwise); once all cells are done,
    since entries may share an input file."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        planted = planted_of(cells)
        for key, workload in {c.key: c.workload for c in cells}.items():
            for env in envs:
                try:
                    planted.get((key, env.name), workload).cleanup(env)
                except Exception:  # noqa: BLE001 - env.stop() is the backstop
                    pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _teardown(envs: Sequence[Environment | ClientHost], run_id: str) -> list[str]:
    """Stop every environment, then sweep anything labelled with this run
    (a container created just as Ctrl-C arrived). A second Ctrl-C must not
    cut this short, so SIGINT is held off until it is done. Returns what
    could not be stopped (an engine that is down), one line each."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    problems = []
    try:
        for env in envs:
            try:
                env.stop()
            except Exception as exc:  # noqa: BLE001 - one failed stop must not keep others running
                problems.append(f"{getattr(env, 'name', env)}: {' '.join(str(exc).split())[:150]}")
        try:
            clean(run_id)
        except Exception as exc:  # noqa: BLE001 - reported; the next start cleans again
            problems.append(f"clean: {' '.join(str(exc).split())[:150]}")
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return problems


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
