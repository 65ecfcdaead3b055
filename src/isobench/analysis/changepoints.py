"""Persistent shifts in a series of per-run estimates: pure functions, no I/O.

A series is one cell's overhead over runs, each point an estimate on the log
scale with its standard error (``stats.Effect.log_ratio`` and ``.se``). A
*step* is a place where the series' level moves and stays moved. Two stages
(docs/history.md says why and where the limits are):

1. **Candidates**: ruptures' PELT (optimal segmentation under a penalty per
   step) with an inverse-variance weighted L2 cost: a run with a wide
   interval pulls on the fit less than a precise one. Each segment holds at
   least ``MIN_SEGMENT`` runs, so one run alone never makes a step.
2. **Confirmation**: each candidate is tested with the runs on either side
   (between its neighbouring candidates): inverse-variance weighted means,
   a between-run variance (DerSimonian-Laird) added to every run's own, on
   each side the Knapp-Hartung scale when its runs scatter more than their
   intervals say, a Welch t-test (a side holding one wild run is wide and
   has few degrees of freedom, so that run cannot make a step), Bonferroni over the
   positions the search could have chosen (the candidate is the best of
   them). A candidate that fails its own test at ``PRUNE_P`` is dropped and
   its neighbours tested again with the merged runs, weakest first; the
   survivors of every series judged together go through Benjamini-Hochberg. The step's interval is at the FCR level of
   isobench.analysis.verdicts, so it excludes 0 exactly for the confirmed steps.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from isobench.analysis.stats import ALPHA, t_critical, t_pvalue

# A step needs this many runs on each side: a single run that differs is an
# outlier until a second one agrees with it.
MIN_SEGMENT = 2
MIN_RUNS = 2 * MIN_SEGMENT  # the shortest series in which a step can be found

# PELT's price of a step, in units of the weighted cost (chi-square units when
# the variances are right): PENALTY_PER_LOG_N * log(n). Chosen with
# benchmarks/history_calibration.py: lower finds more candidates that the
# confirmation then has to reject, with less data each; higher misses steps.
PENALTY_PER_LOG_N = 2.0

# A candidate whose own test (adjusted for its position) gives a p above this
# is dropped before the correction over all series, and its neighbours are
# tested again without it.
PRUNE_P = ALPHA

# Normal consistency constant of the median absolute deviation.
MAD_SCALE = 1.4826
# A run variance of exactly 0 (identical values in every round) is taken as
# this: the between-run variance, estimated from the data, then sets the weights.
MIN_VARIANCE = 1e-12


@dataclass(frozen=True)
class Step:
    """A candidate step at ``index`` (the first run after it), tested with
    the runs of ``before`` and ``after`` ([start, end) positions)."""

    index: int
    before: tuple[int, int]
    after: tuple[int, int]
    mean_before: float  # weighted means of the two sides, log scale
    mean_after: float
    shift: float  # mean_after - mean_before
    se: float  # of the shift, with the between-run variance and Knapp-Hartung scale
    df: float
    p_raw: float  # two-sided t-test at this position
    positions: int  # where the search could have put it: the Bonferroni factor
    tau: float  # between-run standard deviation beyond the runs' own SEs

    @property
    def p(self) -> float:
        """The test's p adjusted for the choice of position."""
        return min(1.0, self.p_raw * self.positions)


@dataclass(frozen=True)
class Judged:
    """A candidate after correction over every candidate judged together."""

    step: Step
    p_adjusted: float  # Benjamini-Hochberg
    confirmed: bool
    level: float  # of the interval (FCR-adjusted)
    low: float  # shift interval, log scale
    high: float


class _WeightedL2:
    """ruptures cost: sum of w_i (y_i - weighted mean)^2 over a segment, from
    cumulative sums (O(1) per segment). The signal is two columns: y, w."""

    model = "weighted-l2"
    min_size = MIN_SEGMENT

    def fit(self, signal: np.ndarray) -> _WeightedL2:
        self.signal = signal
        y, w = signal[:, 0], signal[:, 1]
        zero = np.zeros(1)
        self._w = np.concatenate([zero, np.cumsum(w)])
        self._wy = np.concatenate([zero, np.cumsum(w * y)])
        self._wyy = np.concatenate([zero, np.cumsum(w * y * y)])
        return self

    def error(self, start: int, end: int) -> float:
        w = self._w[end] - self._w[start]
        wy = self._wy[end] - self._wy[start]
        # never below 0: with huge weights the difference of sums rounds either way
        return max(0.0, float(self._wyy[end] - self._wyy[start] - wy * wy / w)) if w > 0 else 0.0

    def sum_of_costs(self, bkps: Sequence[int]) -> float:
        edges = [0, *bkps]
        return sum(self.error(a, b) for a, b in zip(edges, edges[1:]))


@functools.cache
def _cost_class() -> type:
    """_WeightedL2 as a ruptures BaseCost (ruptures checks the type);
    imported on first use, as scipy.special is in stats."""
    from ruptures.base import BaseCost

    return type("WeightedL2", (_WeightedL2, BaseCost), {})


def run_variances(se: Sequence[float] | np.ndarray) -> np.ndarray:
    """Each run's variance, never below the series' median run variance: at
    3 to 5 rounds an SE can come out small by chance, and inverse-variance
    weights would then let that one run outweigh the rest."""
    v = np.asarray(se, dtype=float) ** 2
    return np.asarray(np.maximum(v, max(float(np.median(v)), MIN_VARIANCE)))


def between_run_floor(y: np.ndarray, v: np.ndarray) -> float:
    """A first between-run variance, robust to steps: the scatter of
    successive differences (a step moves one difference, the median ignores
    it) beyond what the runs' own variances explain."""
    if y.size < 3:
        return 0.0
    d = np.diff(y)
    scatter = (MAD_SCALE * float(np.median(np.abs(d - np.median(d))))) ** 2 / 2
    return max(0.0, scatter - float(np.median(v)))


def dersimonian_laird(y: np.ndarray, v: np.ndarray, edges: Sequence[int]) -> float:
    """Between-run variance tau^2 given the segmentation (each segment its
    own mean): the method-of-moments estimate of DerSimonian and Laird,
    generalised to several groups."""
    q, dof, scale = 0.0, 0, 0.0
    w = 1.0 / v
    for a, b in zip(edges, edges[1:]):
        ws, ys = w[a:b], y[a:b]
        mean = float(np.sum(ws * ys) / np.sum(ws))
        q += float(np.sum(ws * (ys - mean) ** 2))
        dof += b - a - 1
        scale += float(np.sum(ws) - np.sum(ws * ws) / np.sum(ws))
    return max(0.0, (q - dof) / scale) if scale > 0 else 0.0


def candidates(y: np.ndarray, v: np.ndarray, tau2: float, penalty: float | None = None) -> list[int]:
    """Positions of the first run after each candidate step (PELT)."""
    n = y.size
    if n < MIN_RUNS:
        return []
    pen = PENALTY_PER_LOG_N * math.log(n) if penalty is None else penalty
    from ruptures import Pelt

    signal = np.column_stack([y, 1.0 / (v + tau2)])
    algo = Pelt(custom_cost=_cost_class()(), min_size=MIN_SEGMENT, jump=1).fit(signal)
    return [b for b in algo.predict(pen=pen) if b < n]


def _side(y: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """A side's weighted mean, the variance of that mean and its degrees of
    freedom. Knapp-Hartung: when the side's runs scatter more than their
    variances say, the variance grows by that factor (never shrinks below
    the runs' own), so a side made of one good and one wild run is wide."""
    total = float(np.sum(w))
    mean = float(np.sum(w * y) / total)
    dof = y.size - 1
    scale = max(1.0, float(np.sum(w * (y - mean) ** 2)) / dof)
    return mean, scale / total, float(dof)


def _test(y: np.ndarray, v: np.ndarray, tau2: float, a: int, k: int, b: int) -> Step:
    """The runs [a, k) against [k, b): weighted means with variances v + tau2,
    each side's own Knapp-Hartung scale, Welch-Satterthwaite degrees of
    freedom (a side with a wild run gets few)."""
    w = 1.0 / (v + tau2)
    ml, vl, dl = _side(y[a:k], w[a:k])
    mr, vr, dr = _side(y[k:b], w[k:b])
    se = math.sqrt(vl + vr)
    df = (vl + vr) ** 2 / (vl * vl / dl + vr * vr / dr)
    shift = mr - ml
    p = float(t_pvalue(shift, se, df))
    positions = max(1, (b - a) - 2 * MIN_SEGMENT + 1)
    return Step(k, (a, k), (k, b), ml, mr, shift, se, df, p, positions, math.sqrt(tau2))


def find_steps(y: Sequence[float], se: Sequence[float], penalty: float | None = None) -> list[Step]:
    """Candidate steps of one series, each tested (not yet corrected).

    ``y`` and ``se`` are the runs' estimates and standard errors in run
    order; every value must be finite and every se > 0 (the caller leaves
    untested runs out of the series); an se of 0 is allowed."""
    ya, sa = np.asarray(y, dtype=float), np.asarray(se, dtype=float)
    if ya.shape != sa.shape or ya.ndim != 1:
        raise ValueError(f"y and se must be two series of one length, not {ya.shape} and {sa.shape}")
    if ya.size < MIN_RUNS:
        return []
    if not (np.all(np.isfinite(ya)) and np.all(np.isfinite(sa)) and np.all(sa >= 0)):
        raise ValueError("every run needs a finite estimate and a finite standard error >= 0")
    v = run_variances(sa)
    ks = candidates(ya, v, between_run_floor(ya, v), penalty)
    while ks:
        edges = [0, *ks, ya.size]
        tau2 = dersimonian_laird(ya, v, edges)
        steps = [_test(ya, v, tau2, edges[i - 1], edges[i], edges[i + 1]) for i in range(1, len(edges) - 1)]
        # PELT may cut a short segment beside a real step; a candidate its own
        # test does not support goes, and its neighbours are tested again with
        # the merged runs (backward elimination, weakest first)
        weakest = max(steps, key=lambda s: s.p)
        if weakest.p <= PRUNE_P:
            return steps
        ks = [k for k in ks if k != weakest.index]
    return []


def judge(series: Sequence[Sequence[Step]], alpha: float = ALPHA) -> list[list[Judged]]:
    """Every candidate of every series, corrected together (BH at alpha)."""
    from scipy.stats import false_discovery_control

    flat = [s for steps in series for s in steps]
    m = len(flat)
    if not m:
        return [[] for _ in series]
    p_adj = np.asarray(false_discovery_control([s.p for s in flat], method="bh"), dtype=float)
    rejected = p_adj <= alpha
    q = max(int(rejected.sum()), 1) * alpha / m  # FCR level 1 - q (isobench.analysis.verdicts)
    out, i = [], 0
    for steps in series:
        judged = []
        for s in steps:
            # the interval pays the same Bonferroni factor as the p, so it
            # excludes 0 exactly when the step is confirmed
            half = float(t_critical(q / s.positions, s.df)) * s.se if s.se > 0 else 0.0
            judged.append(Judged(s, float(p_adj[i]), bool(rejected[i]), 1 - q, s.shift - half, s.shift + half))
            i += 1
        out.append(judged)
    return out
