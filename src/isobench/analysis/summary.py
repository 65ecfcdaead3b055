"""What one cell measured: ``summarize`` (n, mean, median, sd, CV, Student-t
95% CI of the mean) and the CI's half width. Pure; scipy.special loads on
first use."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def scipy_special() -> Any:
    # scipy.special takes ~0.4 s to import; the study parser and `validate`
    # need only the statistics' constants, so it loads on the first test
    from scipy import special

    return special


def scipy_stats() -> Any:
    # scipy.stats takes ~1 s to import (every distribution is built): the
    # CLI's commands load without it and a command pays it on the first test
    # that needs one of its functions
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    sd: float  # sample standard deviation (ddof=1); nan when n == 1
    cv: float  # sd / |mean|; nan when undefined (n == 1 or mean == 0)
    ci95_low: float  # Student-t 95% CI of the mean; nan when n == 1
    ci95_high: float
    min: float
    max: float

    @property
    def se(self) -> float:
        """Standard error of the mean."""
        return self.sd / math.sqrt(self.n)


def finite_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    if a.size == 0:
        raise ValueError("no values to summarize")
    if not np.all(np.isfinite(a)):
        raise ValueError("values must be finite numbers")
    return a


def median_of(a: np.ndarray) -> float:
    """np.median of a 1-D array of finite values, bit for bit (the middle
    value, or the two middle ones' sum halved, as np.mean takes it; nan when
    empty), without np.median's any-axis machinery: about 20 times its cost
    on a cell's few values, and every cell of every table takes several."""
    s = np.sort(a)
    half = s.size // 2
    if s.size % 2:
        return float(s[half])
    return float((s[half - 1] + s[half]) / 2) if s.size else float("nan")


def _t_crit(df: float) -> float:
    return float(scipy_special().stdtrit(df, 0.975))  # t.ppf(0.975, df) without the rv machinery


def summarize(values: Sequence[float] | np.ndarray) -> Summary:
    a = finite_array(values)
    n = int(a.size)
    mean = float(np.mean(a))
    nan = float("nan")
    if n == 1:
        return Summary(n, mean, mean, nan, nan, nan, nan, mean, mean)
    # Identical values have exactly zero spread; computing it could leave
    # rounding residue (1e-16) that later looks like a real, tiny variance.
    sd = 0.0 if np.ptp(a) == 0 else float(np.std(a, ddof=1))
    half = _t_crit(n - 1) * sd / math.sqrt(n)
    cv = sd / abs(mean) if mean != 0 else nan
    return Summary(n, mean, median_of(a), sd, cv, mean - half, mean + half, float(a.min()), float(a.max()))


def ci_halfwidth_pct(summary: Summary) -> float:
    """Half width of the mean's 95% CI relative to the mean, in percent.

    For adaptive repetitions: stop once this is below a target. nan (n == 1)
    never compares below a target, so repetitions continue; a zero-width CI
    is 0 even when the mean is 0.
    """
    if summary.n < 2:
        return float("nan")
    half = (summary.ci95_high - summary.ci95_low) / 2
    if half == 0:
        return 0.0
    if summary.mean == 0:
        return float("inf")
    return half / abs(summary.mean) * 100


def centre_of(values: Sequence[float]) -> float:
    """What Table I prints as a cell's centre: the geometric mean (the
    changes are ratios of them), or the mean when a value is not positive
    (no logarithm; such a cell is not tested). nan for no values."""
    a = np.asarray(values, dtype=float).ravel()
    if a.size == 0 or not np.all(np.isfinite(a)):
        return float("nan")
    if not np.all(a > 0):
        return float(np.mean(a))
    return float(np.exp(np.mean(np.log(a)))) if np.ptp(a) > 0 else float(a[0])  # constant: the value itself
