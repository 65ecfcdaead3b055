"""How many rounds would settle a cell, with a stated probability: a run of
n rounds, tested at level 1 - q, comes out changed or equivalent within
±margin at least SETTLE_POWER of the time, whatever the true change,
allowing for the noise estimate's own uncertainty at the rounds it came
from. Pure.

The chance (``settle_chance``). A run of n rounds estimates the log ratio
as m ~ N(delta, sigma²/n), with the interval m ± h, h = t_df(1 - q/2)·s_n/√n
and s_n² ~ sigma²·chi²_df/df at the test's df(n) (n - 1 paired, n - 2
crossover, Welch's for Welch). The cell is changed when |m| > h (the
interval excludes 1: a noise floor only renames some of those equivalent,
resolved either way) and equivalent when lo <= m - h and m + h <= hi,
lo, hi = log(1 -/+ margin/100). It is left inconclusive when m falls in
[-h, h] but outside [lo + h, hi - h]: never when h < hi/2 (the old rule
asked for that width, which every outcome resolves, and so asked for more
rounds than the cell needs: simulated, it resolved 90 to 100% of cells,
docs/statistics.md#three-verdicts).

sigma is not known, only the observed SD s from df_obs degrees of freedom.
The chance is averaged over sigma's posterior under the usual 1/sigma
prior, sigma² = df_obs·s²/chi²_df_obs (so s_n²/s² ~ F(df, df_obs)), not
taken at an upper confidence bound of sigma: 80% at an 80% bound would be
two 80% margins stacked (about 95%), this is 80% in all. The two chi²
variables are integrated by Gauss-Legendre over their quantiles (the
integrand is a probability, bounded, so the heavy tail of a few rounds'
sigma costs nothing); the true change is the worst one, searched on
[0, hi/2] (the inconclusive set is widest around hi/2, where the changed
and the equivalent outcome meet) and at lo/2, lo/4.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from isobench.analysis.stats import t_critical
from isobench.analysis.summary import scipy_special

SETTLE_POWER = 0.8  # the suggested rounds settle the cell 4 times in 5
# Beyond this many rounds per side, "inconclusive" says ">1000": the number
# only tells the reader the question cannot be settled on this host.
ROUNDS_NEEDED_CAP = 1000
SETTLE_TEXT = "4 times in 5"  # SETTLE_POWER in words, as every suggestion says it

_NODES = 24  # per chi² variable: the chance within 0.001 of 64 nodes
_u, _w = np.polynomial.legendre.leggauss(_NODES)
_QUANTILES = (_u + 1) / 2
_WEIGHTS = np.outer(_w / 2, _w / 2)


def settle_chance(
    noise_sd: float,
    df_obs: float,
    q: float,
    margin_pct: float,
    n: int,
    df_factor: float = 1.0,
    df_lost: float = 0.0,
) -> float:
    """The chance that a run of ``n`` rounds at level 1 - q resolves the
    cell (changed, or equivalent within ±margin) at the worst true change,
    given the observed per-round SD ``noise_sd`` on ``df_obs`` degrees of
    freedom (the module docstring)."""
    df = df_factor * (n - 1) - df_lost
    if not df > 0 or margin_pct <= 0:
        return 0.0
    if noise_sd == 0:
        return 1.0
    c = float(t_critical(q, df))
    if not math.isfinite(c):
        return 0.0
    special = scipy_special()
    # sigma at the posterior's quantiles (exactly s when df_obs is infinite), and s_n/sigma
    sigma = noise_sd * (np.sqrt(df_obs / special.chdtri(df_obs, _QUANTILES)) if math.isfinite(df_obs) else 1.0)
    se = np.broadcast_to(sigma, _QUANTILES.shape)[:, None] / math.sqrt(n)
    h = c * se * np.sqrt(special.chdtri(df, _QUANTILES) / df)[None, :]
    lo, hi = math.log1p(-margin_pct / 100), math.log1p(margin_pct / 100)
    # the inconclusive set as two disjoint pieces: [-h, e1] and [s2, h]
    e1 = np.clip(lo + h, -h, h)
    s2 = np.clip(hi - h, e1, h)
    deltas = np.concatenate(([lo / 2, lo / 4], np.linspace(0.0, hi / 2, 9)))[:, None, None]

    def below(x: np.ndarray) -> np.ndarray:
        return np.asarray(special.ndtr((x - deltas) / se))

    inconclusive = below(e1) - below(-h) + below(h) - below(s2)
    return 1.0 - float(np.einsum("dab,ab->d", inconclusive, _WEIGHTS).max())


@functools.lru_cache(maxsize=8192)
def rounds_to_settle(
    noise_sd: float,
    df_obs: float,
    q: float,
    margin_pct: float,
    df_factor: float = 1.0,
    df_lost: float = 0.0,
    cap: int = ROUNDS_NEEDED_CAP,
    power: float = SETTLE_POWER,
    now: int = 0,
) -> int | None:
    """The smallest n whose ``settle_chance`` is at least ``power``: exact,
    the chance grows with n, and never fewer than ``now`` + 1 (the rounds
    the cell has: unequal sides make the equal-n figure approximate). cap + 1
    beyond the cap; None when the margin is 0 or the noise unknown. Cached:
    a table's reports ask for the same cells again."""
    if margin_pct <= 0 or math.isnan(noise_sd) or not df_obs > 0:
        return None
    least = 2 + math.ceil(df_lost)  # the fewest rounds the test has a df at

    def settles(n: int) -> bool:
        return settle_chance(noise_sd, df_obs, q, margin_pct, n, df_factor, df_lost) >= power

    # the bracket: what settles the cell whatever the estimate (the interval
    # narrower than half the margin) settles it at least as often, so the
    # smallest n lies at or below that rule's; about 0.7 of it, as a rule
    lo, hi = least - 1, max(_width_rounds(noise_sd, df_obs, q, margin_pct, df_factor, df_lost, cap, power), least)
    while not settles(hi):  # only where the quadrature falls short of that bound
        if hi >= cap:
            return max(cap, now) + 1
        lo, hi = hi, min(2 * hi, cap)
    guess = max(least, round(0.7 * hi))
    if lo < guess < hi:
        lo, hi = (lo, guess) if settles(guess) else (guess, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if settles(mid) else (mid, hi)
    return max(hi, now + 1)


def _width_rounds(
    noise_sd: float,
    df_obs: float,
    q: float,
    margin_pct: float,
    df_factor: float,
    df_lost: float,
    cap: int,
    power: float,
) -> int:
    """The smallest n whose interval is narrower than half the margin with
    probability ``power`` (s_n²/s² ~ F(df, df_obs)), cap at most: where any
    outcome resolves."""
    target = math.log1p(margin_pct / 100) / 2
    special = scipy_special()

    def narrow(n: int) -> bool:
        df = df_factor * (n - 1) - df_lost
        if not df > 0:
            return False
        if noise_sd == 0:
            return True
        ratio = (target * math.sqrt(n) / (float(t_critical(q, df)) * noise_sd)) ** 2
        return bool(special.fdtr(df, df_obs, ratio) >= power) if math.isfinite(df_obs) else ratio >= 1

    lo, hi = 2 + math.ceil(df_lost) - 1, cap
    if not narrow(hi):
        return cap
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if narrow(mid) else (mid, hi)
    return hi


def rounds_to_resolve(
    noise_sd: float,
    q: float,
    margin_pct: float,
    df_factor: float = 1.0,
    cap: int = ROUNDS_NEEDED_CAP,
    df_lost: float = 0.0,
) -> int | None:
    """The smallest n whose interval at level 1 - q has half-width
    t_df(n)(1 - q/2)·noise_sd/sqrt(n) < log(1 + margin/100)/2, with
    df(n) = df_factor·(n - 1) - df_lost, the test's own (a paired test: n
    rounds, n - 1 df; the crossover n - 2).

    Why half the margin: then an interval that contains 1 lies inside
    ±margin (equivalent) and one that does not is changed, so no outcome is
    left inconclusive. log(1 + margin) is the narrower side of the ±margin
    band on the log scale. Returns cap + 1 beyond the cap, None when the
    margin is 0 or the noise unknown (nan). The observed noise taken as
    exact: a budgeted run's own call at a look (``budget.cell_needs``); what
    a suggestion names is ``rounds_to_settle``'s.
    """
    if margin_pct <= 0 or math.isnan(noise_sd):
        return None
    target = math.log1p(margin_pct / 100) / 2

    least = 2 + math.ceil(df_lost)  # the fewest rounds the test has a df at

    def half(n: int) -> float:  # decreasing in n: bisection finds the smallest n
        return float(t_critical(q, df_factor * (n - 1) - df_lost)) * noise_sd / math.sqrt(n)

    if half(cap) >= target:
        return cap + 1
    lo, hi = least - 1, cap  # half(lo) >= target (or lo below the least), half(hi) < target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if half(mid) < target else (mid, hi)
    return max(hi, least)
