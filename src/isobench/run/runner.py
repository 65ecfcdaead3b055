"""Runs a study's matrix: environments × workload cases × rounds.

Each round runs every cell once in every environment, environments
interleaved (in the order of a Williams square's rows, so that over every
square each environment is in each position once and follows each other one
once) so that drift in the machine shows up as spread, not as overhead.
Every sample is stored the moment it exists. A budgeted study (isobench.analysis.budget)
measures, after its first block, only the cases still worth rounds.
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from isobench.host import counters
from isobench.analysis.budget import Allocation, Evidence, Plan, allocate
from isobench.run.clean import clean
from isobench.clienthost import ClientHost
from isobench.checks.doctor import findings_as_facts, judge, read_host
from isobench.envs import make_environment
from isobench.envs.base import Environment
from isobench.envs.kinds import kind_of
from isobench.host.facts import host_facts
from isobench.checks.health import Watch, clean_pending, final_status, remember_leftovers
from isobench.host.hostinfo import host_info
from isobench.host.noise import Noise, step_case
from isobench.analysis.repetitions import NextBlock, next_block, sequential_alpha
from isobench.results.analysis import baseline_question, settings_of
from isobench.results.primary import primary_keys, stores_primaries
from isobench.analysis.stats import ALPHA, compare_cell
from isobench.store.db import Sample, Store, StoreWriteError, now_iso
from isobench.study import Study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import ParseError, Workload, WorkloadError
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


@dataclass(frozen=True)
class Cell:
    key: str  # the study's workload name
    case: str  # as stored: the workload's case, plus ",noise=W" under a noise step
    workload: Workload
    run_case: str = ""  # the workload's own case (what run() is given)
    noise_step: int | None = None

    @property
    def workload_case(self) -> str:
        return self.run_case or self.case


def new_run_id(study: Study) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{study.meta.name}-{secrets.token_hex(2)}"


def williams_row(n: int, row: int) -> list[int]:
    """Row ``row`` of a Williams square over n items: the first row is
    0, 1, n-1, 2, n-2, ...; row i adds i (mod n). For odd n the rows after
    the first n are the first n reversed, so 2n rows balance who follows whom."""
    if n <= 0:
        return []
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    period = n if n % 2 == 0 else 2 * n
    r = row % period
    out = [(x + r % n) % n for x in first]
    return out[::-1] if r >= n else out


def round_order(envs: list[Environment], measured_round: int, order: str) -> list[Environment]:
    """The environments in the order ``measured_round`` runs them (0 is the
    first measured round; warm-up rounds are negative)."""
    if order == "blocked":
        return envs
    return [envs[i] for i in williams_row(len(envs), measured_round)]


def plan(study: Study, host) -> list[Cell]:
    """Every cell of the study; with a [noise] table, every cell once per
    step, steps in order (the runner measures one step's cells together)."""
    cells = []
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        cells.extend(Cell(entry.key, case, workload) for case in workload.cases())
    if study.noise is None:
        return cells
    return [Cell(c.key, step_case(c.case, w), c.workload, c.case, w) for w in study.noise.steps for c in cells]


def by_step(cells: list[Cell]) -> list[tuple[int | None, list[Cell]]]:
    """Cells grouped by noise step, in plan order."""
    groups: dict[int | None, list[Cell]] = {}
    for c in cells:
        groups.setdefault(c.noise_step, []).append(c)
    return list(groups.items())


def needs_image(study: Study) -> bool:
    return any(kind_of(spec.kind).needs_image for spec in study.environments.values())


def run_study(study: Study, store: Store, progress: Progress | None = None,
              image_provider: Callable[[], str] | None = None, resume: str | None = None,
              on_run_id: Callable[[str], None] | None = None, run_id: str | None = None,
              host_noise: dict | None = None) -> str:
    """Run the study to the end (or to Ctrl-C); returns the run id. Whatever
    happens, everything started here is stopped before returning. With
    resume=RUN_ID, continue that run: cells already measured are skipped.
    ``host_noise`` (the noise pilot's figures, measured by the caller before
    this starts) is kept among a new run's host facts."""
    progress = progress or SilentProgress()
    clock = _Clock(time.monotonic())
    host = host_info()
    cells = plan(study, host)
    image = image_provider() if (image_provider and needs_image(study)) else None
    if resume is None:
        run_id = run_id or new_run_id(study)  # a fleet controller chooses the id
        facts = {**host_facts(), "doctor": findings_as_facts(judge(read_host()))}
        if host_noise is not None:
            facts["host_noise"] = host_noise
        store.create_run(run_id, study, facts)
        done: set[tuple] = set()
    else:
        run_id = resume
        done = store.measured_cells(run_id)
        store.reopen_run(run_id)
        clock.spent_before = float((store.run_facts(run_id).get("budget") or {}).get("spent_s") or 0.0)
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
    client = None
    noise = Noise(study.noise, run_id) if study.noise is not None else None
    status = "failed"
    try:
        # server workloads: the client host exists before environments start,
        # so Docker bridge environments can publish on its bridge address
        client = attach_client_host(run_id, [c.workload for c in cells], envs)
        for env in envs:
            progress.note(f"starting {env.name}")
            env.start()
            started.append(env)
            packages = sorted({p for c in cells for p in c.workload.versioned_packages()})
            not_run = {key: reason for (name, key), reason in skip.items() if name == env.name}
            store.set_env_facts(run_id, env.name, {**env.facts(), "tool_versions": env.package_versions(packages),
                                                   **({"unsupported": not_run} if not_run else {})})
        prepare_failures = _prepare(cells, started, progress)
        meta = study.meta
        runnable = len(cells) * len(envs) - sum((e.name, c.key) in skip for c in cells for e in envs)
        budget = study.budget_plan()
        if budget is not None:
            _record_budget_plan(store, run_id, budget)
        progress.start((meta.warmup + (budget.first if budget else meta.planned_rounds)) * runnable - len(done))
        planned: set[tuple] = set()  # (env, workload, case, round) the run must end with an ok sample
        for step, step_cells in by_step(cells):
            noise_facts = None
            if noise is not None and any((e.name, c.key, c.case, r) not in done for r in
                                         range(meta.warmup + meta.schedule.min_rounds)
                                         for c in step_cells for e in started):
                progress.note(f"noise: {study.noise.stressor} stressor, {step} workers")
                noise_facts = noise.start_step(step)
            first_block = budget.first if budget else meta.schedule.min_rounds if meta.adaptive else meta.repetitions
            rounds, first = meta.warmup + first_block, 0
            active = {(c.key, c.case) for c in step_cells}
            ended: dict[tuple[str, str], int] = {}  # case -> rounds (warm-up included) when a budget stopped it
            while True:
                for round_ in range(first, rounds):
                    for cell in step_cells:
                        if (cell.key, cell.case) not in active:
                            continue
                        began, measured_here = time.monotonic(), False
                        for env in round_order(started, round_ - meta.warmup, meta.order):
                            if (env.name, cell.key, cell.case, round_) in done or (env.name, cell.key) in skip:
                                continue
                            if watch.skips(env):  # its engine or guest died: --resume measures these
                                progress.advance()
                                continue
                            warmup, measured_here = round_ < meta.warmup, True
                            progress.step(f"{_round_label(meta, round_)} {cell.key}/{cell.case} in {env.name}")
                            problem = prepare_failures.get((cell.key, env.name))
                            if problem is None:
                                error = _measure(store, run_id, cell, env, round_, warmup, noise_facts)
                                if error is not None:
                                    watch.failed(env, f"{cell.key}/{cell.case}", error)
                            else:
                                _record_failure(store, run_id, cell, env, round_, warmup, problem)
                            progress.advance()
                        if measured_here and round_ >= meta.warmup:  # resumed cells took no time
                            clock.add((cell.key, cell.case), time.monotonic() - began)
                if budget is not None:
                    alloc = _budget_look(store, run_id, step_cells, active, rounds - meta.warmup, budget, clock,
                                         len(started), meta.tolerance_pct)
                    progress.note(f"budget: {alloc.text}")
                    ended.update({c.case: rounds for c in alloc.calls if c.case not in alloc.measure})
                    active = set(alloc.measure)
                    if alloc.stop:
                        break
                    first, rounds = rounds, rounds + alloc.more
                    progress.extend(alloc.more * len(active) * len(started))
                    continue
                if not meta.adaptive:
                    break
                decision = _next_block(store, run_id, step_cells, rounds - meta.warmup, meta)
                progress.note(f"adaptive repetitions: {decision.text}")
                _record_adaptive(store, run_id, step, rounds - meta.warmup, decision)
                if decision.stop:
                    break
                first, rounds = rounds, rounds + decision.more
            planned |= {(e.name, c.key, c.case, r) for c in step_cells for r in range(ended.get((c.key, c.case), rounds))
                        for e in envs if (e.name, c.key) not in skip}
        status = final_status(planned, store.measured_cells(run_id))
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except StoreWriteError as exc:
        status = "interrupted"
        raise StoreWriteError(f"{exc}; the run stopped, every sample before this one is kept in run {run_id}; "
                              f"then `isobench run --resume {run_id}` finishes it") from None
    finally:
        if noise is not None:
            noise.stop()
        _cleanup_workloads(cells, started)
        leftovers = _teardown([*envs, client] if client is not None else envs, run_id)
        if leftovers:
            remember_leftovers(run_id, leftovers)
            progress.note(f"teardown could not finish: {'; '.join(leftovers)[:300]}; the next run's start "
                          "(or `isobench clean`) removes what is left")
        try:
            store.finish_run(run_id, status)
        except Exception:  # noqa: BLE001 - a full disk: `isobench runs` shows the run as died
            pass
    return run_id


def _round_label(meta, round_: int) -> str:
    if round_ < meta.warmup:
        return "warm-up"
    of = (f" (budget {meta.budget})" if meta.budget is not None else f"/{meta.repetitions}" if not meta.adaptive
          else f" (up to {meta.schedule.max_rounds})")
    return f"round {round_ - meta.warmup + 1}{of}"


def _next_block(store: Store, run_id: str, cells: list[Cell], measured: int, meta) -> NextBlock:
    """The adaptive rule at a planned look: every (metric, environment) cell
    of this step's workload cases whose metric is a primary (every metric, for
    a run stored before primaries and resumed), from what the store holds."""
    run = store.load_run(run_id)
    ours = {(c.key, c.case) for c in cells}
    watched = set(primary_keys(run)) if stores_primaries(run) else set(run.metrics)
    values = [v for (key, _env), v in run.values.items() if (key.workload, key.case) in ours and key in watched]
    return next_block(values, measured, meta.schedule, meta.target_ci_pct,
                      what="primary cell" if stores_primaries(run) else "cell")


class _Clock:
    """The budget's clock: seconds spent (an interrupted run's earlier part
    included) and each case's measured seconds per round, every environment."""

    def __init__(self, started: float):
        self.started = started
        self.spent_before = 0.0
        self.case_s: dict[tuple[str, str], list[float]] = {}

    def add(self, case: tuple[str, str], seconds: float) -> None:
        self.case_s.setdefault(case, []).append(seconds)

    def spent(self) -> float:
        return self.spent_before + time.monotonic() - self.started

    def round_s(self, case: tuple[str, str], fallback: float) -> float:
        times = self.case_s.get(case)
        return sum(times) / len(times) if times else fallback


def _budget_look(store: Store, run_id: str, cells: list[Cell], active: set, measured: int, plan: Plan,
                 clock: _Clock, environments: int, tol_pct: float) -> Allocation:
    """The budget's call at a look: every case's primary cells against the
    baseline, tested as Table I tests them, at the strictest level the final
    analysis can use (alpha/K over m primary cells); recorded in the run's facts."""
    run = store.load_run(run_id)
    settings = settings_of(run)
    ours = {(c.key, c.case): c for c in cells}
    effects: dict[tuple[str, str], list] = {case: [] for case in ours}
    for key in primary_keys(run):
        case = (key.workload, key.case)
        if case not in ours:
            continue
        for env in run.environments:
            if env == run.baseline:
                continue
            q = baseline_question(run, key, env, settings)
            effects[case].append(compare_cell(q.candidate if q else [], q.reference if q else [],
                                              key.higher_is_better, pairs=q.pairs if q else None,
                                              tol_pct=tol_pct, noise_pct=settings.noise_pct(key)))
    m = max(sum(len(v) for v in effects.values()), 1)
    q_level = sequential_alpha(plan.looks, alpha=ALPHA) / m
    evidence = [Evidence(case, tuple(effects[case]), measured,
                         clock.round_s(case, ours[case].workload.expected_s(ours[case].workload_case) * environments))
                for case in ours if case in active]
    left = plan.budget_s - clock.spent()
    alloc = allocate(evidence, plan, left, q_level, tol_pct)
    facts = store.run_facts(run_id)
    record = facts.setdefault("budget", {})
    record["spent_s"] = round(clock.spent(), 1)
    record.setdefault("looks_taken", []).append({"rounds": measured, "left_s": round(left, 1), "text": alloc.text})
    cases = record.setdefault("cases", {})
    for call in alloc.calls:
        cases[f"{call.case[0]}/{call.case[1]}"] = {"state": call.state, "rounds": call.rounds,
                                                   "needed": call.needed, "why": call.why}
    store.set_run_facts(run_id, facts)
    return alloc


def _record_budget_plan(store: Store, run_id: str, plan: Plan) -> None:
    """The plan goes with the run's facts before the first round: the analysis
    reads its looks from there (a --budget on the command line is not in the
    stored study text), and --resume its budget."""
    facts = store.run_facts(run_id)
    record = facts.setdefault("budget", {})
    record.update({"budget_s": plan.budget_s, "points": list(plan.points), "looks": plan.looks})
    store.set_run_facts(run_id, facts)


def _record_adaptive(store: Store, run_id: str, step, measured: int, d: NextBlock) -> None:
    """Kept with the run's facts so the report can say how the run stopped."""
    facts = store.run_facts(run_id)
    looks = facts.setdefault("adaptive", {}).setdefault("all" if step is None else str(step), [])
    looks.append({"rounds": measured, "look": d.look, "converged": sum(d.converged),
                  "cells": len(d.converged), "stop": d.stop, "text": d.text})
    store.set_run_facts(run_id, facts)


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


def _prepare(cells: list[Cell], envs: list[Environment], progress: Progress) -> dict[tuple[str, str], str]:
    """Prepare each workload once per environment. A failure fails that
    workload's cells in that environment only; returns why, per (workload, env)."""
    failures = {}
    for key, workload in {c.key: c.workload for c in cells}.items():
        for env in envs:
            progress.note(f"preparing {key} in {env.name}")
            try:
                workload.prepare(env)
            except Exception as exc:  # noqa: BLE001 - any failure fails this workload here, not the study
                failures[(key, env.name)] = workload.hide(f"prepare failed: {exc}")[:500]
                progress.note(f"prepare {key} in {env.name} failed: {workload.hide(str(exc))}")
    return failures


def _measure(store: Store, run_id: str, cell: Cell, env: Environment, round_: int, warmup: bool,
             noise_facts: dict | None = None) -> str | None:
    """Measure one sample and store it; returns why it failed (None: ok)."""
    started_at = now_iso()
    t0 = time.perf_counter()
    try:
        with counters.around(env.counters) as box:  # host + environment deltas -> extra["counters"]
            m = cell.workload.run(cell.workload_case, env)
            box["extra"] = m.extra
        m.extra["units"] = counters.units_of(lambda: cell.workload.units(cell.workload_case, m))
        if noise_facts is not None:
            m.extra["noise"] = noise_facts
        notes = cell.workload.validity(cell.workload_case, m)
        if notes:
            m.extra["validity"] = notes
    except Exception as exc:  # noqa: BLE001 - recorded as a failed sample; the study goes on
        result = getattr(exc, "result", None)
        hide = cell.workload.hide  # the command line and output may carry a server's password
        raw = hide(result.stdout + result.stderr) if result is not None else ""
        status = "timeout" if (result is not None and result.timed_out) else "failed"
        reason = hide(str(exc) if isinstance(exc, (WorkloadError, ParseError)) else f"{type(exc).__name__}: {exc}")
        store.add_sample(Sample(run_id, env.name, cell.key, cell.case, round_, warmup, status, started_at,
                                time.perf_counter() - t0, extra={"noise": noise_facts} if noise_facts else {},
                                raw=raw, error=reason[:500], parser_version=cell.workload.parser_version))
        return reason
    # the parser's version goes with its values: a later parser change is told
    # apart, and `isobench reparse` recomputes them from m.raw
    store.add_sample(Sample(run_id, env.name, cell.key, cell.case, round_, warmup, "ok", started_at,
                            time.perf_counter() - t0, m.values, m.extra, m.raw,
                            parser_version=cell.workload.parser_version))
    return None


def _record_failure(store, run_id, cell, env, round_, warmup, reason: str) -> None:
    store.add_sample(Sample(run_id, env.name, cell.key, cell.case, round_, warmup, "failed", now_iso(), 0.0,
                            error=reason))


def _cleanup_workloads(cells: list[Cell], envs: list[Environment]) -> None:
    """Stop servers and remove inputs the workloads started (a native
    redis-server would outlive the run otherwise); once all cells are done,
    since entries may share an input file."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        for workload in {c.key: c.workload for c in cells}.values():
            for env in envs:
                try:
                    workload.cleanup(env)
                except Exception:  # noqa: BLE001 - env.stop() is the backstop
                    pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _teardown(envs: list[Environment], run_id: str) -> list[str]:
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
