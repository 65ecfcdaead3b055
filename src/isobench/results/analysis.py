"""How a stored run is analysed: the settings its study file gave the
analysis, rounds paired across environments, and one call that turns a set
of (candidate, reference) cells into final verdicts (docs/statistics.md).

Table I, the NAT-vs-host section and compare go through ``judge_cells``
(Table I and compare through ``judge_families``: a run that stores
primaries is judged as two families, its primary cells and the descriptive
rest, each with its own Benjamini-Hochberg correction); ``compare
--overhead`` through ``judge_overhead_cells`` (the same per-run question
Table I asks, then how its answer moved between the runs);
attribution (results/attribution.py) calls ``stats.compare_cell`` and
``verdicts.adjust`` directly, with their defaults (alpha 0.05, ±5%, no
noise floor). Every verdict isobench prints thus comes from the same tests,
the same correction and the same kind of interval."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from isobench.analysis.repetitions import AUTO_TARGET_CI_PCT, schedule_of, sequential_alpha
from isobench.analysis.stats import ALPHA, DEFAULT_TOL_PCT, TEST_NONE, Effect, compare_cell
from isobench.analysis.tworuns import add_between_runs, overhead_change
from isobench.analysis.verdicts import SHOWN_PCT_LOW, Verdict, adjust
from isobench.core import tomlbound
from isobench.results.model import MetricKey, RunData
from isobench.results.numbers import fmt_bound, fmt_pct


@dataclass(frozen=True)
class Settings:
    """What the study file says about its analysis ([study] fields)."""

    tolerance_pct: float = DEFAULT_TOL_PCT  # equivalence margin
    # noise floors, "workload" or "workload.metric" -> % (the more specific wins)
    noise_floor_pct: dict[str, float] = field(default_factory=dict)
    paired: bool = True  # rounds interleaved: same-round samples can be paired
    looks: int = 1  # planned looks of an adaptive run (1 for a fixed run)
    target_ci_pct: float | None = None  # an adaptive run's target half-width; None for a fixed run

    def noise_pct(self, key: MetricKey) -> float:
        floors = self.noise_floor_pct
        return float(floors.get(f"{key.workload}.{key.metric}", floors.get(key.workload, 0.0)))


def settings_of(run: RunData) -> Settings:
    """The run's analysis settings, read from the study text it stored (a
    study stored before these fields existed gets the defaults)."""
    try:
        meta = tomlbound.loads(run.study_text or "").get("study", {})
    except (tomllib.TOMLDecodeError, tomlbound.TomlBoundError):
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    floors = meta.get("noise_floor_pct", {})
    return Settings(
        tolerance_pct=float(meta.get("tolerance_pct", DEFAULT_TOL_PCT)),
        noise_floor_pct={str(k): float(v) for k, v in floors.items()} if isinstance(floors, dict) else {},
        paired=meta.get("order", "interleaved") != "blocked",
        looks=_budget_looks(run) or _looks(meta),
        target_ci_pct=float(meta.get("target_ci_pct", AUTO_TARGET_CI_PCT))
        if meta.get("repetitions") == "auto"
        else None,
    )


def _budget_looks(run: RunData) -> int | None:
    """A budgeted run's planned looks, kept in its facts before its first round
    (a --budget given on the command line is not in the study text)."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    looks = (facts.get("budget") or {}).get("looks") if isinstance(facts.get("budget"), dict) else None
    return looks if isinstance(looks, int) and looks >= 1 else None


def _looks(meta: dict[str, Any]) -> int:
    if meta.get("repetitions") != "auto":
        return 1
    try:
        return schedule_of(meta).looks
    except (TypeError, ValueError):
        return 1


def _paired(run: RunData, key: MetricKey, env: str, ref_env: str) -> list[tuple[float, float, str, int]] | None:
    if not run.rounds.get((key, env)) or not run.rounds.get((key, ref_env)):
        return None
    ref_partners = run.partners.get((key, ref_env), {})
    ref: dict[tuple[int, str | None], float] = {}
    for i, (r, v) in enumerate(zip(run.rounds.get((key, ref_env), []), run.values.get((key, ref_env), []))):
        ref[(r, ref_partners.get(i))] = v
    sides = run.sides.get((key, env), {})
    out = []
    for i, (r, v) in enumerate(zip(run.rounds.get((key, env), []), run.values.get((key, env), []))):
        match = ref.get((r, env), ref.get((r, None)))
        if match is not None:
            out.append((v, match, sides.get(i, ""), r))
    return out


def pairs(run: RunData, key: MetricKey, env: str, ref_env: str) -> list[tuple[float, float]] | None:
    """(env value, ref value) of every round both measured; None when the
    run kept no rounds (built in memory), so nothing can be paired. A duet's
    value pairs with the reference's value from the same duet (its partner
    is env), never with the reference's duet beside another environment."""
    found = _paired(run, key, env, ref_env)
    return None if found is None else [(v, r) for v, r, _, _ in found]


def round_pairs(run: RunData, key: MetricKey, env: str, ref_env: str) -> dict[int, tuple[float, float]]:
    """``pairs`` by the round they were measured in (a duet's: with its own
    partner's value), for contrasts across several environments of one
    round (results/explain.py); empty when nothing can be paired."""
    return {rnd: (v, r) for v, r, _, rnd in _paired(run, key, env, ref_env) or []}


def pairs_and_sides(
    run: RunData, key: MetricKey, env: str, ref_env: str
) -> tuple[list[tuple[float, float]] | None, list[str] | None]:
    """``pairs`` and the CPU set env had in each of their duets (same order;
    None when none of them ran as a duet), from one pass."""
    found = _paired(run, key, env, ref_env)
    if found is None:
        return None, None
    sides = [s for _, _, s, _ in found] if any(s for _, _, s, _ in found) else None
    return [(v, r) for v, r, _, _ in found], sides


def blocked_by_side(run: RunData) -> bool:
    """Whether a duet's paired test blocks by CPU side (stats.log_crossover):
    only for a run whose samples each sat on one CPU set throughout (stored
    before the sides swapped within a sample). Swapping every 0.025 s (0.1 s
    before 2026-11-29) leaves a sample's first side a fraction of a second
    of its seconds: blocking would
    spend a degree of freedom on nothing (docs/statistics.md#duet)."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    record = facts.get("schedule")
    if not isinstance(record, dict) or record.get("name") != "duet":
        return False
    rotate = record.get("rotate_s")
    return not (isinstance(rotate, (int, float)) and not isinstance(rotate, bool) and rotate > 0)


def tested_pairs(
    run: RunData, key: MetricKey, env: str, ref_env: str
) -> tuple[list[tuple[float, float]] | None, list[str] | None]:
    """``pairs_and_sides`` as the test takes them: the sides only where it
    blocks by them (``blocked_by_side``)."""
    found, sides = pairs_and_sides(run, key, env, ref_env)
    return found, sides if blocked_by_side(run) else None


@dataclass(frozen=True)
class Question:
    """One cell to judge: candidate values against reference values."""

    key: MetricKey
    candidate: Sequence[float]
    reference: Sequence[float]
    pairs: Sequence[tuple[float, float]] | None = None  # same-round values; None: unpaired
    sides: Sequence[str] | None = None  # a duet's CPU set of each pair (stats.log_crossover)
    # a raw compare's between-run spread (tau², its df, runs): results/between.py
    between: tuple[float, int, int] | None = None
    env: str = ""  # the candidate's environment, where the caller names it (same_tests)


def judge_cells(questions: Sequence[Question], settings: Settings, looks: int | None = None) -> list[Verdict]:
    """Final verdicts of a set of cells asked together (one table, one
    compare): per-cell log-scale tests, then Benjamini-Hochberg over all of
    them at the alpha the design allows (an adaptive run's looks)."""
    looks = settings.looks if looks is None else looks
    alpha = sequential_alpha(looks, alpha=ALPHA)
    effects = [_effect(q, settings, alpha) for q in questions]
    return adjust(effects, alpha, looks=looks)


def _effect(q: Question, settings: Settings, alpha: float) -> Effect:
    e = compare_cell(
        q.candidate,
        q.reference,
        q.key.higher_is_better,
        pairs=q.pairs if settings.paired else None,
        sides=q.sides if settings.paired else None,
        tol_pct=settings.tolerance_pct,
        noise_pct=settings.noise_pct(q.key),
        alpha=alpha,
    )
    return e if q.between is None else add_between_runs(e, *q.between)


def baseline_question(run: RunData, key: MetricKey, env: str, settings: Settings) -> Question | None:
    """``env`` against the run's baseline in the same run, as Table I asks it:
    paired by round unless the run's order was blocked (``settings`` are the
    run's own). None when either side has no value."""
    return reference_question(run, key, env, run.baseline, settings)


def reference_question(run: RunData, key: MetricKey, env: str, ref_env: str, settings: Settings) -> Question | None:
    """``env`` against ``ref_env`` in the same run, asked as Table I asks a
    cell against its baseline (``baseline_question``): NAT against host
    networking (report/netpairs.py)."""
    vals, ref = run.values.get((key, env)), run.values.get((key, ref_env))
    if not vals or not ref:
        return None
    if not settings.paired:
        return Question(key, vals, ref)
    return Question(key, vals, ref, *tested_pairs(run, key, env, ref_env))


@dataclass(frozen=True)
class OverheadJudgement:
    """One environment's ratio to the baseline in each run, and the verdict on
    how it moved from A to B."""

    within_a: Effect
    within_b: Effect
    verdict: Verdict


def judge_overhead_cells(
    questions: Sequence[tuple[Question, Question]],
    settings: Settings,
    looks: int,
    family: Sequence[str] | None = None,
    between: Sequence[tuple[float, int, int] | None] | None = None,
) -> list[OverheadJudgement]:
    """Verdicts on how each (run A, run B) pair of within-run questions moved:
    each run's log ratio tested as Table I tests it (its pairing was decided
    by ``baseline_question``), ``tworuns.overhead_change`` between the runs,
    then Benjamini-Hochberg at the alpha the design allows, within each
    family (``family``: each pair's PRIMARY, DESCRIPTIVE or "", as
    ``judge_families``; one family over all pairs when None).
    ``settings`` (B's, with any --tolerance) give the margin and noise floors.
    ``between``: each pair's between-run spread of the ratio (tau², df,
    runs; results/between.py) or None, added to its interval."""
    alpha = sequential_alpha(looks, alpha=ALPHA)
    family = list(family) if family is not None else [""] * len(questions)
    if len(family) != len(questions):
        raise ValueError(f"{len(family)} families for {len(questions)} questions")

    def within(q: Question) -> Effect:
        return compare_cell(
            q.candidate,
            q.reference,
            q.key.higher_is_better,
            pairs=q.pairs,
            sides=q.sides,
            tol_pct=settings.tolerance_pct,
            noise_pct=settings.noise_pct(q.key),
            alpha=alpha,
        )

    inner = [(within(qa), within(qb)) for qa, qb in questions]
    spread = list(between) if between is not None else [None] * len(questions)
    changes = [
        overhead_change(ea, eb) if s is None else add_between_runs(overhead_change(ea, eb), *s)
        for (ea, eb), s in zip(inner, spread)
    ]
    verdicts = per_family(changes, family, lambda changes: adjust(changes, alpha, looks=looks))
    return [OverheadJudgement(ea, eb, v) for (ea, eb), v in zip(inner, verdicts)]


# verdict families of a run that stores its primaries (results/primary.py);
# "" is the one family of a run stored before them
PRIMARY = "primary"
DESCRIPTIVE = "descriptive"


def judge_families(
    questions: Sequence[Question],
    settings: Settings,
    family: Sequence[str],
    looks: int | None = None,
) -> list[Verdict]:
    """``judge_cells`` once per family (``family``: each question's,
    PRIMARY, DESCRIPTIVE or ""), verdicts in the order given: the primaries'
    correction counts only the primary cells (m is their number, and their
    intervals narrow accordingly), the descriptive cells are corrected among
    themselves. One family ("" everywhere) is exactly ``judge_cells`` over
    all. A descriptive cell whose test is a primary's of its environment
    (``same_tests``) is not tested again."""
    if len(family) != len(questions):
        raise ValueError(f"{len(family)} families for {len(questions)} questions")
    same = same_tests(questions, family)
    rest = [i for i in range(len(questions)) if i not in same]
    judged = per_family(
        [questions[i] for i in rest], [family[i] for i in rest], lambda asked: judge_cells(asked, settings, looks)
    )
    out = dict(zip(rest, judged))
    alpha = sequential_alpha(settings.looks if looks is None else looks, alpha=ALPHA)
    for i, metric in same.items():
        reason = f"the same test as {metric} (a constant times it, or its reciprocal): not tested again"
        untested = replace(_effect(questions[i], settings, alpha), test=TEST_NONE, reason=reason)
        out[i] = adjust([untested], alpha)[0]
    return [out[i] for i in range(len(questions))]


def same_tests(questions: Sequence[Question], family: Sequence[str]) -> dict[int, str]:
    """The descriptive questions whose test is a primary's of the same workload
    case and environment, each -> that primary's metric: every value, on both
    sides, a constant times the primary's or its reciprocal, sample by sample,
    so its log-ratio test is the primary's, sign aside (compression's real_s
    and throughput_mbs, its size over real_s: issue 55). Counted in the
    descriptive family, it would test the primary again. Only questions
    that name their environment (``Question.env``). Pure."""
    primaries: dict[tuple[str, str, str], list[int]] = {}
    for i, (q, f) in enumerate(zip(questions, family)):
        if f == PRIMARY and q.env:
            primaries.setdefault((q.key.workload, q.key.case, q.env), []).append(i)
    out = {}
    for i, (q, f) in enumerate(zip(questions, family)):
        if f != DESCRIPTIVE or not q.env:
            continue
        found = (j for j in primaries.get((q.key.workload, q.key.case, q.env), []) if proportional(q, questions[j]))
        if (match := next(found, None)) is not None:
            out[i] = questions[match].key.metric
    return out


def proportional(a: Question, b: Question) -> bool:
    """Is every value of A a constant times B's, or times its reciprocal, on
    both sides alike (the same log-ratio test)? Pure."""
    if len(a.candidate) != len(b.candidate) or len(a.reference) != len(b.reference) or len(a.candidate) < 2:
        return False
    xa, xb = [*a.candidate, *a.reference], [*b.candidate, *b.reference]
    if min(xa + xb) <= 0 or not all(map(math.isfinite, xa + xb)):
        return False
    la, lb = [math.log(x) for x in xa], [math.log(x) for x in xb]
    for sign in (1, -1):
        sums = [u + sign * v for u, v in zip(la, lb)]
        if max(sums) - min(sums) <= 1e-9:  # a float's rounding, no more
            return True
    return False


T = TypeVar("T")


def per_family(items: Sequence[T], family: Sequence[str], judge: Callable[[list[T]], list[Verdict]]) -> list[Verdict]:
    """``judge`` (a list of items -> their verdicts, corrected together)
    called once per family, the verdicts returned in the items' order."""
    out: list[Verdict | None] = [None] * len(items)
    for name in dict.fromkeys(family):
        idx = [i for i, f in enumerate(family) if f == name]
        for i, v in zip(idx, judge([items[i] for i in idx])):
            out[i] = v
    return out  # type: ignore[return-value]  # every index belongs to one family


# An upper bound beyond both +999% and ten times the estimated ratio is
# printed as ">" that much: at a few rounds and a strict corrected level the
# exact bound (+4.5e12%) only says "unbounded".
SHOWN_PCT_MAX = 999.0
SHOWN_RATIO_SPAN = 10.0


def interval_text(v: Verdict) -> str:
    """The change with its interval: "−3.1% [−5.0%, −1.2%]"; the point alone
    when the cell could not be tested."""
    if math.isnan(v.low):
        return fmt_pct(v.pct)
    cap = max(SHOWN_PCT_MAX, (SHOWN_RATIO_SPAN * v.effect.ratio - 1) * 100)
    high = f">{fmt_pct(cap)}" if v.pct_high > cap else fmt_bound(v.pct_high)
    # a ratio's bound is positive: "−100%" would say the value may have vanished
    low = f"<{fmt_pct(SHOWN_PCT_LOW)}" if v.pct_low < SHOWN_PCT_LOW else fmt_bound(v.pct_low)
    return f"{fmt_pct(v.pct)} [{low}, {high}]"
