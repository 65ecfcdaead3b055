"""The looks of a run that may stop early: the budget's call on each case at
a look (isobench.analysis.budget) and the adaptive repetitions' rule
(isobench.analysis.repetitions), each read from what the store holds and
recorded in the run's facts so the report can say how the run stopped."""

from __future__ import annotations

import dataclasses
import time

from isobench.analysis.budget import Allocation, Evidence, Plan, allocate, parse_duration
from isobench.analysis.repetitions import NextBlock, next_block, sequential_alpha
from isobench.analysis.stats import ALPHA, compare_cell
from isobench.results.analysis import baseline_question, settings_of
from isobench.results.primary import primary_keys, stores_primaries
from isobench.store.db import Store
from isobench.study import Study, StudyMeta


def next_block_of(store: Store, run_id: str, cells: list, measured: int, meta) -> NextBlock:
    """The adaptive rule at a planned look: every (metric, environment) cell
    of this step's workload cases whose metric is a primary (every metric, for
    a run stored before primaries and resumed), from what the store holds."""
    run = store.load_run(run_id)
    ours = {(c.key, c.case) for c in cells}
    watched = set(primary_keys(run)) if stores_primaries(run) else set(run.metrics)
    values = [v for (key, _env), v in run.values.items() if (key.workload, key.case) in ours and key in watched]
    return next_block(
        values,
        measured,
        meta.adaptive_schedule,
        meta.target_ci_pct,
        what="primary cell" if stores_primaries(run) else "cell",
    )


class Clock:
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


def budget_look(
    store: Store,
    run_id: str,
    cells: list,
    active: set,
    measured: int,
    plan: Plan,
    clock: Clock,
    environments: int,
    tol_pct: float,
) -> Allocation:
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
            effects[case].append(
                compare_cell(
                    q.candidate if q else [],
                    q.reference if q else [],
                    key.higher_is_better,
                    pairs=q.pairs if q else None,
                    sides=q.sides if q else None,
                    tol_pct=tol_pct,
                    noise_pct=settings.noise_pct(key),
                )
            )
    m = max(sum(len(v) for v in effects.values()), 1)
    q_level = sequential_alpha(plan.looks, alpha=ALPHA) / m
    evidence = [
        Evidence(
            case,
            tuple(effects[case]),
            measured,
            clock.round_s(case, ours[case].workload.expected_s(ours[case].workload_case) * environments),
        )
        for case in ours
        if case in active
    ]
    left = plan.budget_s - clock.spent()
    alloc = allocate(evidence, plan, left, q_level, tol_pct)
    facts = store.run_facts(run_id)
    record = facts.setdefault("budget", {})
    record["spent_s"] = round(clock.spent(), 1)
    record.setdefault("looks_taken", []).append({"rounds": measured, "left_s": round(left, 1), "text": alloc.text})
    cases = record.setdefault("cases", {})
    for call in alloc.calls:
        cases[f"{call.case[0]}/{call.case[1]}"] = {
            "state": call.state,
            "rounds": call.rounds,
            "needed": call.needed,
            "why": call.why,
        }
    store.set_run_facts(run_id, facts)
    return alloc


def record_budget_plan(store: Store, run_id: str, plan: Plan) -> None:
    """The plan goes with the run's facts before the first round: the analysis
    reads its looks from there (a --budget on the command line is not in the
    stored study text), and --resume its budget."""
    facts = store.run_facts(run_id)
    record = facts.setdefault("budget", {})
    record.update({"budget_s": plan.budget_s, "points": list(plan.points), "looks": plan.looks})
    store.set_run_facts(run_id, facts)


def record_adaptive(store: Store, run_id: str, step, measured: int, d: NextBlock) -> None:
    """Kept with the run's facts so the report can say how the run stopped."""
    facts = store.run_facts(run_id)
    looks = facts.setdefault("adaptive", {}).setdefault("all" if step is None else str(step), [])
    looks.append(
        {
            "rounds": measured,
            "look": d.look,
            "converged": sum(d.converged),
            "cells": len(d.converged),
            "stop": d.stop,
            "text": d.text,
        }
    )
    store.set_run_facts(run_id, facts)


# A duet's round runs the other environments' samples beside the
# baseline's: n - 1 slots, each as long as its slower side and the filler
# that ends it, where the warm-up ran n samples one at a time.
DUET_SLOT_OVERHEAD = 1.2


def fitted_rounds(
    measure_s: float, warmup_s: float, warmups: int, envs: int, duets: bool, least: int, most: int
) -> int:
    """Measured rounds that fit in ``measure_s`` at the warm-up's pace
    (``warmup_s`` over ``warmups`` rounds of ``envs`` samples each, one at a
    time), at least ``least`` and at most ``most``. Pure."""
    if warmups < 1 or warmup_s <= 0 or envs < 1:
        return least
    per_round = warmup_s / warmups
    if duets and envs > 1:
        per_round *= (envs - 1) / envs * DUET_SLOT_OVERHEAD
    return max(least, min(most, int(measure_s // per_round)))


def fit_rounds(ctx, schedule, step, cells, envs: int, warmup_s: float) -> int:
    """A measure_for study's measured rounds for this step, fitted once to
    its warm-up and kept with the run's facts (--resume measures the same
    rounds); the progress bar grows by the rounds added."""
    meta, key = ctx.meta, "all" if step is None else str(step)
    facts = ctx.store.run_facts(ctx.run_id)
    kept = (facts.get("measure_for") or {}).get(key)
    if isinstance(kept, int) and kept >= 1:
        return kept
    duets = any(schedule.used_for(c.workload, c.case) in ("duet", "auto") for c in cells)
    most = meta.max_repetitions or 100
    n = fitted_rounds(parse_duration(meta.measure_for), warmup_s, meta.warmup, envs, duets, int(meta.repetitions), most)
    facts.setdefault("measure_for", {})[key] = n
    ctx.store.set_run_facts(ctx.run_id, facts)
    more = (n - int(meta.repetitions)) * sum(schedule.samples_per_round(c.workload, envs) for c in cells)
    if more > 0:
        ctx.progress.extend(more)
    ctx.progress.note(f"measure_for {meta.measure_for}: {n} measured rounds fit at the warm-up's pace")
    return n


def with_fitted_rounds(study: Study, facts: dict) -> Study:
    """A resumed measure_for study at the rounds its first attempt fitted
    (fit_rounds kept them in the run's ``facts``): fixed since its warm-up,
    so the plan before it resumes says them, not the study's least (issue
    55: "at 8 rounds" for 71); fit_rounds then returns the kept ones. Any
    other study as it is."""
    fitted = [n for n in (facts.get("measure_for") or {}).values() if isinstance(n, int)]
    if not fitted or study.meta.measure_for is None:
        return study
    meta = StudyMeta.model_validate({**study.meta.model_dump(), "repetitions": max(fitted)})
    return dataclasses.replace(study, meta=meta)


def round_label(meta, round_: int, rounds: int | None = None) -> str:
    """ "round 3/10" (or its budget, or its most rounds); ``rounds``: the
    rounds this run measures, warm-ups included, where measure_for fitted
    them to the warm-up's pace (not the study's repetitions)."""
    if round_ < meta.warmup:
        return "warm-up"
    of = (
        f" (budget {meta.budget})"
        if meta.budget is not None
        else f"/{rounds - meta.warmup if rounds is not None else meta.repetitions}"
        if not meta.adaptive
        else f" (up to {meta.adaptive_schedule.max_rounds})"
    )
    return f"round {round_ - meta.warmup + 1}{of}"
