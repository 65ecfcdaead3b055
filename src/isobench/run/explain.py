"""`isobench explain RUN_ID`, before anything runs: the stored run's cells to
explain (its changed primary cells, or the one named), and each explained
environment's follow-up study (run/explainplan.py) ready to run here: the
run's study rebuilt, the settings this host cannot run left out (and said),
a duet where every environment can take part, the rounds the cell took or a
--budget. Every refusal is one line (ExplainError). Runs nothing: `isobench
explain` hands each study to the same run path as `isobench run`."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from isobench.core.numbers import fmt_duration
from isobench.envs.kinds import EnvSpec, kind_of
from isobench.results.attribution import primary_changed_cells
from isobench.results.model import RunData
from isobench.results.primary import primary_keys
from isobench.results.table import build_table
from isobench.run.explainplan import ExplainError, ExplainPlan, Move, Source, build_plan, moved, moves, source_of
from isobench.store.db import Store, StoreError
from isobench.study import Study, StudyError, with_budget

Note = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    """What `isobench explain` was asked (its options)."""

    run: str | None  # an id or a unique prefix; None: the latest run
    cell: str | None = None  # "WORKLOAD/CASE"
    env: str | None = None
    settings: tuple[str, ...] = ()
    factorial: bool = False
    budget: str | None = None
    trust_imported: bool = False


def prepare(store: Store, req: Request, note: Note) -> list[ExplainPlan]:
    """One follow-up plan per explained environment, or ExplainError."""
    if req.factorial and len(req.settings) != 2:
        raise ExplainError(
            "--factorial: name the two settings to cross, --setting A --setting B (an explain whose parts do not "
            "add up names its two strongest)"
        )
    try:
        run = store.load_run(store.resolve(req.run))
        path, text = store.study_of(run.run_id)
    except StoreError as exc:
        raise ExplainError(str(exc)) from None
    _check_source(run, req)
    source = source_of(run.run_id, text, os.path.dirname(os.path.abspath(path)))
    _say_host(run, note)
    return [_plan(source, run, env, cells, req, note) for env, cells in targets(run, req.cell, req.env).items()]


def _check_source(run: RunData, req: Request) -> None:
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    if "explain" in facts:
        explains = (facts.get("explain") or {}).get("explains", "?")
        raise ExplainError(
            f"run {run.run_id} is itself an explain (of run {explains}): explain run {explains} again, "
            "with --cell, --env or --setting to choose"
        )
    if "imported" in facts and not req.trust_imported:
        raise ExplainError(
            f"run {run.run_id} came in through `isobench import`: explain runs its stored study's commands, files "
            "and packages on this host as root; read it first (isobench report), then add --trust-imported"
        )


def _say_host(run: RunData, note: Note) -> None:
    from isobench.host.facts import host_facts

    theirs = (run.host_facts or {}).get("hostname") if isinstance(run.host_facts, dict) else None
    ours = host_facts().get("hostname")
    if theirs and ours and theirs != ours:
        note(
            f"run {run.run_id} was measured on {theirs}; explain measures on this host ({ours}): every figure "
            "of the explain, the whole gap too, is this host's"
        )


def _cell(run: RunData, cell: str) -> tuple[str, str]:
    """--cell WORKLOAD/CASE (or WORKLOAD for a one-case workload) as a cell of the run."""
    cells = list(dict.fromkeys((k.workload, k.case) for k in run.metrics))
    workload, _, case = cell.partition("/")
    if not case:
        cases = [c for w, c in cells if w == workload]
        case = cases[0] if len(cases) == 1 else ""
    if (workload, case) not in cells:
        shown = ", ".join(f"{w}/{c}" for w, c in cells[:12])
        raise ExplainError(f"--cell {cell}: not a cell of run {run.run_id}; write WORKLOAD/CASE, one of: {shown}")
    return workload, case


def targets(run: RunData, cell: str | None, env: str | None) -> dict[str, list[tuple[str, str]]]:
    """Environment -> the cells of it to explain: the changed primary cells
    (Table I's verdicts), those --cell and --env keep; both given: that cell
    whether it changed or not."""
    if env is not None and (env not in run.environments or env == run.baseline):
        others = ", ".join(e for e in run.environments if e != run.baseline)
        raise ExplainError(f"--env {env}: not an environment of run {run.run_id} other than its baseline: {others}")
    chosen = _cell(run, cell) if cell is not None else None
    if chosen is not None and env is not None:
        return {env: [chosen]}
    changed = sorted(primary_changed_cells(run, build_table(run)))
    picked = [(e, (w, c)) for w, c, e in changed if chosen in (None, (w, c)) and env in (None, e)]
    if not picked and changed:
        what = ", ".join(f"{w}/{c} in {e}" for w, c, e in changed[:8])
        raise ExplainError(
            f"--cell, --env: no changed primary cell of run {run.run_id} is that one (changed: {what}); "
            "give both --cell WORKLOAD/CASE and --env ENV to explain another"
        )
    if not picked:
        raise ExplainError(
            f"run {run.run_id} has no changed primary cell: name the one to explain, --cell WORKLOAD/CASE --env ENV"
        )
    out: dict[str, list[tuple[str, str]]] = {}
    for e, c in sorted(picked, key=lambda p: run.environments.index(p[0])):
        out.setdefault(e, []).append(c)
    return out


def rounds_of(run: RunData, env: str, cells: list[tuple[str, str]]) -> int:
    """The rounds the run measured of these cells in ``env`` (the most of any)."""
    keys = [k for k in primary_keys(run) if (k.workload, k.case) in cells]
    return max((len(run.values.get((k, env), [])) for k in keys), default=0)


def runnable(spec: EnvSpec, found: list[Move], note: Note) -> list[Move]:
    """The moves whose variant this host can run (its kind's check), the
    others said and left out."""
    kind, out = kind_of(spec.kind), []
    for m in found:
        problems = kind.check(moved(spec, [m]))
        if problems:
            note(f"{m.label}: not measured: {problems[0][1]}")
        else:
            out.append(m)
    return out


def _plan(
    source: Source, run: RunData, env: str, cells: list[tuple[str, str]], req: Request, note: Note
) -> ExplainPlan:
    study = source.study
    if env not in study.environments:
        raise ExplainError(f"--env {env}: run {run.run_id}'s stored study has no such environment")
    base = study.meta.baseline
    spec = study.environments[env]
    found = runnable(spec, moves(env, spec, base, study.environments[base], req.settings), note)
    rounds = rounds_of(run, env, cells) or study.meta.planned_rounds
    warmup = run.warmup_rounds or study.meta.warmup
    plan = build_plan(source, env, cells, found, rounds=rounds, warmup=warmup, schedule="duet")
    if not _duets(plan):
        plan = build_plan(source, env, cells, found, rounds=rounds, warmup=warmup, schedule="sequential")
    return _budgeted(plan, req.budget) if req.budget is not None else plan


def _duets(plan: ExplainPlan) -> bool:
    """Whether the plan's study can run as a duet here: some table duets
    (or, a user's command, is decided from its warm-up and may: may_duet),
    and nothing (an environment, a workload, too few CPUs) keeps it from one."""
    from isobench.checks.preflight import duet_problems
    from isobench.envs.pinning import side_host, usable_cpus
    from isobench.host.hostinfo import host_info
    from isobench.workloads import WORKLOADS

    study, host = plan.study, host_info()
    half = side_host(host)
    duets = any(WORKLOADS[e.workload](e.params, half).may_duet() for e in study.workloads)
    return duets and not duet_problems(study, host, usable_cpus())


def _budgeted(plan: ExplainPlan, budget: str) -> ExplainPlan:
    """The plan under --budget, refused in one line when the budget cannot
    pay for its first block (one round of every variant at the least)."""
    from isobench.checks.preflight import study_size
    from isobench.host.hostinfo import host_info

    try:
        study = with_budget(plan.study, budget)
    except StudyError as exc:
        raise ExplainError(str(exc)) from None
    size, first = study_size(study, host_info()), study.budget_plan()
    assert first is not None  # a budget was just given
    need = size.seconds_at(first.first)
    if first.budget_s < need:
        n = len(study.environments)
        raise ExplainError(
            f"--budget {budget}: too short for this explain of {plan.env}: its first block is {first.first} rounds "
            f"of each of its {n} environments (the baseline, {plan.env} and {n - 2} variants; one round of them "
            f"all takes about {fmt_duration(size.round_s)} here), about {fmt_duration(need)}; give at least "
            f"{math.ceil(need / 60)}m"
        )
    return dataclasses.replace(plan, study=study)


def asked(store: Store, run_id: str, study: Study, note: Note) -> list[ExplainPlan]:
    """What the study's [explain] asks of its run once measured: for each of
    its environments with a changed primary cell, `isobench explain RUN_ID
    --env ENV` (with its --setting's) as prepare() makes it. An environment
    without one, or one prepare() refuses, is said and left: the run stands."""
    if not study.explain:
        return []
    run = store.load_run(run_id)
    changed = {env for _, _, env in primary_changed_cells(run, build_table(run))}
    plans: list[ExplainPlan] = []
    for env, settings in study.explain.items():
        if env not in changed:
            note(f"explain: {env} has no changed primary cell in run {run_id}: nothing of it to explain")
            continue
        try:
            plans += prepare(store, Request(run_id, env=env, settings=settings), note)
        except ExplainError as exc:
            note(f"explain: {env}: not explained: {exc}")
    return plans


@dataclass(frozen=True)
class Outlook:
    """What a study's [explain] may cost (validate): each environment's
    follow-up were every primary cell of it to change."""

    env: str
    settings: tuple[str, ...]  # the settings it moves
    environments: int  # of its follow-up study: the baseline, the environment, the variants
    estimated_s: float


def outlook(study: Study) -> list[Outlook]:
    """The most the study's [explain] could run after it: each environment's
    follow-up study over every cell of the study, at its rounds (the host's
    checks of each variant are the run's to make, not validate's)."""
    from isobench.checks.preflight import study_size
    from isobench.host.hostinfo import host_info
    from isobench.run.explainplan import moves, source_of
    from isobench.workloads import WORKLOADS

    host, out = host_info(), []
    source = source_of("RUN_ID", study.text, study.base_dir)
    cells = [(e.key, c) for e in study.workloads for c in WORKLOADS[e.workload](e.params, host).cases()]
    base = study.meta.baseline
    for env, settings in study.explain.items():
        found = moves(env, study.environments[env], base, study.environments[base], settings)
        rounds, warmup = study.meta.planned_rounds, study.meta.warmup
        plan = build_plan(source, env, cells, found, rounds=rounds, warmup=warmup, schedule=study.meta.schedule)
        size = study_size(plan.study, host)
        out.append(Outlook(env, tuple(m.setting for m in found), len(plan.study.environments), size.estimated_s))
    return out
