"""Runs a study's matrix: environments × workload cases × rounds.

Each round runs every cell once in every environment, in the slots its
schedule gives (run/schedule.py: one sample at a time in a Williams square's
order, or the baseline beside each other environment at once, a duet); a
cell run one at a time may have rounds of its own after the others' end,
whole periods of that order (StudyMeta.rounds_for).
Every sample is stored the moment it exists. A budgeted or adaptive study
measures, after each block, only what its looks (run/looks.py) still want.
The runner starts, measures, records and stops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from isobench.analysis.order import periods_text
from isobench.checks.doctor import findings_as_facts, judge, read_host
from isobench.checks.health import Watch, clean_pending, final_status, remember_leftovers
from isobench.clienthost import ClientHost
from isobench.core.lifetime import deferred, held, interrupted
from isobench.core.owner import owning
from isobench.core.workspace import own_scratch_roots
from isobench.envs import make_environment
from isobench.envs.base import Environment
from isobench.host.facts import host_facts
from isobench.host.hostinfo import HostInfo, host_info
from isobench.host.noise import Noise
from isobench.images import study_packages
from isobench.run.clean import clean
from isobench.run.duetcalls import restore
from isobench.run.looks import (
    Clock,
    record_budget_plan,
)
from isobench.run.plan import Cell, by_step, needs_image, new_run_id, plan, planted_of
from isobench.run.prepare import ProgramsDiffer, check_same, prepare, programs, with_programs
from isobench.run.rounds import Progress, RunContext, SilentProgress, missing_sides, run_step, slot_sides
from isobench.run.schedule import Schedule, make_schedule
from isobench.run.warmup import WarmupFailed
from isobench.store.db import Store, StoreWriteError, now_iso
from isobench.store.readback import measured_duets
from isobench.study import Study, StudyMeta
from isobench.workloads.base import Workload
from isobench.workloads.server import ServerWorkload


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
    own_scratch_roots()  # root's alone, or refused before anything of the run exists
    host = host_info()
    cells = plan(study, host)
    run_id = resume or run_id or new_run_id(study)  # a fleet controller chooses the id
    # this process owns the run: `isobench clean` leaves all of it while it runs. Its
    # teardown, once begun, holds SIGINT and SIGTERM off until the owner file is gone too
    with contextlib.ExitStack() as ending:
        with owning(run_id), study_packages(p for c in cells for p in c.workload.added_packages()) as added:
            return _run_study(
                study,
                store,
                progress,
                image_provider,
                (resume, on_run_id, run_id),
                host_noise,
                host,
                cells,
                list(added),
                lambda: ending.enter_context(held()),
            )


@dataclass
class _Owned:
    """What a run started, for its teardown to stop."""

    envs: list[Environment] = field(default_factory=list)
    started: list[Environment] = field(default_factory=list)  # appended the moment each is up
    client: ClientHost | None = None

    def all(self) -> list:
        return [*self.envs, self.client] if self.client is not None else list(self.envs)


def _run_study(
    study: Study,
    store: Store,
    progress: Progress | None,
    image_provider: Callable[[], str] | None,
    opening: tuple[str | None, Callable[[str], None] | None, str],
    host_noise: dict | None,
    host: HostInfo,
    cells: list[Cell],
    added: list[str],
    hold_signals: Callable[[], None],
) -> str:
    progress = progress or SilentProgress()
    resume, on_run_id, run_id = opening
    clock = Clock(time.monotonic())
    schedule = make_schedule(study.meta.schedule, study.meta.baseline, study.meta.order)
    image = image_provider() if (image_provider and needs_image(study)) else None
    owned = _Owned()
    noise = Noise(study.noise, run_id) if study.noise is not None else None
    opened, status = False, "failed"
    try:
        # the run's record and its caller's word of it are one step: an interrupt
        # lands before (nothing stored) or after (the run exists, its teardown runs)
        with deferred():
            done = _open_run(study, store, schedule, cells, resume, run_id, host_noise, progress, clock)
            opened = True
            if on_run_id is not None:
                on_run_id(run_id)
        envs = [make_environment(name, spec, run_id, host, image) for name, spec in study.environments.items()]
        owned.envs += envs
        status = _measure(study, store, run_id, resume, schedule, cells, done, added, noise, clock, progress, owned)
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except (ProgramsDiffer, WarmupFailed) as exc:
        status = _stopped_early(store, run_id, resume, study.meta.warmup, exc)
        raise
    except StoreWriteError as exc:
        status = "interrupted"
        raise StoreWriteError(
            f"{exc}; the run stopped, every sample before this one is kept in run {run_id}; "
            f"then `isobench run --resume {run_id}` finishes it"
        ) from None
    finally:
        hold_signals()  # a second signal does not cut the teardown short
        if status == "failed" and interrupted():  # an error the interrupt caused (an import cut short)
            status = "interrupted"
        if opened:
            _finish(store, run_id, status, noise, cells, owned.started, owned.all(), progress)
    return run_id


def _measure(
    study: Study,
    store: Store,
    run_id: str,
    resume: str | None,
    schedule: Schedule,
    cells: list[Cell],
    done: set,
    added: list[str],
    noise: Noise | None,
    clock: Clock,
    progress: Progress,
    owned: _Owned,
) -> str:
    """The opened run's environments started and prepared, its steps
    measured; returns its status (complete or incomplete)."""
    for item in clean_pending(clean):  # what an earlier run's teardown could not remove (engine was down)
        progress.note(f"removed a leftover of an earlier run: {item}")
    skip = study.unsupported()  # (env, workload key) -> why it is never run there
    for (env_name, key), reason in skip.items():
        progress.note(f"{key} is not run in {env_name}: {reason}")
    envs, started = owned.envs, owned.started
    for cell in cells:
        store.define_metrics(run_id, cell.key, cell.case, cell.workload.defined_metrics(cell.workload_case))
    # server workloads: the client host exists before environments start,
    # so Docker bridge environments can publish on its bridge address
    owned.client = attach_client_host(run_id, [c.workload for c in cells], envs)
    env_facts = _start(store, run_id, envs, started, cells, skip, added, progress)
    ctx = _prepared(store, run_id, study.meta, cells, started, env_facts, done, skip, progress)
    if resume is not None:
        restore(store, run_id, cells)  # the duet calls it made
    budget = study.budget_plan()
    if budget is not None:
        record_budget_plan(store, run_id, budget)
    progress.start(_planned_samples(study, schedule, cells, envs, skip, ctx, store.run_facts(run_id)))
    planned: set[tuple] = set()  # (env, workload, case, round) the run must end with an ok sample
    for step, step_cells in by_step(cells):
        planned |= run_step(ctx, schedule, step, step_cells, started, envs, noise, budget, clock)
    # and every duet's two sides, each beside its partner
    return final_status(planned | ctx.planned, store.measured_cells(run_id) | measured_duets(store.db, run_id))


def _planned_samples(
    study: Study,
    schedule: Schedule,
    cells: list[Cell],
    envs: list[Environment],
    skip: dict,
    ctx: RunContext,
    facts: dict,
) -> int:
    """The samples the run will measure (a budget's first block, an adaptive
    run's most rounds), each cell at its own rounds (StudyMeta.rounds_for;
    the rounds measure_for fitted when a resumed run kept them in its
    ``facts``), slot by slot, less those a resumed run has
    (rounds.missing_sides): a duet missing one side measures both, and
    counts both (issue 55: a resumed measure_for run counted "[1/-47]")."""
    meta, budget = study.meta, study.budget_plan()
    fitted, total = facts.get("measure_for") or {}, 0
    for c in cells:
        kept = fitted.get("all" if c.noise_step is None else str(c.noise_step))
        rounds = budget.first if budget else kept if isinstance(kept, int) else meta.rounds_for(c.workload, len(envs))
        for r in range(meta.warmup + rounds):
            for slot in schedule.slots(c.workload, envs, r - meta.warmup):
                runs, together = slot_sides(slot, c.key, skip)
                missing = missing_sides(ctx.done, ctx.paired, runs, together, c.key, c.case, r)
                total += len(runs) if together and missing else len(missing)
    return total


def _stopped_early(store: Store, run_id: str, resume: str | None, warmup: int, exc: Exception) -> str:
    """How a run stopped before its rounds ends: programs that differ
    measured nothing, so a new run leaves no trace and a resumed one is as
    it was; a failed warm-up likewise, unless an earlier step measured
    something (kept incomplete, and the exception told the run that keeps it)."""
    if not isinstance(exc, WarmupFailed):
        return "discard" if resume is None else "interrupted"
    measured = any(r >= warmup for *_, r in store.measured_cells(run_id))
    status = "discard" if resume is None and not measured else "incomplete"
    exc.kept = None if status == "discard" else run_id
    return status


def _open_run(
    study: Study,
    store: Store,
    schedule: Schedule,
    cells: list[Cell],
    resume: str | None,
    run_id: str,
    host_noise: dict | None,
    progress: Progress,
    clock: Clock,
) -> set:
    """A new run's record with its host facts, or a resumed run reopened
    with the cells it has measured and its own leftovers removed first."""
    if resume is None:
        facts = {**host_facts(), "doctor": findings_as_facts(judge(read_host()))}
        if host_noise is not None:
            facts["host_noise"] = host_noise
        facts["schedule"] = schedule_facts(schedule, cells, study.meta, len(study.environments))
        store.create_run(run_id, study, facts)
        return set()
    done = store.measured_cells(resume)
    _note_resume(store, resume)
    clock.spent_before = float((store.run_facts(resume).get("budget") or {}).get("spent_s") or 0.0)
    for item in clean(resume):  # what a killed attempt left: its containers' names are taken (409)
        progress.note(f"removed a leftover of this run's earlier attempt: {item}")
    store.reopen_run(resume)
    return done


def _note_resume(store: Store, run_id: str) -> None:
    """Kept with the run's facts before it reopens: when it was resumed, how
    its last attempt had ended and the samples stored by then, so the report
    says the run was interrupted and resumed, and what each attempt took
    (results/stopping.resume_lines)."""
    row = next((r for r in store.list_runs() if r.run_id == run_id), None)
    facts = store.run_facts(run_id)
    kept = row.samples_ok + row.samples_failed + row.warmups if row else 0
    was = "?" if row is None else "died" if row.status == "running" else row.status  # we hold the lock now
    record = {"at": now_iso(), "was": was, "samples_before": kept}
    store.set_run_facts(run_id, {**facts, "resumed": [*(facts.get("resumed") or []), record]})


def _start(
    store: Store,
    run_id: str,
    envs: list[Environment],
    started: list[Environment],
    cells: list[Cell],
    skip: dict,
    added: list[str],
    progress: Progress,
) -> dict:
    """Start each environment (appended to ``started`` the moment it is up,
    so teardown finds it), give it the study's packages, and keep its facts."""
    env_facts: dict = {}
    packages = sorted({p for c in cells for p in c.workload.versioned_packages()})
    for env in envs:
        progress.note(f"starting {env.name}")
        env.start()
        started.append(env)
        if added:
            env.provide_packages(added, progress.note)
        not_run = {key: reason for (name, key), reason in skip.items() if name == env.name}
        env_facts[env.name] = {
            **env.facts(),
            "tool_versions": env.package_versions(packages),
            "library_versions": env.library_versions(packages),
            **({"unsupported": not_run} if not_run else {}),
        }
        store.set_env_facts(run_id, env.name, env_facts[env.name])
    return env_facts


def _prepared(
    store: Store,
    run_id: str,
    meta: StudyMeta,
    cells: list[Cell],
    started: list[Environment],
    env_facts: dict,
    done: set,
    skip: dict,
    progress: Progress,
) -> RunContext:
    """Prepare every workload in every environment, keep what each runs, and
    stop before the first sample if the baseline's programs differ."""
    workloads, planted = {c.key: c.workload for c in cells}, planted_of(cells)
    prepare_failures = prepare(workloads, started, progress, planted)
    found = programs(workloads, started, skip, planted)  # what each environment runs, kept with its facts
    for name, table in found.items():
        store.set_env_facts(run_id, name, with_programs(env_facts[name], table))
    check_same(workloads, found, meta.baseline, progress)  # before the first sample
    watch = Watch(run_id, progress.note)
    ctx = RunContext(store, run_id, meta, done, skip, watch, progress, prepare_failures)
    ctx.paired = measured_duets(store.db, run_id)  # a resumed run's duet sides, each beside its partner
    return ctx


def _finish(
    store: Store,
    run_id: str,
    status: str,
    noise: Noise | None,
    cells: list[Cell],
    started: list[Environment],
    owned: Sequence,
    progress: Progress,
) -> None:
    """Stop the stressor and the workloads' servers, tear down what the run
    started (noting what could not be), and record how the run ended."""
    if noise is not None:
        noise.stop()
    _cleanup_workloads(cells, started)
    leftovers = _teardown(list(owned), run_id)
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


def schedule_facts(schedule: Schedule, cells: list[Cell], meta: StudyMeta, envs: int) -> dict:
    """Kept with the run: the schedule, a duet's CPU sides, which schedule
    each workload case ran under, and the cases whose rounds were rounded
    up to whole periods of the rotation (``periods``: case -> the sentence
    said before the run, as validate says it)."""
    rounded = {f"{c.key}/{c.case}": meta.rounds_for(c.workload, envs) for c in cells}
    return {
        "name": schedule.name,
        **schedule.facts(),
        "cells": {f"{c.key}/{c.case}": schedule.used_for(c.workload, c.case) for c in cells},
        "periods": {
            case: periods_text(n, meta.planned_rounds, envs) for case, n in rounded.items() if n != meta.planned_rounds
        },
    }


def _cleanup_workloads(cells: list[Cell], envs: list[Environment]) -> None:
    """Stop servers and remove inputs the workloads started (a native
    redis-server would outlive the run otherwise); once all cells are done,
    since entries may share an input file. Not in an environment whose
    stop() discards them all (a container, a guest): there it would only
    delay the teardown, by a command round trip each."""
    planted = planted_of(cells)
    kept = [env for env in envs if not env.discards_contents()]
    for key, workload in {c.key: c.workload for c in cells}.items():
        for env in kept:
            try:
                planted.get((key, env.name), workload).cleanup(env)
            except Exception:  # noqa: BLE001 - env.stop() is the backstop
                pass


def _teardown(envs: Sequence[Environment | ClientHost], run_id: str) -> list[str]:
    """Stop every environment, then sweep anything labelled with this run
    (a container created just as Ctrl-C arrived); run_study holds SIGINT
    and SIGTERM off meanwhile. Returns what could not be stopped (an engine
    that is down), one line each."""
    problems = []
    for env in envs:
        try:
            env.stop()
        except Exception as exc:  # noqa: BLE001 - one failed stop must not keep others running
            problems.append(f"{getattr(env, 'name', env)}: {' '.join(str(exc).split())[:150]}")
    try:
        clean(run_id)
    except Exception as exc:  # noqa: BLE001 - reported; the next start cleans again
        problems.append(f"clean: {' '.join(str(exc).split())[:150]}")
    return problems
