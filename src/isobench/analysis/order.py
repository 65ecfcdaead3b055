"""The order of a round's samples. Sequential rounds follow a Williams
square's rows (run/schedule.py); this module holds the rotation's period, a
fixed run's rounds in whole periods, and the effect of a sample's position
in its round (first or later) on its value. Pure functions
(docs/statistics.md#order)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isobench.analysis.summary import scipy_stats
from isobench.core.numbers import fmt_bound, fmt_pct

# A position effect is warned of from 2% at p < 0.05. In balanced rounds it
# only widens the cells' spread; in unbalanced ones it moves an environment's
# ratio by the effect times its surplus of first places over the rounds (10
# rounds of a 6-round period: one in ten), so under 2% it moves a ratio by
# under 0.2%, far inside the default ±5% tolerance. At p < 0.05 noise alone
# warns of one sequential case in 20 (and only of those 2% or more).
POSITION_MIN_PCT = 2.0
POSITION_ALPHA = 0.05
POSITION_MIN_DF = 2  # residual degrees of freedom for an interval worth printing
# Whole periods may make a fixed run at most half again as long as its author
# asked: 10 rounds of 3 environments become 12, 5 become 6; 3 rounds of 5
# (a 10-round period) stay 3, and the position warning says if it mattered.
PERIODS_MAX_GROWTH = 1.5


def rotation_period(envs: int) -> int:
    """Rounds after which the Williams rows repeat: n for an even number of
    environments, 2n for an odd one (its second n rows reversed balance who
    follows whom); 1 for one environment."""
    if envs <= 1:
        return 1
    return envs if envs % 2 == 0 else 2 * envs


def rounds_in_periods(rounds: int, envs: int) -> int:
    """``rounds`` rounded up to whole periods of the rotation over ``envs``."""
    period = rotation_period(envs)
    return math.ceil(rounds / period) * period


def balanced_rounds(rounds: int, envs: int) -> int:
    """``rounds_in_periods``, unless that is more than PERIODS_MAX_GROWTH
    times ``rounds``: then ``rounds``."""
    whole = rounds_in_periods(rounds, envs)
    return whole if whole <= PERIODS_MAX_GROWTH * rounds else rounds


def periods_text(rounds: int, planned: int, envs: int) -> str:
    """ "12 rounds, not 10: whole periods of the 3-environment rotation (6
    rounds each)"."""
    return (
        f"{rounds} rounds, not {planned}: whole periods of the {envs}-environment rotation "
        f"({rotation_period(envs)} rounds each)"
    )


@dataclass(frozen=True)
class Placed:
    """One sample of a cell: its environment, round, place in the run's
    order of samples (any increasing key: the store's sample id) and value."""

    env: str
    round: int
    order: int
    value: float


@dataclass(frozen=True)
class PositionEffect:
    """A round's first sample against its later ones, in percent of the later
    ones' value, with its 95% interval and two-sided p."""

    pct: float
    low_pct: float
    high_pct: float
    p: float
    rounds: int
    firsts: dict[str, int]  # environment -> the rounds it was first in

    @property
    def flagged(self) -> bool:
        return abs(self.pct) >= POSITION_MIN_PCT and self.p < POSITION_ALPHA

    @property
    def balanced(self) -> bool:
        """Was every environment first equally often?"""
        return len(set(self.firsts.values())) == 1


def first_flags(samples: Sequence[Placed]) -> list[bool]:
    """Whether each sample was its round's first (the lowest order there)."""
    first: dict[int, int] = {}
    for s in samples:
        first[s.round] = min(first.get(s.round, s.order), s.order)
    return [first[s.round] == s.order for s in samples]


def position_effect(samples: Sequence[Placed]) -> PositionEffect | None:
    """Least squares of log value ~ environment + first (a 0/1 column), the
    first column's coefficient as the effect (t interval and p on the
    residual degrees of freedom). None where it cannot be told apart: a
    value not positive, position confounded with environment (one always
    first: the blocked order), or under POSITION_MIN_DF residual df."""
    if not samples or min(s.value for s in samples) <= 0:
        return None
    envs = list(dict.fromkeys(s.env for s in samples))  # in the order given
    flags = first_flags(samples)
    x = np.array([[float(s.env == e) for e in envs] + [float(f)] for s, f in zip(samples, flags)])
    y = np.log([s.value for s in samples])
    df = len(samples) - x.shape[1]
    if df < POSITION_MIN_DF or np.linalg.matrix_rank(x) < x.shape[1]:
        return None
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    se = math.sqrt(float(resid @ resid) / df * float(np.linalg.inv(x.T @ x)[-1, -1]))
    if not se > 0:
        return None
    t = scipy_stats().t
    half = float(t.ppf(0.975, df)) * se
    effect = float(beta[-1])
    p = float(2 * t.sf(abs(effect) / se, df))
    firsts = {e: sum(f for s, f in zip(samples, flags) if s.env == e) for e in envs}
    pct = [math.expm1(v) * 100 for v in (effect, effect - half, effect + half)]
    return PositionEffect(pct[0], pct[1], pct[2], p, len({s.round for s in samples}), firsts)


def position_text(e: PositionEffect, envs: int) -> str:
    """The warning: the effect, and whether the rounds put every
    environment first equally often (``envs``: the rotation's environments)."""
    head = (
        f"position: a round's first sample read {fmt_pct(e.pct)} [{fmt_bound(e.low_pct)}, {fmt_bound(e.high_pct)}] "
        f"against its later ones (p = {e.p:.2g})"
    )
    if e.balanced:
        (k,) = set(e.firsts.values())
        return f"{head}; rounds are balanced: each environment was first in {k} of the {e.rounds}"
    counts = ", ".join(f"{env} {k}" for env, k in e.firsts.items())
    return (
        f"{head}; not balanced: {e.rounds} rounds of a {rotation_period(envs)}-round period (first: {counts}), "
        "so the environments' ratios carry part of it"
    )
