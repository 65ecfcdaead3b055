"""The host-noise pilot's statistics: pure functions of timings, no I/O
(``isobench.checks.noisepilot`` measures them; docs/statistics.md#host-noise).

The pilot runs a fixed kernel as A/A pairs, A B A B ...: the same work
twice, back to back. The log ratio of a pair, log(a / b), is what a study's
paired test sees in one round when nothing differs between the two sides,
so its standard deviation is the paired noise per sample: the ``noise_sd``
a study's resolution is predicted from (``verdicts.detectable_change``,
``analysis.suggest``).

* ``pair_noise``: the sample SD of the per-pair log ratios (ddof = 1, so a
  constant offset between A and B, such as the first of a pair always
  following another kernel, is not counted as noise), with its chi-square
  interval: (k - 1)·s²/σ² ~ χ²(k - 1) for k pairs of normal log ratios, so
  σ lies in [s·sqrt((k-1)/χ²_{1-a/2}), s·sqrt((k-1)/χ²_{a/2})].
* ``drift``: the least-squares slope of log time over the pilot's clock,
  every sample of the kernel counted, with its t interval (n - 2 df), kept
  on the log scale; as % per minute (expm1) only where that is finite: a
  stall in a short pilot can make the slope hundreds per minute, whose
  percentage overflows a float. Pairs cancel a slow drift; the slope says
  whether there was one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95


def _positive(values: Sequence[float], what: str) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{what} must be positive, finite numbers")
    return a


@dataclass(frozen=True)
class PairNoise:
    """The SD of log(a / b) over the pilot's pairs, with its interval."""

    pairs: int
    sd: float  # nan under 2 pairs
    low: float  # chi-square interval of the SD at ``level``
    high: float
    level: float

    @property
    def pct(self) -> float:
        """The SD as a percentage: on the log scale a small SD is the relative one."""
        return self.sd * 100


def pair_noise(first: Sequence[float], second: Sequence[float], level: float = LEVEL) -> PairNoise:
    """The paired noise per sample of durations taken as pairs (first[i], second[i])."""
    from scipy import stats

    a, b = _positive(first, "durations"), _positive(second, "durations")
    if a.size != b.size:
        raise ValueError(f"{a.size} first and {b.size} second durations: pairs need both")
    k = int(a.size)
    nan = float("nan")
    if k < 2:
        return PairNoise(k, nan, nan, nan, level)
    d = np.log(a) - np.log(b)
    # identical ratios have exactly zero spread (rounding residue would read as noise)
    sd = 0.0 if np.ptp(d) == 0 else float(np.std(d, ddof=1))
    df = k - 1
    tail = (1 - level) / 2
    low = sd * math.sqrt(df / stats.chi2.isf(tail, df))
    high = sd * math.sqrt(df / stats.chi2.ppf(tail, df))
    return PairNoise(k, sd, low, high, level)


def pct_of_log(slope: float) -> float:
    """A log-scale change as a percentage, expm1(slope)·100; nan where that
    is not a finite float (a slope past ~709 overflows)."""
    try:
        pct = math.expm1(slope) * 100
    except OverflowError:
        return float("nan")
    return pct if math.isfinite(pct) else float("nan")


@dataclass(frozen=True)
class Drift:
    """How the kernel's time moved over the pilot: the slope of log time per
    minute, with its interval; as % per minute where that is finite."""

    samples: int
    slope: float  # log time per minute; nan under 3 samples or a pilot of no duration
    slope_low: float  # t interval at ``level``
    slope_high: float
    level: float

    @property
    def pct_per_min(self) -> float:
        return pct_of_log(self.slope)

    @property
    def low(self) -> float:
        return pct_of_log(self.slope_low)

    @property
    def high(self) -> float:
        return pct_of_log(self.slope_high)


def drift(starts_s: Sequence[float], durations_s: Sequence[float], level: float = LEVEL) -> Drift:
    """The slope of log duration over start time (seconds on any clock)."""
    from scipy import stats

    x = np.asarray(starts_s, dtype=float).ravel()
    y = np.log(_positive(durations_s, "durations"))
    if x.size != y.size or not np.all(np.isfinite(x)):
        raise ValueError("one finite start time per duration")
    n = int(y.size)
    nan = float("nan")
    if n < 3 or np.ptp(x) == 0:
        return Drift(n, nan, nan, nan, level)
    minutes = (x - x.min()) / 60
    if np.ptp(y) == 0:  # constant times: no slope, exactly
        return Drift(n, 0.0, 0.0, 0.0, level)
    fit = stats.linregress(minutes, y)
    half = float(stats.t.isf((1 - level) / 2, n - 2)) * float(fit.stderr)
    slope = float(fit.slope)
    return Drift(n, slope, slope - half, slope + half, level)
