"""stats.py against hand-computed numbers and scipy's reference functions."""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats as st

from isobench.stats import (
    PERMUTATION_MAX_N,
    Summary,
    ci_halfwidth_pct,
    compare,
    summarize,
)

# t(0.975, df=4), from statistical tables.
T975_DF4 = 2.776445105


def with_mean_sd(n: int, mean: float, sd: float, seed: int) -> np.ndarray:
    """n values whose sample mean and sd are exactly the given ones."""
    z = np.random.default_rng(seed).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return mean + sd * z


# -- summarize ---------------------------------------------------------------

def test_summary_of_one_to_five_matches_hand_computation():
    s = summarize([1, 2, 3, 4, 5])
    assert s.n == 5
    assert s.mean == 3.0 and s.median == 3.0
    assert s.min == 1.0 and s.max == 5.0
    assert s.sd == pytest.approx(math.sqrt(2.5))  # sum of squares 10 / (n-1)
    assert s.cv == pytest.approx(math.sqrt(2.5) / 3)
    half = T975_DF4 * math.sqrt(2.5) / math.sqrt(5)  # 1.963243
    assert s.ci95_low == pytest.approx(3 - half, abs=1e-8)
    assert s.ci95_high == pytest.approx(3 + half, abs=1e-8)
    assert s.ci95_low == pytest.approx(1.0367568, abs=1e-6)
    assert s.se == pytest.approx(math.sqrt(0.5))


def test_summary_median_differs_from_mean_for_skewed_values():
    s = summarize([1, 1, 10])
    assert s.median == 1.0
    assert s.mean == 4.0


def test_summary_of_one_value_has_no_spread():
    s = summarize([42.0])
    assert (s.n, s.mean, s.median) == (1, 42.0, 42.0)
    assert math.isnan(s.sd) and math.isnan(s.cv)
    assert math.isnan(s.ci95_low) and math.isnan(s.ci95_high)


def test_summary_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        summarize([])


def test_summary_rejects_non_finite_values():
    with pytest.raises(ValueError):
        summarize([1.0, float("nan")])


def test_identical_values_have_exactly_zero_spread():
    # 0.1 is not representable; a computed sd would be rounding residue.
    s = summarize([0.1] * 7)
    assert s.sd == 0.0
    assert s.ci95_low == s.ci95_high == pytest.approx(0.1)


# -- ci_halfwidth_pct ----------------------------------------------------------

def test_ci_halfwidth_pct_is_relative_half_width():
    s = summarize([1, 2, 3, 4, 5])
    assert ci_halfwidth_pct(s) == pytest.approx(T975_DF4 * math.sqrt(0.5) / 3 * 100, rel=1e-8)
    assert ci_halfwidth_pct(s) == pytest.approx(65.44144, abs=1e-4)


def test_ci_halfwidth_pct_edge_cases():
    assert math.isnan(ci_halfwidth_pct(summarize([3.0])))
    assert ci_halfwidth_pct(summarize([0.0, 0.0])) == 0.0
    assert ci_halfwidth_pct(summarize([-1.0, 1.0])) == math.inf


# -- compare: Welch p and ratio CI ---------------------------------------------

def test_welch_p_matches_scipy_and_hand_computation():
    a, b = [1, 2, 3, 4, 5], [2, 4, 6, 8, 10]
    c = compare(a, b, higher_is_better=True)
    ref = st.ttest_ind(a, b, equal_var=False)
    assert c.p_welch == pytest.approx(ref.pvalue, rel=1e-12)
    # By hand: t = -3 / sqrt(2.5/5 + 10/5), df = 2.5^2 / (0.5^2/4 + 2^2/4)
    t = -3 / math.sqrt(2.5)
    df = 6.25 / (0.0625 + 1.0)
    assert c.p_welch == pytest.approx(2 * st.t.sf(abs(t), df), rel=1e-10)
    assert c.p_welch == pytest.approx(0.10753, abs=1e-5)
    assert c.p_value == c.p_welch
    assert not c.significant
    assert c.verdict == "no significant difference"


def test_ratio_ci_propagates_relative_errors_with_welch_df():
    cand, base = [110, 120, 130], [90, 100, 110]  # means 120 / 100, sd 10 each
    c = compare(cand, base, higher_is_better=True)
    assert c.ratio == pytest.approx(1.2)
    assert c.pct == pytest.approx(20.0)
    se = 10 / math.sqrt(3)
    vc, vb = (se / 120) ** 2, (se / 100) ** 2
    df = (vc + vb) ** 2 / (vc**2 / 2 + vb**2 / 2)
    assert df == pytest.approx(3.874, abs=1e-3)
    half = st.t.ppf(0.975, df) * math.sqrt(vc + vb) * 1.2
    assert c.ratio_ci95_low == pytest.approx(1.2 - half, rel=1e-10)
    assert c.ratio_ci95_high == pytest.approx(1.2 + half, rel=1e-10)
    assert c.ratio_ci95_low == pytest.approx(0.94636, abs=1e-5)
    assert c.pct_ci95_low == pytest.approx((1.2 - half - 1) * 100, rel=1e-10)
    assert c.pct_ci95_high == pytest.approx(45.3638, abs=1e-4)
    # The CI spans 1 and Welch agrees that 20% at n=3 is not established.
    assert c.p_welch == pytest.approx(st.ttest_ind(cand, base, equal_var=False).pvalue)
    assert not c.significant


# -- compare: the INSA study's point -------------------------------------------

def test_insa_real_times_at_n500_are_significantly_different():
    native = with_mean_sd(500, 31.46, 0.05, seed=1)
    docker = with_mean_sd(500, 31.54, 0.05, seed=2)
    c = compare(docker, native, higher_is_better=False)  # seconds: lower is better
    assert c.candidate.mean == pytest.approx(31.54) and c.candidate.sd == pytest.approx(0.05)
    # t = 0.08 / sqrt(2 * 0.05^2 / 500) = 25.3, df ~ 998
    assert c.p_welch == pytest.approx(2 * st.t.sf(0.08 / math.sqrt(2 * 0.0025 / 500), 998), rel=1e-3)
    assert c.p_welch < 1e-50
    assert c.significant
    assert c.verdict == "worse"
    assert c.pct == pytest.approx(0.08 / 31.46 * 100)  # +0.25%: real, but tiny
    assert c.overhead_pct == pytest.approx(c.pct)
    assert c.p_permutation is None  # n >= 8


def test_tiny_difference_at_n3_with_large_sd_is_not_significant():
    native = [30.46, 31.46, 32.46]  # sd 1.0
    docker = [30.54, 31.54, 32.54]
    c = compare(docker, native, higher_is_better=False)
    assert c.candidate.sd == pytest.approx(1.0)
    # t = 0.08 / sqrt(2/3), df = 4
    assert c.p_welch == pytest.approx(2 * st.t.sf(0.08 / math.sqrt(2 / 3), 4), rel=1e-8)
    assert c.p_welch > 0.9
    assert not c.significant
    assert c.verdict == "no significant difference"
    # Exact reference by enumerating the C(6,3) = 20 splits of the pooled values.
    pooled = native + docker
    observed = abs(np.mean(docker) - np.mean(native))
    extreme = 0
    for idx in itertools.combinations(range(6), 3):
        x = [pooled[i] for i in idx]
        y = [pooled[i] for i in range(6) if i not in idx]
        extreme += abs(np.mean(x) - np.mean(y)) >= observed - 1e-12
    assert c.p_permutation == pytest.approx(extreme / 20)
    assert c.p_permutation == pytest.approx(0.7)


# -- compare: degenerate samples -------------------------------------------------

def test_identical_samples_are_not_significant_and_warn_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare([7.0, 7.0, 7.0], [7.0, 7.0, 7.0], higher_is_better=True)
        d = compare([1, 2, 3, 4], [1, 2, 3, 4], higher_is_better=True)
    assert (c.p_welch, c.significant, c.verdict) == (1.0, False, "no significant difference")
    assert (c.ratio, c.pct, c.overhead_pct) == (1.0, 0.0, 0.0)
    assert (c.ratio_ci95_low, c.ratio_ci95_high) == (1.0, 1.0)
    assert d.p_welch == pytest.approx(1.0)
    assert not d.significant


def test_constant_but_different_samples_are_significant():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], higher_is_better=True)
    assert c.p_welch == 0.0
    assert c.significant and c.verdict == "better"
    assert c.ratio == 2.0 and c.ratio_ci95_low == c.ratio_ci95_high == 2.0


def test_one_constant_side_still_uses_welch():
    cand, base = [5.0, 5.0, 5.0], [1.0, 2.0, 3.0]
    c = compare(cand, base, higher_is_better=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns about the constant side
        ref = st.ttest_ind(cand, base, equal_var=False).pvalue
    assert c.p_welch == pytest.approx(ref)
    assert c.p_welch == pytest.approx(2 * st.t.sf(3 / math.sqrt(1 / 3), 2))  # sd 1, n 3; df 2
    assert c.significant


@pytest.mark.parametrize("cand,base", [([5.0], [1.0, 2.0, 3.0]), ([1.0, 2.0], [4.0])])
def test_n_below_two_is_not_tested(cand, base):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = compare(cand, base, higher_is_better=True)
    assert c.verdict == "n too small"
    assert not c.significant
    assert math.isnan(c.p_welch) and c.p_permutation is None
    assert math.isnan(c.ratio_ci95_low)
    assert c.ratio == pytest.approx(sum(cand) / len(cand) / (sum(base) / len(base)))


def test_zero_baseline_mean_gives_nan_ratio_but_still_a_test():
    c = compare([1.0, 1.1, 0.9], [-0.1, 0.0, 0.1], higher_is_better=True)
    assert math.isnan(c.ratio) and math.isnan(c.pct)
    assert c.significant and c.verdict == "better"


def test_empty_sample_is_an_error():
    with pytest.raises(ValueError):
        compare([], [1.0, 2.0], higher_is_better=True)


# -- compare: direction ------------------------------------------------------------

def test_lower_throughput_is_worse_with_positive_overhead():
    c = compare([78, 79, 80, 81, 82], [98, 99, 100, 101, 102], higher_is_better=True)
    assert c.pct == pytest.approx(-20.0)
    assert c.overhead_pct == pytest.approx(20.0)
    assert c.significant and c.verdict == "worse"


def test_higher_latency_is_worse_with_positive_overhead():
    c = compare([118, 119, 120, 121, 122], [98, 99, 100, 101, 102], higher_is_better=False)
    assert c.pct == pytest.approx(20.0)
    assert c.overhead_pct == pytest.approx(20.0)
    assert c.significant and c.verdict == "worse"


def test_lower_latency_is_better_with_negative_overhead():
    c = compare([78, 79, 80, 81, 82], [98, 99, 100, 101, 102], higher_is_better=False)
    assert c.pct == pytest.approx(-20.0)
    assert c.overhead_pct == pytest.approx(-20.0)
    assert c.verdict == "better"


# -- compare: permutation test --------------------------------------------------------

def test_permutation_p_is_exact_for_small_separated_samples():
    # 4 vs 4 fully separated: 2 of the C(8,4) = 70 splits are as extreme.
    c = compare([5, 6, 7, 8], [1, 2, 3, 4], higher_is_better=True)
    assert c.p_permutation == pytest.approx(2 / 70)
    # 3 vs 3 cannot go below 2/20, which is why it does not decide.
    d = compare([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], higher_is_better=True)
    assert d.p_permutation == pytest.approx(0.1)
    assert d.significant


def test_permutation_p_matches_scipy_exact_reference():
    cand, base = [10.2, 10.9, 11.4, 10.7], [10.1, 10.0, 10.6, 10.3, 9.8]
    ref = st.permutation_test((cand, base), lambda x, y, axis: np.mean(x, axis) - np.mean(y, axis),
                              vectorized=True, permutation_type="independent",
                              n_resamples=np.inf).pvalue
    assert compare(cand, base, True).p_permutation == pytest.approx(ref)


def test_permutation_is_reproducible_and_only_for_small_n():
    cand = [3.1, 2.9, 3.4, 3.0, 2.6, 2.8, 3.2]  # mean 3.0
    base = list(np.linspace(2.5, 3.5, 40))  # too many splits to enumerate
    p1 = compare(cand, base, True).p_permutation
    p2 = compare(cand, base, True).p_permutation
    assert p1 is not None and p1 == p2
    assert 0.5 < p1 <= 1.0  # same centre: far from significant
    big = [1.0 + 0.01 * i for i in range(PERMUTATION_MAX_N)]
    assert compare(big, big, True).p_permutation is None


def test_summary_fields_are_carried_in_the_comparison():
    c = compare([1, 2, 3], [4, 5, 6], higher_is_better=True)
    assert isinstance(c.candidate, Summary) and c.candidate.mean == 2.0
    assert c.baseline.mean == 5.0
    assert c.alpha == 0.05
