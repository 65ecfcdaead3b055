"""stats.py against hand-computed numbers and scipy's reference functions."""

import math

import numpy as np
import pytest

from isobench.analysis.stats import ci_halfwidth_pct, summarize

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


def test_median_of_is_numpys_median_bit_for_bit():
    """summarize's and the screen's median (analysis.summary.median_of) is
    np.median's, to the last bit: odd and even n, ties, signs, values over
    many orders, halves that round, and nan for nothing."""
    from isobench.analysis.summary import median_of

    rng = np.random.default_rng(7)
    for n in [*range(1, 40), 255, 256, 1001]:
        for kind in range(5):
            a = [
                rng.normal(100, 5, n),
                np.round(rng.normal(10, 3, n)),
                np.exp(rng.normal(0, 20, n)) * rng.choice([-1, 1], n),
                rng.choice([0.1, 0.2, 0.30000000000000004, 1e308, -1e308], n),
                np.log(rng.uniform(0.5, 2, n)),
            ][kind]
            with np.errstate(over="ignore"):  # 1e308 + 1e308: inf in both
                got, want = median_of(a), np.median(a)
            assert got == want and math.copysign(1, got) == math.copysign(1, want), (n, kind, got, want)
    for pair in ([1e308, 1e308], [5e-324, 5e-324], [-0.0, 0.0]):  # inf, the least subnormal, 0
        with np.errstate(over="ignore"):
            got, want = median_of(np.array(pair)), np.median(pair)
        assert got == want and math.copysign(1, got) == math.copysign(1, want), pair
    assert math.isnan(median_of(np.array([])))


# -- ci_halfwidth_pct ----------------------------------------------------------


def test_ci_halfwidth_pct_is_relative_half_width():
    s = summarize([1, 2, 3, 4, 5])
    assert ci_halfwidth_pct(s) == pytest.approx(T975_DF4 * math.sqrt(0.5) / 3 * 100, rel=1e-8)
    assert ci_halfwidth_pct(s) == pytest.approx(65.44144, abs=1e-4)


def test_ci_halfwidth_pct_edge_cases():
    assert math.isnan(ci_halfwidth_pct(summarize([3.0])))
    assert ci_halfwidth_pct(summarize([0.0, 0.0])) == 0.0
    assert ci_halfwidth_pct(summarize([-1.0, 1.0])) == math.inf
