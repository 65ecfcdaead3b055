"""What a Table I cell's samples warn of: outliers (screened on log values
from 5 rounds, kept and named), a cell whose verdict or estimate rests on one
of them, a slow first round, drift, CPU sides that were not alike, a round's
first sample reading apart from its later ones, what the workload said of
its figure, an adaptive run's cell that did not converge. Never a changed
value."""

from __future__ import annotations

import math

from isobench.analysis.anomalies import (
    Drift,
    Outliers,
    SideAsymmetry,
    SlowFirstRound,
    drift,
    outliers,
    screen,
    side_asymmetry,
    slow_first_round,
)
from isobench.analysis.order import Placed, PositionEffect, position_effect, position_text
from isobench.analysis.repetitions import converged
from isobench.analysis.stats import TEST_WELCH_LOG, compare_cell
from isobench.analysis.verdicts import Verdict, at_level
from isobench.core.numbers import fmt_num
from isobench.results.analysis import interval_text, pairs_and_sides, tested_pairs
from isobench.results.model import ALL_METRICS, MetricKey, RunData


def cell_warnings(
    run: RunData, key: MetricKey, env: str, target_ci_pct: float | None = None, verdict: Verdict | None = None
) -> tuple[str, ...]:
    """Outliers, a slow first round, drift and a round's first sample apart
    (position_warning) in the cell's samples, what the workload said about
    the validity of its figure, and for an adaptive run a cell that did not
    converge (never a changed value); for a compared cell
    (``verdict``) whether it rests on one flagged sample."""
    vals = list(run.values.get((key, env), []))
    rounds = list(run.rounds.get((key, env), range(len(vals))))
    by_round = [v for _, v in sorted(zip(rounds, vals))]
    found: list[Outliers | SlowFirstRound | Drift | SideAsymmetry] = [
        slow_first_round(by_round, key.higher_is_better),
        drift(by_round),
    ]
    positive = bool(vals) and min(vals) > 0
    texts = [screened_text(key, vals, rounds)] if positive else []
    if not positive:  # no logarithm: the raw-scale rule
        found.insert(0, outliers(vals))
    if env != run.baseline:
        pairs, sides = pairs_and_sides(run, key, env, run.baseline)
        if pairs is not None and sides is not None:
            found.append(side_asymmetry(pairs, sides))
    texts = [t for t in texts if t] + [f.text for f in found if f.flagged]
    if position := position_warning(run, key):
        texts.append(position)
    if verdict is not None and (one := rests_on_one(run, key, env, verdict)):
        texts.append(one)
    if target_ci_pct is not None and not converged(vals, target_ci_pct):
        texts.append(f"not converged: the 95% CI is wider than \u00b1{target_ci_pct:g}% after {len(vals)} rounds")
    where = (key.workload, key.case, env)
    return (
        tuple(texts)
        + tuple(run.validity.get((*where, key.metric), ()))
        + tuple(run.validity.get((*where, ALL_METRICS), ()))
    )


def position_warning(run: RunData, key: MetricKey) -> str:
    """The effect of a sample's place in its round (first or later) on a
    case run one sample at a time, said in each of its cells when it is
    large and clear (analysis.order); "" for a duet's cells (a pair's two
    samples ran at once, so its ratio shares their place) and where it
    cannot be told."""
    effect = position_of(run, key)
    return position_text(effect, len(run.environments)) if effect is not None and effect.flagged else ""


def position_of(run: RunData, key: MetricKey) -> PositionEffect | None:
    """The position effect of a cell run one sample at a time (None for a
    duet's cells, and where it cannot be told)."""
    envs = run.environments
    if any(run.partners.get((key, e)) for e in envs):
        return None
    samples = [
        Placed(e, r, i, v)
        for e in envs
        for r, i, v in zip(run.rounds.get((key, e), []), run.sample_ids.get((key, e), []), run.values.get((key, e), []))
    ]
    return position_effect(samples)


def screened_text(key: MetricKey, vals: list[float], rounds: list[int]) -> str:
    """ "1 outlier of 7 values (log modified z > 11, kept): round 1 2971 MB/s,
    3.7× the median", or "" when none is flagged."""
    s = screen(vals)
    if not s.flagged:
        return ""
    unit = f" {key.unit}" if key.unit else ""
    listed = ", ".join(
        f"round {rounds[i]} {fmt_num(vals[i])}{unit}, {_times(r)} the median" for i, r in zip(s.indices, s.ratios)
    )
    k = len(s.indices)
    return f"{k} outlier{'s' if k > 1 else ''} of {len(vals)} values (log modified z > {s.threshold:g}, kept): {listed}"


def _times(ratio: float) -> str:
    return f"{ratio:.1f}\u00d7" if ratio >= 1 else f"1/{1 / ratio:.1f}"


def rests_on_one(run: RunData, key: MetricKey, env: str, verdict: Verdict) -> str:
    """ "rests on one sample: round 1 native 2971 MB/s, 3.7× the median;
    without it +8.4% [...] equivalent" when the cell's verdict, or its
    estimate by more than its margin, changes without its flagged samples
    (either side's, screened over the values its test used); else ""."""
    e = verdict.effect
    if not e.tested:
        return ""
    pairs, sides = tested_pairs(run, key, env, run.baseline)
    if e.test == TEST_WELCH_LOG or not pairs:
        return ""  # unpaired: each side's own outliers are named above
    flagged: list[tuple[int, str, float, float]] = []  # (pair, environment, value, ratio to the median)
    rounds = _pair_rounds(run, key, env)
    for side, who in ((0, env), (1, run.baseline)):
        s = screen([p[side] for p in pairs])
        flagged += [(i, who, pairs[i][side], r) for i, r in zip(s.indices, s.ratios)]
    if not flagged:
        return ""
    drop = {i for i, *_ in flagged}
    kept = [p for i, p in enumerate(pairs) if i not in drop]
    kept_sides = None if sides is None else [s for i, s in enumerate(sides) if i not in drop]
    if len(kept) < 2:
        return ""
    without = compare_cell(
        [c for c, _ in kept],
        [b for _, b in kept],
        key.higher_is_better,
        pairs=kept,
        sides=kept_sides,
        tol_pct=e.tol_pct,
        noise_pct=e.noise_pct,
        alpha=e.alpha,
    )
    other = at_level(without, 1 - verdict.level, e.tol_pct, verdict.m)
    # the estimate "changes" when it moves beyond the margin and the sample
    # made most of the spread (the interval without it is under half as wide)
    moved = abs(other.pct - verdict.pct) > verdict.margin_pct and _width(other) < _width(verdict) / 2
    if other.verdict == verdict.verdict and not moved:
        return ""
    unit = f" {key.unit}" if key.unit else ""
    named = "; ".join(
        f"round {rounds[i] if i < len(rounds) else '?'} {who} {fmt_num(v)}{unit}, {_times(r)} the median"
        for i, who, v, r in flagged
    )
    many = "one sample" if len(flagged) == 1 else f"{len(flagged)} samples"
    return f"rests on {many}: {named}; without it: {interval_text(other)} {other.verdict}"


def _width(v: Verdict) -> float:
    return math.log(v.high / v.low) if v.low > 0 else math.inf


def _pair_rounds(run: RunData, key: MetricKey, env: str) -> list[int]:
    """The round of each of ``tested_pairs``' pairs (the candidate's rounds
    that found a baseline value, in the same order)."""
    ref = run.rounds.get((key, run.baseline), [])
    ref_partners = run.partners.get((key, run.baseline), {})
    have = {(r, ref_partners.get(i)) for i, r in enumerate(ref)}
    return [r for r in run.rounds.get((key, env), []) if (r, env) in have or (r, None) in have]
