"""anomalies: outliers (modified z), slow first round, drift (Spearman)."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as st

from isobench.analysis.anomalies import drift, outliers, slow_first_round

# -- outliers -------------------------------------------------------------------------


def test_outlier_by_hand():
    o = outliers([10.0, 10.2, 9.9, 10.1, 15.0], threshold=3.5, min_n=5)
    # median 10.1; |deviations| 0.1 0.1 0.2 0 4.9 -> MAD 0.1
    assert o.scores == pytest.approx([-0.6745, 0.6745, -1.349, 0.0, 33.0505])
    assert o.indices == (4,) and o.values == (15.0,) and o.flagged
    assert o.text == "1 outlier of 5 values (modified z > 3.5, median 10.1): 15 (z +33.1)"


def test_just_below_and_above_the_threshold():
    # median 0, MAD 1: z = 0.6745 x, so 3.5 is crossed at x = 5.189
    base = [-1.0, -1.0, 0.0, 1.0, 1.0, 0.0]
    assert not outliers([*base, 5.18], threshold=3.5, min_n=5).flagged
    assert outliers([*base, 5.2], threshold=3.5, min_n=5).indices == (6,)
    assert outliers([*base, -5.2], threshold=3.5, min_n=5).indices == (6,)


def test_mad_zero_falls_back_to_mean_absolute_deviation():
    o = outliers([5.0, 5.0, 5.0, 5.0, 9.0], threshold=3.5, min_n=5)  # MAD 0, MeanAD 0.8
    assert o.scores[4] == pytest.approx(4 / (1.253314 * 0.8))
    assert o.indices == (4,)
    p = outliers([5.0, 5.0, 5.0, 6.0, 9.0], threshold=3.5, min_n=5)  # MAD 0, MeanAD 1: z(9) = 3.19
    assert p.scores[4] == pytest.approx(4 / 1.253314) and not p.flagged


def test_identical_values_have_no_outlier():
    o = outliers([3.0] * 8)
    assert not o.flagged and o.scores == (0.0,) * 8
    assert o.text == "no outlier (modified z <= 7)"


def test_too_few_values_are_not_judged():
    o = outliers([76.8, 77.1, 92.0])
    assert not o.flagged and o.scores == ()
    assert o.text == "too few values (3 < 8) to look for outliers"


def test_defaults_stay_quiet_on_pure_noise():
    # 2000 cells of 10 normal values: the default rule flags ~1% of them
    rng = np.random.default_rng(7)
    flagged = sum(outliers(rng.normal(100, 5, 10)).flagged for _ in range(2000))
    assert flagged < 2000 * 0.03
    assert outliers([100, 101, 99, 100, 100.5, 99.5, 100.2, 160]).indices == (7,)


def test_two_outliers_and_a_custom_threshold():
    vals = [100, 101, 99, 100, 100.5, 99.5, 130, 60]
    assert outliers(vals).indices == (6, 7)
    assert outliers(vals, threshold=100).indices == ()


# -- slow first round ---------------------------------------------------------------------


def test_slow_first_round_throughput():
    s = slow_first_round([60, 100, 101, 99, 100.5], higher_is_better=True)
    assert s.flagged and s.first == 60 and s.rest_median == 100.25
    # rest: median 100.25, |dev| .25 .75 1.25 .25 -> MAD 0.5
    assert s.score == pytest.approx(0.6745 * (60 - 100.25) / 0.5)
    assert s.pct == pytest.approx((60 / 100.25 - 1) * 100)
    assert "warm-up may be too short" in s.text


def test_slow_first_round_latency_is_a_high_first_value():
    assert slow_first_round([150, 100, 101, 99, 100.5], higher_is_better=False).flagged
    assert not slow_first_round([150, 100, 101, 99, 100.5], higher_is_better=True).flagged


def test_first_round_must_be_the_worst_and_far_off():
    assert not slow_first_round([97, 100, 98, 101, 99.5], True).flagged  # within the noise
    assert not slow_first_round([60, 100, 55, 101, 99], True).flagged  # round 3 was worse
    assert not slow_first_round([60, 100, 101, 99], True).flagged  # 4 rounds: too few
    assert slow_first_round([90, 100, 100, 100, 100], True).flagged  # constant rest: any gap


# -- drift ------------------------------------------------------------------------------------


def test_perfect_trend_over_eight_rounds_is_drift_with_exact_p():
    d = drift([1, 2, 3, 4, 5, 6, 7, 8])
    assert d.rho == 1.0 and d.p == pytest.approx(2 / math.factorial(8))
    assert d.flagged and d.slope_pct_per_round == pytest.approx(1 / 4.5 * 100)
    assert d.text.startswith("values rise across 8 rounds (Spearman rho +1.00")


def test_four_rounds_can_never_show_drift():
    d = drift([10, 9, 8, 7])
    assert d.rho == -1.0 and d.p == pytest.approx(2 / 24) and not d.flagged


def test_exact_p_matches_enumeration_with_ties():
    vals = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0]
    d = drift(vals)
    rho = st.spearmanr(np.arange(7), vals).statistic
    ranks = np.array(list(itertools.permutations(st.rankdata(vals))))  # every ordering
    perms = [np.corrcoef(np.arange(7), r)[0, 1] for r in ranks]
    assert d.rho == pytest.approx(rho)
    assert d.p == pytest.approx(np.mean(np.abs(perms) >= abs(rho) - 1e-12))


def test_long_runs_use_scipy_spearman():
    rng = np.random.default_rng(3)
    vals = 100 + np.arange(20) * 0.5 + rng.normal(0, 2, 20)
    d = drift(vals)
    ref = st.spearmanr(np.arange(20), vals)
    assert (d.rho, d.p) == pytest.approx((ref.statistic, ref.pvalue))
    assert d.flagged and d.rho > 0.5


def test_weak_but_significant_trend_is_not_flagged():
    rng = np.random.default_rng(4)
    vals = np.arange(400) * 0.002 + rng.normal(0, 1, 400)  # rho ~ 0.2 over 400 rounds
    d = drift(vals)
    assert d.p < 0.05 and abs(d.rho) < 0.5 and not d.flagged


def test_no_drift_in_constant_or_noise():
    assert not drift([5.0] * 6).flagged and "constant" in drift([5.0] * 6).text
    assert not drift([1.0, 2.0]).flagged
    assert not drift([100, 102, 99, 101, 100.5, 98, 101.5]).flagged


def test_non_finite_values_are_refused():
    with pytest.raises(ValueError):
        outliers([1.0, float("nan"), 2.0, 3.0, 4.0])


def test_the_drift_slope_is_scipys_theil_sen_slope_exactly():
    """drift's slope is scipy.stats.theilslopes' slope, to the last bit, over
    every pair of rounds up to 256 and over block medians beyond: varied
    lengths, ties, values over many orders, one value apart."""
    from isobench.analysis.anomalies import DRIFT_THEIL_MAX_N, _theil_sen

    rng = np.random.default_rng(3)
    for n in [*range(3, 30), 255, 256, 257, 1000]:
        for kind in range(4):
            values = rng.normal(100, 5, n)
            if kind == 1:
                values = np.round(values)
            elif kind == 2:
                values = np.exp(rng.normal(0, 3, n))
            elif kind == 3:
                values = np.full(n, 7.0)
                values[rng.integers(n)] = 8.0
            x, a = np.arange(n, dtype=float), values
            if n > DRIFT_THEIL_MAX_N:
                blocks = np.array_split(np.arange(n), DRIFT_THEIL_MAX_N)
                x, a = np.array([b.mean() for b in blocks]), np.array([np.median(values[b]) for b in blocks])
            assert _theil_sen(values) == st.theilslopes(a, x).slope, (n, kind)
