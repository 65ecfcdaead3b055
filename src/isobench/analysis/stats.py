"""Statistics of repeated measurements: pure functions, no I/O.

What one cell measured: ``summarize`` (n, mean, median, sd, CV, Student-t
95% CI of the mean), in ``isobench.analysis.summary`` and re-exported here.

How a candidate differs from the baseline, per cell: ``compare_cell`` (the
current API, explained in docs/statistics.md). It works on log values, so
the change is a ratio of geometric means and its interval is always
positive: with rounds paired (same round, interleaved), a one-sample t-test
on the per-round log ratios ("paired"); otherwise Welch's t-test on the logs
("welch-log"). The p-value and the interval (``interval``) come from the
same estimate, standard error and degrees of freedom, so "the interval
excludes 1" and "p < 1 - level" are the same statement. How such a
within-run ratio moved between two runs, and the between-run spread added to
a compare of two runs: ``isobench.analysis.tworuns``. Verdicts over a
whole table (Benjamini-Hochberg, changed / equivalent / inconclusive, the
regression gate) live in ``isobench.analysis.verdicts``; outlier, slow-first-round
and drift warnings in ``isobench.analysis.anomalies``; the adaptive repetition rule
in ``isobench.analysis.repetitions``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from isobench.analysis.summary import Summary, centre_of, ci_halfwidth_pct, finite_array, scipy_special, summarize

ALPHA = 0.05
__all__ = ["Summary", "centre_of", "ci_halfwidth_pct", "summarize"]  # re-exported: one cell's summary


# -- log-scale per-cell comparison (the current API) ------------------------------

DEFAULT_TOL_PCT = 5.0  # equivalence margin (± % of the baseline) when the study sets none

TEST_PAIRED = "paired"  # one-sample t on per-round log ratios
TEST_WELCH_LOG = "welch-log"  # Welch's t on the log values of both sides
# a duet's paired log ratios blocked by the CPU set (log_crossover), n - 2 df
TEST_CROSSOVER = "paired-crossover"
TEST_NONE = "none"  # not tested; Effect.reason says why


@dataclass(frozen=True)
class TTest:
    """A t-test on the log scale: the estimated log ratio, its standard error,
    degrees of freedom and two-sided p. Arrays from the vectorised helpers
    (one entry per cell), 0-d arrays for one cell."""

    estimate: np.ndarray
    se: np.ndarray
    df: np.ndarray
    p: np.ndarray


def _var1(x: np.ndarray) -> np.ndarray:
    """Sample variance along the last axis, exactly 0 for constant rows (the
    computed one can be rounding residue that looks like real, tiny noise)."""
    v = np.var(x, axis=-1, ddof=1)
    return np.where(np.ptp(x, axis=-1) == 0, 0.0, v)


def _mean1(x: np.ndarray) -> np.ndarray:
    """Mean along the last axis, exactly the value for constant rows: the mean
    of three copies of log(7) can differ from that of four by an ulp, which
    would make two constant, equal samples "certainly different"."""
    return np.where(np.ptp(x, axis=-1) == 0, x[..., 0], np.mean(x, axis=-1))


def t_pvalue(estimate: ArrayLike, se: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Two-sided p of estimate/se against Student's t with df, vectorised.

    se == 0 means no noise at all: an estimate of exactly 0 cannot differ
    (p = 1), any other is certain (p = 0), where scipy would give nan or a
    precision warning."""
    est, se, df = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (estimate, se, df)))
    noisy = se > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(est) / np.where(noisy, se, 1.0)
        p = 2 * scipy_special().stdtr(np.where(noisy, df, 1.0), -t)  # t.sf(t, df), a ufunc: 100x cheaper
    return np.where(noisy, np.minimum(p, 1.0), np.where(est == 0, 1.0, 0.0))


def log_welch(log_c: ArrayLike, log_b: ArrayLike) -> TTest:
    """Welch's t-test of mean(log_c) - mean(log_b) along the last axis.

    Vectorised: leading axes are independent cells (the calibration benchmark
    runs thousands of compares at once through this same code). Needs at
    least 2 values per side. When both sides are constant the df is
    irrelevant (se is 0) and set to the pooled n_c + n_b - 2."""
    lc, lb = np.asarray(log_c, dtype=float), np.asarray(log_b, dtype=float)
    nc, nb = lc.shape[-1], lb.shape[-1]
    vc, vb = _var1(lc) / nc, _var1(lb) / nb
    se2 = vc + vb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2**2 / (vc**2 / (nc - 1) + vb**2 / (nb - 1))
    df = np.where(se2 > 0, df, nc + nb - 2.0)
    est = _mean1(lc) - _mean1(lb)
    se = np.sqrt(se2)
    return TTest(est, se, df, t_pvalue(est, se, df))


def log_paired(log_ratios: ArrayLike) -> TTest:
    """One-sample t-test of the per-round log ratios against 0, along the
    last axis (vectorised like ``log_welch``). Needs at least 2 rounds."""
    d = np.asarray(log_ratios, dtype=float)
    k = d.shape[-1]
    est = _mean1(d)
    se = np.sqrt(_var1(d) / k)
    df = np.full(est.shape, k - 1.0)
    return TTest(est, se, df, t_pvalue(est, se, df))


def log_crossover(log_ratios: Sequence[float] | np.ndarray, sides: Sequence[str]) -> TTest | None:
    """A duet's paired log ratios blocked by the CPU set the candidate ran on
    (a two-period crossover, the period being the side): the estimate is the
    mean of the two sides' means, so a set that is systematically faster
    cancels instead of inflating the spread; the se comes from the pooled
    variance within sides, n - 2 df. None unless both sides hold 2 or more."""
    d = np.asarray(log_ratios, dtype=float)
    s = np.asarray(sides)
    groups = [d[s == v] for v in np.unique(s)]
    if len(groups) != 2 or min(g.size for g in groups) < 2:
        return None
    a, b = groups
    df = a.size + b.size - 2.0
    pooled = (float(np.sum((a - a.mean()) ** 2)) + float(np.sum((b - b.mean()) ** 2))) / df
    est = np.asarray((a.mean() + b.mean()) / 2)
    se = np.asarray(math.sqrt(pooled * (1 / a.size + 1 / b.size) / 4))
    dfs = np.asarray(df)
    return TTest(est, se, dfs, t_pvalue(est, se, dfs))


@dataclass(frozen=True)
class Effect:
    """One cell: how the candidate differs from the baseline, on the log scale.

    ``ratio`` is the ratio of geometric means (paired: exp of the mean
    per-round log ratio), ``pct`` the change of the value in percent, and
    ``overhead_pct`` the same signed by the metric's direction: positive means
    worse than the baseline (lower throughput, higher latency), so a halved
    throughput is +50% and a doubled latency +100%.

    ``log_ratio``, ``se`` and ``df`` define both the test (``p``, raw and
    two-sided, before any correction) and every interval (``interval``).
    ``noise_sd``, ``df_factor`` and ``df_lost`` describe the noise per round so
    that the rounds needed for a given precision can be predicted: at n rounds
    per side the standard error would be noise_sd / sqrt(n) with
    df_factor * (n - 1) - df_lost degrees of freedom (the test's own).

    ``test`` is "none" when the data cannot be tested (n < 2, values <= 0,
    non-finite values); ``reason`` then says why, and the test fields are nan.
    """

    test: str  # paired | paired-crossover | welch-log | none
    reason: str  # why "none", or why pairs given were not used; "" otherwise
    higher_is_better: bool
    candidate: Summary  # of the raw values, for the mean [sd] cell
    baseline: Summary
    n_c: int
    n_b: int
    n_pairs: int  # rounds used by the paired test; 0 for Welch
    ratio: float
    pct: float
    overhead_pct: float
    log_ratio: float
    se: float
    df: float
    p: float
    noise_sd: float
    df_factor: float
    tol_pct: float  # equivalence margin, ± % of the baseline
    noise_pct: float  # noise floor, see isobench.analysis.verdicts
    alpha: float
    # The geometric means whose quotient is ``ratio``, over the values the
    # test used (the pairs, each side weighted alike when blocked): what
    # Table I prints, so that a reader can recompute every change.
    centre_c: float = float("nan")
    centre_b: float = float("nan")
    # degrees of freedom the test spends beyond the mean: at n rounds it has
    # df_factor * (n - 1) - df_lost (1 for the crossover's second side mean)
    df_lost: float = 0.0

    @property
    def tested(self) -> bool:
        return self.test != TEST_NONE


def _summary_or_empty(a: np.ndarray) -> Summary:
    if a.size == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan)
    return summarize(a)


def _untestable(c: np.ndarray, b: np.ndarray, prs: np.ndarray) -> str:
    every = np.concatenate([c, b, prs.ravel()])
    if not np.all(np.isfinite(every)):
        return "non-finite values: not tested"
    if np.any(every <= 0):
        # A log-scale ratio has no meaning for them, and falling back to a
        # raw-scale test would print a different kind of number in the same
        # column; saying so is better than a verdict on another scale.
        return "values <= 0 have no logarithm: not tested"
    if prs.shape[0] < 2 and (c.size < 2 or b.size < 2):
        return "n < 2 on a side: not tested"
    return ""


def _check_settings(tol_pct: float, noise_pct: float, alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha!r}")
    if not (0 <= tol_pct < 100 and 0 <= noise_pct < 100):
        raise ValueError(f"tol_pct and noise_pct must be in [0, 100), not {tol_pct!r}, {noise_pct!r}")


def compare_cell(
    candidate: Sequence[float],
    baseline: Sequence[float],
    higher_is_better: bool,
    *,
    pairs: Sequence[tuple[float, float]] | None = None,
    tol_pct: float = DEFAULT_TOL_PCT,
    noise_pct: float = 0.0,
    alpha: float = ALPHA,
    sides: Sequence[str] | None = None,
) -> Effect:
    """Compare one cell's candidate values with the baseline's, on logs.

    ``pairs``: (candidate, baseline) values measured in the same round. With
    2 or more, the paired test decides (it cancels the host's drift between
    rounds); with fewer, or None, Welch on the logs of all values. ``sides``
    (a duet's CPU set of each pair, results.analysis.pairs_and_sides) blocks the
    paired test by side (``log_crossover``) when both sides hold 2 or more
    pairs. Never raises on data: untestable cells come back with test "none"
    and a reason.
    """
    _check_settings(tol_pct, noise_pct, alpha)
    c = np.asarray(candidate, dtype=float).ravel()
    b = np.asarray(baseline, dtype=float).ravel()
    prs = np.asarray([] if pairs is None else pairs, dtype=float).reshape(-1, 2)
    nan = float("nan")
    common: dict[str, Any] = dict(
        higher_is_better=bool(higher_is_better),
        candidate=_summary_or_empty(c[np.isfinite(c)]),
        baseline=_summary_or_empty(b[np.isfinite(b)]),
        n_c=int(c.size),
        n_b=int(b.size),
        tol_pct=float(tol_pct),
        noise_pct=float(noise_pct),
        alpha=float(alpha),
    )

    problem = _untestable(c, b, prs)
    if problem:
        # Too few values still have a point estimate worth printing.
        loggable = (
            c.size and b.size and np.all(np.isfinite(c)) and np.all(np.isfinite(b)) and c.min() > 0 and b.min() > 0
        )
        log_ratio = float(np.mean(np.log(c)) - np.mean(np.log(b))) if loggable else nan
        centres = (float(np.exp(np.mean(np.log(c)))), float(np.exp(np.mean(np.log(b))))) if loggable else (nan, nan)
        return Effect(
            TEST_NONE,
            problem,
            n_pairs=0,
            log_ratio=log_ratio,
            se=nan,
            df=nan,
            p=nan,
            noise_sd=nan,
            df_factor=nan,
            centre_c=centres[0],
            centre_b=centres[1],
            **ratio_fields(log_ratio, higher_is_better),
            **common,
        )

    if prs.shape[0] >= 2:
        d = np.log(prs[:, 0]) - np.log(prs[:, 1])
        tt, test, reason, n_pairs = log_paired(d), TEST_PAIRED, "", int(prs.shape[0])
        noise_sd, df_factor, df_lost = math.sqrt(float(_var1(d))), 1.0, 0.0
        centres = geometric_centres(np.log(prs[:, 0]), np.log(prs[:, 1]))
        crossed = log_crossover(d, sides) if sides is not None and len(sides) == d.size else None
        if crossed is not None:  # se = noise_sd / sqrt(n) with balanced sides
            tt, noise_sd, test = crossed, float(crossed.se) * math.sqrt(d.size), TEST_CROSSOVER
            df_lost = 1.0  # n - 2 df at any n
            centres = geometric_centres(np.log(prs[:, 0]), np.log(prs[:, 1]), np.asarray(sides))
    else:
        lc, lb = np.log(c), np.log(b)
        centres = geometric_centres(lc, lb)
        tt, test, n_pairs = log_welch(lc, lb), TEST_WELCH_LOG, 0
        reason = "" if pairs is None else f"{prs.shape[0]} complete round(s) to pair: Welch on logs"
        vc, vb = float(_var1(lc)), float(_var1(lb))
        noise_sd = math.sqrt(vc + vb)
        # Welch-Satterthwaite df with n per side is (n - 1) * this factor (1..2).
        df_factor, df_lost = (vc + vb) ** 2 / (vc**2 + vb**2) if vc + vb > 0 else 1.0, 0.0
    log_ratio = float(tt.estimate)
    return Effect(
        test,
        reason,
        n_pairs=n_pairs,
        log_ratio=log_ratio,
        se=float(tt.se),
        df=float(tt.df),
        p=float(tt.p),
        noise_sd=noise_sd,
        df_factor=df_factor,
        df_lost=df_lost,
        centre_c=centres[0],
        centre_b=centres[1],
        **ratio_fields(log_ratio, higher_is_better),
        **common,
    )


def geometric_centres(log_c: np.ndarray, log_b: np.ndarray, sides: np.ndarray | None = None) -> tuple[float, float]:
    """exp of each side's mean log value: the geometric means whose quotient
    is the test's estimate. Blocked by ``sides`` (the crossover), the mean of
    the two sides' means, as its estimate is."""

    def centre(x: np.ndarray) -> float:
        if sides is None:
            return float(np.exp(_mean1(x)))
        return float(np.exp(np.mean([_mean1(x[sides == v]) for v in np.unique(sides)])))

    return centre(log_c), centre(log_b)


# exp() of a log ratio is kept finite and positive: at a tiny corrected level
# and 2 or 3 rounds, exp(log ratio ± t·se) can underflow to 0 or overflow.
RATIO_MIN = sys.float_info.min  # smallest positive (normal) float
RATIO_MAX = sys.float_info.max  # largest finite float


def _exp(x: float) -> float:
    """math.exp clamped to [RATIO_MIN, RATIO_MAX]: the same function for the
    ratio and its bounds, so a zero-width interval is exactly the ratio and
    low <= ratio <= high survives the clamp."""
    try:
        return min(max(math.exp(x), RATIO_MIN), RATIO_MAX)
    except OverflowError:
        return RATIO_MAX


class RatioFields(TypedDict):
    ratio: float
    pct: float
    overhead_pct: float


def ratio_fields(log_ratio: float, higher_is_better: bool) -> RatioFields:
    ratio = _exp(log_ratio) if math.isfinite(log_ratio) else float("nan")
    pct = (ratio - 1) * 100
    return RatioFields(ratio=ratio, pct=pct, overhead_pct=(-pct if higher_is_better else pct) + 0.0)


# A bound this close to 1 (relative) on the wrong side of the decision is a
# floating-point tie between p and the bounds, not a disagreement.
TIE_RTOL = 1e-9


def t_critical(q: float | np.ndarray, df: ArrayLike) -> Any:
    """Two-sided critical value t_df(1 - q/2) (= t.isf(q/2, df), computed on
    the small tail so that it stays accurate for tiny q); vectorised."""
    return -scipy_special().stdtrit(df, q / 2)


def ratio_interval(log_ratio: float, se: float, df: float, q: float, exclude: bool) -> tuple[float, float]:
    """exp(log_ratio ± t·se) with t the two-sided 1-q critical value of t(df),
    finite and positive (see ``_exp``).

    ``exclude`` is the decision ("excludes 1"), taken on p. The bounds come
    from another special function (isf instead of sf) and exp: when |t| sits
    on the critical value they can disagree with it in the last digits. Only
    such a floating-point tie, a bound within TIE_RTOL of 1 on the wrong
    side, is resolved in favour of the decision (that bound is moved to, or
    just past, 1). Any larger disagreement is left as computed, so that a
    real inconsistency between the test and the interval shows (the unit
    tests check on 10,000 data sets that none occurs).
    """
    half = 0.0 if se == 0 else float(t_critical(q, df)) * se
    lo, hi = _exp(log_ratio - half), _exp(log_ratio + half)
    if exclude and lo <= 1.0 <= hi:
        if log_ratio > 0 and 1.0 - lo <= TIE_RTOL:
            lo = math.nextafter(1.0, 2.0)
            hi = max(hi, lo)
        elif log_ratio <= 0 and hi - 1.0 <= TIE_RTOL:
            hi = math.nextafter(1.0, 0.0)
            lo = min(lo, hi)
    elif not exclude:
        if 1.0 < lo <= 1.0 + TIE_RTOL:
            lo = 1.0
        elif 1.0 - TIE_RTOL <= hi < 1.0:
            hi = 1.0
    return lo, hi


def interval(effect: Effect, level: float | None = None) -> tuple[float, float]:
    """(low, high) of the ratio at ``level`` (default 1 - effect.alpha):
    exp(log_ratio ± t_df(1 - (1 - level)/2) · se), always positive.

    It excludes 1 exactly when effect.p < 1 - level: both are the same t
    statistic read two ways. (nan, nan) for an untested cell."""
    if not effect.tested:
        return float("nan"), float("nan")
    q = effect.alpha if level is None else 1.0 - level
    if not 0 < q < 1:
        raise ValueError(f"level must be in (0, 1), not {level!r}")
    return ratio_interval(effect.log_ratio, effect.se, effect.df, q, effect.p < q)


# -- fairness across instances ------------------------------------------------------


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index of per-instance throughputs: (Σx)² / (n·Σx²),
    1 when all are equal, 1/n when one instance gets everything."""
    if len(values) == 0:
        return float("nan")
    x = finite_array(values)
    if np.any(x < 0):
        return float("nan")
    sq = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (x.size * sq) if sq > 0 else float("nan")


def max_min_ratio(values: Sequence[float]) -> float:
    """Largest over smallest per-instance value (1 = balanced)."""
    if len(values) == 0:
        return float("nan")
    x = finite_array(values)
    if np.min(x) <= 0:
        return float("nan")
    return float(np.max(x) / np.min(x))
