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

import signal
import threading
import time
from collections.abc import Callable, Sequence

from isobench.analysis.order import periods_text
from isobench.checks.doctor import findings_as_facts, judge, read_host
from isobench.checks.health import Watch, clean_pending, final_status, remember_leftovers
from isobench.clienthost import ClientHost
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
from isobench.run.rounds import Progress, RunContext, SilentProgress, run_step
from isobench.run.schedule import Schedule, make_schedule
from isobench.run.warmup import WarmupFailed
from isobench.store.db import Store, StoreWriteError, now_iso
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
    # this process owns the run: `isobench clean` leaves all of it while it runs
    with owning(run_id), study_packages(p for c in cells for p in c.workload.added_packages()) as added:
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
    run_id: str,
    host_noise: dict | None,
    host: HostInfo,
    cells: list[Cell],
    added: list[str],
) -> str:
    progress = progress or SilentProgress()
    clock = Clock(time.monotonic())
    schedule = make_schedule(study.meta.schedule, study.meta.baseline, study.meta.order)
    image = image_provider() if (image_provider and needs_image(study)) else None
    run_id, done = _open_run(study, store, schedule, cells, resume, run_id, host_noise, progress, clock)
    if on_run_id is not None:
        on_run_id(run_id)
    for item in clean_pending(clean):  # what an earlier run's teardown could not remove (engine was down)
        progress.note(f"removed a leftover of an earlier run: {item}")
    skip = study.unsupported()  # (env, workload key) -> why it is never run there
    for (env_name, key), reason in skip.items():
        progress.note(f"{key} is not run in {env_name}: {reason}")
    envs = [make_environment(name, spec, run_id, host, image) for name, spec in study.environments.items()]
    for cell in cells:
        store.define_metrics(run_id, cell.key, cell.case, cell.workload.defined_metrics(cell.workload_case))
    started: list[Environment] = []
    client: ClientHost | None = None
    noise = Noise(study.noise, run_id) if study.noise is not None else None
    status = "failed"
    try:
        # server workloads: the client host exists before environments start,
        # so Docker bridge environments can publish on its bridge address
        client = attach_client_host(run_id, [c.workload for c in cells], envs)
        env_facts = _start(store, run_id, envs, started, cells, skip, added, progress)
        ctx = _prepared(store, run_id, study.meta, cells, started, env_facts, done, skip, progress)
        if resume is not None:
            restore(store, run_id, cells)  # the duet calls it made
        budget = study.budget_plan()
        if budget is not None:
            record_budget_plan(store, run_id, budget)
        progress.start(_planned_samples(study, schedule, cells, envs, skip, done, store.run_facts(run_id)))
        planned: set[tuple] = set()  # (env, workload, case, round) the run must end with an ok sample
        for step, step_cells in by_step(cells):
            planned |= run_step(ctx, schedule, step, step_cells, started, envs, noise, budget, clock)
        status = final_status(planned, store.measured_cells(run_id))
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
        _finish(store, run_id, status, noise, cells, started, [*envs, client] if client is not None else envs, progress)
    return run_id


def _planned_samples(
    study: Study, schedule: Schedule, cells: list[Cell], envs: list[Environment], skip: dict, done: set, facts: dict
) -> int:
    """The samples the run will measure (a budget's first block, an adaptive
    run's least rounds), each cell at its own rounds (StudyMeta.rounds_for;
    the rounds measure_for fitted when a resumed run kept them in its
    ``facts``), counted slot by slot as run/rounds.py measures them: a
    resumed run's slot whose last sample is stored is not measured again
    (issue 55: a resumed measure_for run counted "[1/-47]")."""
    meta, budget = study.meta, study.budget_plan()
    fitted, total = facts.get("measure_for") or {}, 0
    for c in cells:
        kept = fitted.get("all" if c.noise_step is None else str(c.noise_step))
        rounds = budget.first if budget else kept if isinstance(kept, int) else meta.rounds_for(c.workload, len(envs))
        for r in range(meta.warmup + rounds):
            for slot in schedule.slots(c.workload, envs, r - meta.warmup):
                if (slot.envs[-1].name, c.key, c.case, r) not in done:
                    total += sum((e.name, c.key) not in skip for e in slot.envs)
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
) -> tuple[str, set]:
    """A new run's record with its host facts, or a resumed run reopened
    with the cells it has measured and its own leftovers removed."""
    if resume is None:
        facts = {**host_facts(), "doctor": findings_as_facts(judge(read_host()))}
        if host_noise is not None:
            facts["host_noise"] = host_noise
        facts["schedule"] = schedule_facts(schedule, cells, study.meta, len(study.environments))
        store.create_run(run_id, study, facts)
        return run_id, set()
    done = store.measured_cells(resume)
    _note_resume(store, resume)
    store.reopen_run(resume)
    clock.spent_before = float((store.run_facts(resume).get("budget") or {}).get("spent_s") or 0.0)
    for item in clean(resume):  # what a killed attempt left: its containers' names are taken (409)
        progress.note(f"removed a leftover of this run's earlier attempt: {item}")
    return resume, done


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
    return RunContext(store, run_id, meta, done, skip, watch, progress, prepare_failures)


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
        "cells": {f"{c.key}/{c.case}": schedule.used_for(c.workload) for c in cells},
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
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        planted = planted_of(cells)
        kept = [env for env in envs if not env.discards_contents()]
        for key, workload in {c.key: c.workload for c in cells}.items():
            for env in kept:
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
