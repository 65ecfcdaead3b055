"""Statistics of repeated measurements: pure functions, no I/O.

Two questions are answered here, the same way for every report:

* ``summarize``: what was measured in one cell (n, mean, median, sd, CV,
  Student-t 95% CI of the mean).
* ``compare``: how a candidate environment differs from the baseline: the
  ratio of means with a propagated 95% CI, the signed change in percent, and
  whether the difference is statistically significant, so that "no
  significant difference" is said when that is the truth.

Significance rule (one p-value decides, ``Comparison.p_value``):
Welch's unequal-variance t-test, two-sided, at ``alpha`` (default 0.05).
Welch is used at every n >= 2 because it keeps useful power at the small n
benchmarks run at and degrades continuously as the spread shrinks to zero.
For small samples (n < 8 on either side) a permutation test on the difference
of means is also computed and reported as a distribution-free cross-check
(``p_permutation``); it does not decide, because its smallest attainable
p-value is coarse at tiny n (2/20 = 0.1 at 3 vs 3, so it could never say
"significant" there, not even for two constant, different samples).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

ALPHA = 0.05
# Below this many values on either side the permutation test is also run.
PERMUTATION_MAX_N = 8
PERMUTATION_RESAMPLES = 9999  # exact enumeration when fewer distinct splits exist
PERMUTATION_SEED = 20140721  # fixed so a report is reproducible from the store

VERDICT_NONE = "no significant difference"
VERDICT_BETTER = "better"
VERDICT_WORSE = "worse"
VERDICT_SMALL_N = "n too small"


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


@dataclass(frozen=True)
class Comparison:
    """A candidate environment's values against the baseline's.

    ``pct`` is the change of the value itself, as in the IBM paper's Table I:
    +10 means the candidate's mean is 10% higher, whatever the metric.
    ``overhead_pct`` is the same magnitude signed by the metric's direction:
    positive means worse than the baseline (lower throughput, higher
    latency), negative means better. It is relative to the baseline's value,
    so a halved throughput is +50% overhead and a doubled latency +100%.
    """

    candidate: Summary
    baseline: Summary
    higher_is_better: bool
    ratio: float  # mean_candidate / mean_baseline; nan if the baseline mean is 0
    ratio_ci95_low: float
    ratio_ci95_high: float
    pct: float  # (ratio - 1) * 100
    pct_ci95_low: float
    pct_ci95_high: float
    overhead_pct: float  # positive = worse than baseline, see class docstring
    p_welch: float  # nan when n < 2 on a side
    p_permutation: float | None  # only when n < PERMUTATION_MAX_N on a side
    p_value: float  # the p that decides: p_welch (see module docstring)
    significant: bool
    verdict: str  # no significant difference | better | worse | n too small
    alpha: float = ALPHA


def _array(values: Sequence[float]) -> np.ndarray:
    a = np.asarray(values, dtype=float).ravel()
    if a.size == 0:
        raise ValueError("no values to summarize")
    if not np.all(np.isfinite(a)):
        raise ValueError("values must be finite numbers")
    return a


def _t_crit(df: float) -> float:
    return float(_st.t.ppf(0.975, df))


def summarize(values: Sequence[float]) -> Summary:
    a = _array(values)
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
    return Summary(n, mean, float(np.median(a)), sd, cv, mean - half, mean + half,
                   float(a.min()), float(a.max()))


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


def _ratio_ci(c: Summary, b: Summary, ratio: float) -> tuple[float, float]:
    """First-order propagation of both means' relative standard errors.

    Degrees of freedom by Welch-Satterthwaite over the two relative variance
    components, so that small n on either side widens the interval.
    """
    nan = float("nan")
    if c.n < 2 or b.n < 2 or c.mean == 0 or b.mean == 0 or math.isnan(ratio):
        return nan, nan
    vc = (c.se / c.mean) ** 2
    vb = (b.se / b.mean) ** 2
    if vc + vb == 0:
        return ratio, ratio
    df = (vc + vb) ** 2 / (vc**2 / (c.n - 1) + vb**2 / (b.n - 1))
    half = _t_crit(df) * math.sqrt(vc + vb) * abs(ratio)
    return ratio - half, ratio + half


def _welch_p(c: np.ndarray, b: np.ndarray, sc: Summary, sb: Summary) -> float:
    if sc.sd == 0 and sb.sd == 0:
        # No noise on either side: equal means cannot differ, different means
        # differ with certainty (scipy would return nan or warn here).
        return 1.0 if sc.mean == sb.mean else 0.0
    with warnings.catch_warnings():
        # Nearly-identical data make scipy warn about precision; the result
        # is still the right one for our purpose and must not leak warnings.
        warnings.simplefilter("ignore")
        return float(_st.ttest_ind(c, b, equal_var=False).pvalue)


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


# scipy >= 1.15 takes ``rng``; older releases only ``random_state``.
_RNG_KW = "rng" if "rng" in inspect.signature(_st.permutation_test).parameters else "random_state"


def _permutation_p(c: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _st.permutation_test(
            (c, b), _mean_diff, vectorized=True, permutation_type="independent",
            alternative="two-sided", n_resamples=PERMUTATION_RESAMPLES,
            **{_RNG_KW: np.random.default_rng(PERMUTATION_SEED)})
    return float(min(1.0, res.pvalue))


def compare(candidate_values: Sequence[float], baseline_values: Sequence[float],
            higher_is_better: bool, alpha: float = ALPHA) -> Comparison:
    c, b = _array(candidate_values), _array(baseline_values)
    sc, sb = summarize(c), summarize(b)
    nan = float("nan")
    ratio = sc.mean / sb.mean if sb.mean != 0 else nan
    lo, hi = _ratio_ci(sc, sb, ratio)
    pct = (ratio - 1) * 100
    overhead = (-pct if higher_is_better else pct) + 0.0  # + 0.0: no "-0.0"

    if sc.n < 2 or sb.n < 2:
        return Comparison(sc, sb, higher_is_better, ratio, lo, hi, pct,
                          (lo - 1) * 100, (hi - 1) * 100, overhead,
                          nan, None, nan, False, VERDICT_SMALL_N, alpha)

    p_welch = _welch_p(c, b, sc, sb)
    p_perm = _permutation_p(c, b) if min(sc.n, sb.n) < PERMUTATION_MAX_N else None
    significant = bool(p_welch < alpha)
    if not significant:
        verdict = VERDICT_NONE
    else:
        went_up = sc.mean > sb.mean
        verdict = VERDICT_BETTER if went_up == higher_is_better else VERDICT_WORSE
    return Comparison(sc, sb, higher_is_better, ratio, lo, hi, pct,
                      (lo - 1) * 100, (hi - 1) * 100, overhead,
                      p_welch, p_perm, p_welch, significant, verdict, alpha)


# -- fairness across instances ------------------------------------------------------

def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index of per-instance throughputs: (Σx)² / (n·Σx²),
    1 when all are equal, 1/n when one instance gets everything."""
    if len(values) == 0:
        return float("nan")
    x = _array(values)
    if np.any(x < 0):
        return float("nan")
    sq = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (x.size * sq) if sq > 0 else float("nan")


def max_min_ratio(values: Sequence[float]) -> float:
    """Largest over smallest per-instance value (1 = balanced)."""
    if len(values) == 0:
        return float("nan")
    x = _array(values)
    if np.min(x) <= 0:
        return float("nan")
    return float(np.max(x) / np.min(x))
