"""The host-noise pilot's statistics: pure functions of timings, no I/O
(``isobench.checks.noisepilot`` measures them; docs/statistics.md#host-noise).

The pilot runs a fixed kernel as A/A pairs, A B A B ...: the same work
twice, back to back. The log ratio of a pair, log(a / b), is what a study's
paired test sees in one round when nothing differs between the two sides,
so its standard deviation is the paired noise per sample: the ``noise_sd``
a study's resolution is predicted from (``verdicts.detectable_change``,
``verdicts.rounds_to_resolve``).

* ``pair_noise``: the sample SD of the per-pair log ratios (ddof = 1, so a
  constant offset between A and B, such as the first of a pair always
  following another kernel, is not counted as noise), with its chi-square
  interval: (k - 1)·s²/σ² ~ χ²(k - 1) for k pairs of normal log ratios, so
  σ lies in [s·sqrt((k-1)/χ²_{1-a/2}), s·sqrt((k-1)/χ²_{a/2})].
* ``drift``: the least-squares slope of log time over the pilot's clock,
  every sample of the kernel counted, as % per minute with its t interval
  (n - 2 df). Pairs cancel a slow drift; the slope says whether there was one.
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


@dataclass(frozen=True)
class Drift:
    """How the kernel's time moved over the pilot, in % per minute."""

    samples: int
    pct_per_min: float  # nan under 3 samples or a pilot of no duration
    low: float  # t interval at ``level``
    high: float
    level: float


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
    half = float(stats.t.isf((1 - level) / 2, n - 2)) * fit.stderr
    pct = lambda slope: math.expm1(slope) * 100  # noqa: E731 - a log slope as % per minute
    return Drift(n, pct(fit.slope), pct(fit.slope - half), pct(fit.slope + half), level)
