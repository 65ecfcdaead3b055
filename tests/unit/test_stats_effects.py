"""stats.compare_cell and stats.interval: log-scale tests against scipy."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats as st

from isobench.analysis.stats import (
    Effect,
    compare_cell,
    interval,
    log_paired,
    log_welch,
    ratio_interval,
    t_pvalue,
)


def lognormal(rng, n, mean=100.0, cv=0.05):
    return mean * np.exp(rng.normal(0.0, math.sqrt(math.log1p(cv * cv)), n))


# -- against scipy ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_welch_log_matches_scipy_on_logs(seed):
    rng = np.random.default_rng(seed)
    c, b = lognormal(rng, 3 + seed % 4, 90, 0.1), lognormal(rng, 4 + seed % 3, 100, 0.2)
    e = compare_cell(c, b, higher_is_better=True)
    ref = st.ttest_ind(np.log(c), np.log(b), equal_var=False)
    assert e.test == "welch-log" and e.n_pairs == 0
    assert e.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert e.df == pytest.approx(ref.df, rel=1e-10)
    assert e.log_ratio == pytest.approx(np.mean(np.log(c)) - np.mean(np.log(b)), rel=1e-12)
    assert e.ratio == pytest.approx(st.gmean(c) / st.gmean(b), rel=1e-12)
    lo, hi = ref.confidence_interval(0.95)
    assert interval(e) == pytest.approx((math.exp(lo), math.exp(hi)), rel=1e-10)
    assert interval(e, 0.9) == pytest.approx(tuple(np.exp(ref.confidence_interval(0.9))), rel=1e-10)


@pytest.mark.parametrize("seed", range(8))
def test_paired_matches_scipy_ttest_1samp_on_log_ratios(seed):
    rng = np.random.default_rng(100 + seed)
    n = 2 + seed
    drift = np.exp(rng.normal(0, 0.3, n))  # shared by both sides of a round
    c, b = lognormal(rng, n, 95, 0.02) * drift, lognormal(rng, n, 100, 0.02) * drift
    e = compare_cell(c, b, higher_is_better=False, pairs=list(zip(c, b)))
    d = np.log(c) - np.log(b)
    ref = st.ttest_1samp(d, 0.0)
    assert (e.test, e.n_pairs, e.df) == ("paired", n, n - 1)
    assert e.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert e.ratio == pytest.approx(math.exp(d.mean()), rel=1e-12)
    assert e.se == pytest.approx(np.std(d, ddof=1) / math.sqrt(n), rel=1e-12)
    assert interval(e) == pytest.approx(tuple(np.exp(ref.confidence_interval(0.95))), rel=1e-10)


def test_pairing_cancels_drift_that_welch_sees_as_noise():
    # Each round the host is 0.7x..1.3x as fast; the candidate is always 5% slower.
    speed = np.array([0.7, 1.3, 1.0, 0.85, 1.15, 0.95])
    b = 100 * speed
    c = b * 0.95 * np.array([1.001, 0.999, 1.0, 1.002, 0.998, 1.0])
    paired = compare_cell(c, b, True, pairs=list(zip(c, b)))
    welch = compare_cell(c, b, True)
    assert paired.p < 1e-6 < 0.5 < welch.p
    assert paired.ratio == pytest.approx(0.95, abs=1e-3)


def test_too_few_pairs_fall_back_to_welch_and_say_so():
    e = compare_cell([1.0, 1.1, 1.2], [1.0, 1.05, 1.3], True, pairs=[(1.0, 1.0)])
    assert e.test == "welch-log" and e.n_pairs == 0
    assert "1 complete round(s) to pair" in e.reason
    assert e.p == pytest.approx(st.ttest_ind(np.log([1.0, 1.1, 1.2]), np.log([1.0, 1.05, 1.3]), equal_var=False).pvalue)


# -- direction and the fields of Effect ------------------------------------------------


def test_halved_throughput_is_fifty_percent_overhead():
    e = compare_cell([50, 50.5, 49.5], [100, 101, 99], higher_is_better=True)
    assert e.ratio == pytest.approx(0.5, rel=1e-4)
    assert e.pct == pytest.approx(-50, rel=1e-3)
    assert e.overhead_pct == pytest.approx(50, rel=1e-3)
    lat = compare_cell([200, 202, 198], [100, 101, 99], higher_is_better=False)
    assert lat.overhead_pct == pytest.approx(100, rel=1e-3) and lat.pct == lat.overhead_pct


def test_summaries_of_the_raw_values_are_carried():
    e = compare_cell([1, 2, 3], [4, 5, 6], True)
    assert e.candidate.mean == 2.0 and e.baseline.mean == 5.0
    assert (e.n_c, e.n_b, e.alpha, e.tol_pct, e.noise_pct) == (3, 3, 0.05, 5.0, 0.0)


# -- the two cells from issue 11: interval and test now agree -------------------------


def test_issue_case_significant_with_interval_excluding_one():
    e = compare_cell([76.8, 77.1, 92.0], [97.3, 108.1, 129.0], True)
    lo, hi = interval(e)
    assert e.p == pytest.approx(0.045202, abs=1e-6)
    assert e.ratio == pytest.approx(0.737720, abs=1e-6)
    assert (lo, hi) == pytest.approx((0.550248, 0.989066), abs=1e-6)
    assert hi < 1 and e.p < 0.05


def test_issue_case_not_significant_with_interval_including_one():
    e = compare_cell([56.7, 72.7, 86.0], [104.4, 108.3, 109.6], True)
    lo, hi = interval(e)
    assert e.p == pytest.approx(0.072772, abs=1e-6)
    assert (lo, hi) == pytest.approx((0.395510, 1.097723), abs=1e-6)
    assert lo < 1 < hi and e.p > 0.05
    assert lo > 0  # the old first-order CI reached 0.336 here and went negative at CV >= 30%


# -- degenerate data: never a crash, never nan-driven --------------------------------


def _quiet(*args, **kw) -> Effect:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return compare_cell(*args, **kw)


def test_constant_equal_samples_have_p_one_even_with_different_n():
    e = _quiet([7.0] * 3, [7.0] * 4, True)  # mean(log 7) of 3 and of 4 copies differ by an ulp
    assert (e.p, e.ratio, e.se, e.log_ratio) == (1.0, 1.0, 0.0, 0.0)
    assert interval(e) == (1.0, 1.0)


def test_constant_different_samples_have_p_zero():
    e = _quiet([2.0] * 3, [1.0] * 3, True)
    assert e.p == 0.0 and e.ratio == pytest.approx(2.0)
    lo, hi = interval(e)
    assert lo == hi == pytest.approx(2.0) and lo > 1


def test_constant_per_round_ratio_is_certain_when_paired():
    c, b = [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]
    e = _quiet(c, b, True, pairs=list(zip(c, b)))
    # log(2x) - log(x) is 0.693... up to an ulp, so the "noise" is rounding residue.
    assert e.test == "paired" and e.p < 1e-20 and e.ratio == pytest.approx(2.0)
    assert interval(e)[0] > 1.99
    same = _quiet(b, b, True, pairs=list(zip(b, b)))
    assert same.p == 1.0 and interval(same) == (1.0, 1.0)


def test_one_constant_side_is_ordinary_welch():
    e = _quiet([5.0, 5.0, 5.0], [1.0, 2.0, 3.0], True)
    assert e.df == pytest.approx(2.0)  # all the variance is the baseline's
    t = (math.log(5) - np.mean(np.log([1, 2, 3]))) / math.sqrt(np.var(np.log([1, 2, 3]), ddof=1) / 3)
    assert e.p == pytest.approx(2 * st.t.sf(t, 2), rel=1e-10)


@pytest.mark.parametrize(
    "cand,base,why",
    [
        ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], "values <= 0"),
        ([1.0, 2.0], [-1.0, 2.0], "values <= 0"),
        ([1.0, float("nan")], [1.0, 2.0], "non-finite"),
        ([1.0, float("inf")], [1.0, 2.0], "non-finite"),
        ([5.0], [1.0, 2.0, 3.0], "n < 2"),
        ([], [1.0, 2.0], "n < 2"),
    ],
)
def test_untestable_cells_are_marked_none_with_a_reason(cand, base, why):
    e = _quiet(cand, base, True)
    assert e.test == "none" and not e.tested and why in e.reason
    assert math.isnan(e.p) and math.isnan(e.se)
    assert all(math.isnan(x) for x in interval(e))


def test_n_one_still_has_a_point_estimate():
    e = _quiet([5.0], [1.0, 2.0, 3.0], True)
    assert e.ratio == pytest.approx(5 / st.gmean([1, 2, 3]))
    assert math.isnan(_quiet([0.0], [1.0, 2.0], True).ratio)


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError):
        compare_cell([1, 2], [1, 2], True, alpha=0)
    with pytest.raises(ValueError):
        compare_cell([1, 2], [1, 2], True, tol_pct=-1)
    with pytest.raises(ValueError):
        interval(compare_cell([1, 2], [1, 2], True), level=1.0)


# -- the vectorised helpers are the scalar ones -------------------------------------------


def test_vectorised_welch_and_paired_match_per_cell_results():
    rng = np.random.default_rng(7)
    lc, lb = rng.normal(0, 0.1, (50, 4)), rng.normal(0.05, 0.2, (50, 5))
    lc[3] = 0.25  # a constant row
    lb[3] = 0.25
    t = log_welch(lc, lb)
    for i in range(50):
        e = compare_cell(np.exp(lc[i]), np.exp(lb[i]), True)
        assert (float(t.p[i]), float(t.df[i])) == pytest.approx((e.p, e.df), rel=1e-12)
    assert t.p[3] == 1.0
    d = rng.normal(0, 0.1, (20, 6))
    tp = log_paired(d)
    assert tp.p == pytest.approx(st.ttest_1samp(d, 0.0, axis=-1).pvalue, rel=1e-10)


def test_t_pvalue_zero_noise_is_deterministic():
    assert list(t_pvalue([0.0, 0.3, -0.3, 1.0], [0.0, 0.0, 0.0, 0.5], [2, 2, 2, 3])) == pytest.approx(
        [1.0, 0.0, 0.0, 2 * st.t.sf(2.0, 3)]
    )


def test_ratio_interval_obeys_the_decision_at_the_boundary():
    # |t| exactly on the critical value: the decision, not rounding, decides.
    crit = st.t.isf(0.025, 4)
    est, se = 0.2, 0.2 / crit
    lo, hi = ratio_interval(est, se, 4, 0.05, exclude=True)
    assert 1.0 < lo <= hi
    lo, hi = ratio_interval(est, se, 4, 0.05, exclude=False)
    assert lo <= 1.0 <= hi
    lo, hi = ratio_interval(-est, se, 4, 0.05, exclude=True)
    assert lo <= hi < 1.0
    # Away from the boundary the bounds are untouched.
    assert ratio_interval(0.5, 0.1, 4, 0.05, exclude=True) == pytest.approx(
        (math.exp(0.5 - crit * 0.1), math.exp(0.5 + crit * 0.1)), rel=1e-12
    )
    # A real disagreement with the decision is not hidden: only a floating-
    # point tie (a bound within 1e-9 of 1) is resolved in the decision's favour.
    lo, hi = ratio_interval(0.1, 0.1, 4, 0.05, exclude=True)
    assert lo < 1.0 < hi
    lo, hi = ratio_interval(0.5, 0.1, 4, 0.05, exclude=False)
    assert 1.0 < lo < hi
