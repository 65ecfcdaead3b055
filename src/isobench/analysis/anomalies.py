"""Warnings about one cell's samples: outliers, a slow first measured round,
drift across rounds. Pure functions; each returns a small dataclass with
``flagged`` and a one-line ``text``. They never change a value or a verdict:
a report shows them next to the cell so that a reader can look.

Rules and thresholds (docs/statistics.md gives the measured false-warning
rates):

* **Outliers**: modified z-score of Iglewicz & Hoaglin (1993),
  M = 0.6745·(x - median)/MAD, flagged when |M| > 7 (OUTLIER_Z). 0.6745 makes MAD/0.6745
  estimate the sd of normal data. When the MAD is 0 (more than half the
  values equal) the scale falls back to 1.253314·mean absolute deviation
  (sqrt(pi/2)·MeanAD also estimates the sd), and when that is 0 too, all
  values are equal and none is an outlier. Only from 8 values (OUTLIER_MIN_N): with 3, the
  MAD is the smaller of the two gaps, so any sample whose gaps differ by 5×
  would be "flagged" (29% of pure normal samples).
* **Slow first round** (warm-up too short): with at least 5 rounds, the first
  measured round is flagged when it is the worst of all rounds, in the
  metric's bad direction, and its modified z-score against the other rounds
  (their median and MAD, same fallback) is beyond 3.5.
* **Drift**: Spearman's rank correlation between round number and value,
  flagged when its two-sided p < alpha and |rho| >= 0.5 (a strong monotonic
  trend, not a significant wiggle over many rounds). p is exact (all
  permutations) up to 8 rounds, scipy's t approximation beyond; under 5
  rounds no trend can reach p < 0.05. The slope shown (% per round) is
  Theil-Sen's, which takes every pair of rounds: beyond 256 rounds
  (DRIFT_THEIL_MAX_N) it is taken over the medians of 256 consecutive blocks
  of rounds at their centres, so a cell of any size costs O(n) plus a fixed
  256² (an imported cell of 10,000 rounds took 2.6 GB before).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from isobench.analysis.stats import ALPHA
from isobench.analysis.summary import median_of, scipy_stats
from isobench.core.numbers import fmt_num, fmt_pct, signed

# Iglewicz & Hoaglin recommend 3.5, for large samples: on pure normal noise it
# flags a value in 20% of 5-value cells and 10% of 20-value ones (the MAD of a
# few values is itself noisy). 7 from 8 values keeps that near 1% (1.4% at 8,
# 0.9% at 10, 0.1% at 20; benchmarks/calibration.py, docs/statistics.md), so a
# warning is worth a look.
OUTLIER_Z = 7.0
OUTLIER_MIN_N = 8
SLOW_FIRST_Z = 3.5  # one named value against the others' median: 0.5-5.2% on noise (20 to 5 rounds)
SLOW_FIRST_MIN_N = 5
DRIFT_MIN_RHO = 0.5
DRIFT_EXACT_MAX_N = 8  # 8! = 40320 permutations: exact and still instant
DRIFT_THEIL_MAX_N = 256  # Theil-Sen over every pair up to here, over block medians beyond

_MAD_TO_Z = 0.6745  # MAD / 0.6745 estimates sigma for normal data
_MEANAD_TO_SD = 1.253314  # sqrt(pi / 2): MeanAD * this estimates sigma


def _finite(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError("values must be finite numbers")
    return a


def _robust_z(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Modified z-scores of x against the median and MAD of ref; ±inf for a
    value off a constant reference, 0 for a value on it."""
    med = median_of(ref)
    dev = x - med
    mad = median_of(np.abs(ref - med))
    if mad > 0:
        return _MAD_TO_Z * dev / mad
    mean_ad = float(np.mean(np.abs(ref - med)))
    if mean_ad > 0:
        return dev / (_MEANAD_TO_SD * mean_ad)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(dev == 0, 0.0, np.sign(dev) * np.inf)


def _fmt(x: float) -> str:
    return fmt_num(x)  # as the tables print it: no scientific notation, the typographic minus


@dataclass(frozen=True)
class Outliers:
    indices: tuple[int, ...]  # positions of the flagged values, in the order given
    values: tuple[float, ...]
    scores: tuple[float, ...]  # modified z of every value; empty below min_n
    threshold: float
    text: str

    @property
    def flagged(self) -> bool:
        return bool(self.indices)


def outliers(values: Sequence[float], threshold: float = OUTLIER_Z, min_n: int = OUTLIER_MIN_N) -> Outliers:
    """Values whose modified z-score is beyond ``threshold`` (module docstring)."""
    a = _finite(values)
    if a.size < min_n:
        return Outliers((), (), (), threshold, f"too few values ({a.size} < {min_n}) to look for outliers")
    z = _robust_z(a, a)
    idx = tuple(int(i) for i in np.flatnonzero(np.abs(z) > threshold))
    if not idx:
        text = f"no outlier (modified z <= {threshold:g})"
    else:
        listed = ", ".join(f"{_fmt(a[i])} (z {signed(z[i])})" for i in idx)
        text = (
            f"{len(idx)} outlier{'s' if len(idx) > 1 else ''} of {a.size} values "
            f"(modified z > {threshold:g}, median {_fmt(float(np.median(a)))}): {listed}"
        )
    return Outliers(idx, tuple(float(a[i]) for i in idx), tuple(float(v) for v in z), threshold, text)


# The screen of Table I's cells (``screen``): on log values, from 5 values (the
# shipped studies' fewest rounds), at the modified z that pure normal noise
# exceeds in about 2% of cells of that n (400,000 simulated cells each: 2.0%
# at 5, 1.9% at 6, 2.2% at 7; the MAD of so few values is itself so noisy
# that 7 flagged 6.3% of 5-value cells, and 1% would take z 18.6 at 5 and
# 10.6 at 7, missing a 3.7-fold sample among values 16% apart); OUTLIER_Z
# from 8 on (1.6% at 8, 0.9% at 10).
SCREEN_MIN_N = 5
SCREEN_Z = {5: 13.0, 6: 8.0, 7: 8.0}
# and at least this far from the median (either way): among values within a
# few tenths of a percent (STREAM here), 1.6% off scores beyond any z, but a
# sample within 10% of the others is not what an outlier warning is for
SCREEN_MIN_RATIO = 1.1


@dataclass(frozen=True)
class Screened:
    indices: tuple[int, ...]  # positions of the flagged values, in the order given
    ratios: tuple[float, ...]  # each one's value over the median of all
    threshold: float

    @property
    def flagged(self) -> bool:
        return bool(self.indices)


def screen(values: Sequence[float]) -> Screened:
    """Values whose log is beyond SCREEN_Z (by n) modified z-scores from the
    median of the logs, MAD scale (module docstring's fallback when it is 0),
    and at least SCREEN_MIN_RATIO from the median:
    a multiplicative outlier, 3.7 times the median or a third of it alike.
    Nothing below SCREEN_MIN_N values or with a value <= 0 (no logarithm)."""
    a = _finite(values)
    threshold = SCREEN_Z.get(a.size, OUTLIER_Z)
    if a.size < SCREEN_MIN_N or np.any(a <= 0):
        return Screened((), (), threshold)
    logs = np.log(a)
    z = _robust_z(logs, logs)
    far = np.abs(logs - median_of(logs)) >= math.log(SCREEN_MIN_RATIO)
    idx = tuple(int(i) for i in np.flatnonzero((np.abs(z) > threshold) & far))
    med = median_of(a)
    return Screened(idx, tuple(float(a[i]) / med for i in idx), threshold)


@dataclass(frozen=True)
class SlowFirstRound:
    flagged: bool
    first: float  # the first measured round's value
    rest_median: float  # median of the other rounds
    score: float  # modified z of the first round against the others; nan below min n
    pct: float  # first vs the others' median, % change of the value
    text: str


def slow_first_round(
    values_by_round: Sequence[float], higher_is_better: bool, threshold: float = SLOW_FIRST_Z
) -> SlowFirstRound:
    """Is the first measured round a warm-up leftover? ``values_by_round``:
    one value per round, in round order (module docstring for the rule)."""
    a = _finite(values_by_round)
    nan = float("nan")
    if a.size < SLOW_FIRST_MIN_N:
        return SlowFirstRound(
            False,
            float(a[0]) if a.size else nan,
            nan,
            nan,
            nan,
            f"too few rounds ({a.size} < {SLOW_FIRST_MIN_N}) to judge the first",
        )
    first, rest = a[0], a[1:]
    med = float(np.median(rest))
    z = float(_robust_z(np.array([first]), rest)[0])
    bad_z = -z if higher_is_better else z  # > 0: the first round is in the bad direction
    worst = first < rest.min() if higher_is_better else first > rest.max()
    flagged = bool(worst and bad_z > threshold)
    pct = (first / med - 1) * 100 if med != 0 else nan
    word = "slower" if flagged else "not slower"
    text = (
        f"first measured round {word} than the others: {_fmt(first)} vs median "
        f"{_fmt(med)} ({fmt_pct(pct)}, modified z {signed(z)})"
    )
    if flagged:
        text += "; warm-up may be too short"
    return SlowFirstRound(flagged, float(first), med, z, pct, text)


@dataclass(frozen=True)
class Drift:
    flagged: bool
    rho: float  # Spearman's rank correlation of value with round; nan if constant
    p: float  # two-sided; exact up to DRIFT_EXACT_MAX_N rounds
    n: int
    slope_pct_per_round: float  # Theil-Sen slope relative to the median
    text: str


@cache
def _permutations(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8)


def _spearman_p_exact(ranks: np.ndarray, rho: float) -> float:
    """Share of all orderings of the values over the rounds whose |rho| is at
    least the observed one (ties keep their average ranks)."""
    n = ranks.size
    t = np.arange(n) - (n - 1) / 2
    r = ranks - ranks.mean()
    rhos = r[_permutations(n)] @ t / math.sqrt(float(r @ r) * float(t @ t))
    return float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def _theil_sen(a: np.ndarray) -> float:
    """Theil-Sen slope per round; over block medians beyond DRIFT_THEIL_MAX_N rounds."""
    x = np.arange(a.size, dtype=float)
    if a.size > DRIFT_THEIL_MAX_N:
        blocks = np.array_split(np.arange(a.size), DRIFT_THEIL_MAX_N)
        x = np.array([idx.mean() for idx in blocks])
        a = np.array([np.median(a[idx]) for idx in blocks])
    # scipy.stats.theilslopes' slope, as it computes it, without its
    # confidence interval and argument checks (most of its cost, in every cell)
    dx = x[:, np.newaxis] - x
    dy = a[:, np.newaxis] - a
    return float(np.median(dy[dx > 0] / dx[dx > 0]))


def drift(values_by_round: Sequence[float], alpha: float = ALPHA, min_rho: float = DRIFT_MIN_RHO) -> Drift:
    """A monotonic trend across rounds (module docstring for the rule)."""
    a = _finite(values_by_round)
    n = int(a.size)
    nan = float("nan")
    if n < 3 or np.ptp(a) == 0:
        why = "constant values" if n >= 3 else f"too few rounds ({n} < 3)"
        return Drift(False, nan, nan, n, nan, f"no drift to measure: {why}")
    ranks = scipy_stats().rankdata(a)
    t = np.arange(n) - (n - 1) / 2
    r = ranks - ranks.mean()
    rho = float(r @ t / math.sqrt(float(r @ r) * float(t @ t)))
    if n <= DRIFT_EXACT_MAX_N:
        p = _spearman_p_exact(ranks, rho)
    else:
        p = float(scipy_stats().spearmanr(np.arange(n), a).pvalue)
    med = float(np.median(a))
    slope = _theil_sen(a)
    slope_pct = slope / abs(med) * 100 if med != 0 else nan
    flagged = bool(p < alpha and abs(rho) >= min_rho)
    trend = "rise" if rho > 0 else "fall"
    if flagged:
        text = (
            f"values {trend} across {n} rounds (Spearman rho {signed(rho, 2)}, p = {p:.3g}; "
            f"{signed(slope_pct, 2)}% per round): the host drifted"
        )
    else:
        text = f"no drift across {n} rounds (Spearman rho {signed(rho, 2)}, p = {p:.3g})"
    return Drift(flagged, rho, p, n, slope_pct, text)


SIDES_ALPHA = 0.01  # per cell: a warning, not a verdict; at 0.05 one duet cell in 20 would cry wolf


@dataclass(frozen=True)
class SideAsymmetry:
    """A duet cell whose ratio read differently on the two CPU sets the
    candidate started on: the sets were not alike during the run."""

    flagged: bool
    diff_pct: float = math.nan  # first set's ratio against the second's
    p: float = math.nan
    text: str = ""


def side_asymmetry(
    pairs: Sequence[tuple[float, float]], sides: Sequence[str], alpha: float = SIDES_ALPHA
) -> SideAsymmetry:
    """Welch's test of the pairs' log ratios, one CPU set against the other
    (at least 3 pairs on each). The crossover estimate averages the two
    sides, so an asymmetry does not bias it; it widens nothing either, since
    the spread is taken within sides. Said so the reader knows the two
    halves of the host were not alike."""
    by: dict[str, list[float]] = {}
    for (v, r), s in zip(pairs, sides):
        if v > 0 and r > 0 and math.isfinite(v) and math.isfinite(r):
            by.setdefault(str(s), []).append(math.log(v / r))
    if len(by) != 2 or min(len(x) for x in by.values()) < 3:
        return SideAsymmetry(False)
    (sa, a), (sb, b) = sorted(by.items())
    if np.std(a) == 0 and np.std(b) == 0:
        return SideAsymmetry(False)
    p = float(scipy_stats().ttest_ind(a, b, equal_var=False).pvalue)
    diff = math.expm1(float(np.mean(a) - np.mean(b))) * 100
    if not (p < alpha and math.isfinite(diff)):
        return SideAsymmetry(False, diff, p)
    return SideAsymmetry(
        True,
        diff,
        p,
        f"the two CPU sets read differently: the ratio started on CPUs {sa} is {signed(diff, 1)}% against CPUs "
        f"{sb} (Welch p = {p:.2g}); the estimate averages both sets, so this cancels, but the host's halves "
        "were not alike",
    )
