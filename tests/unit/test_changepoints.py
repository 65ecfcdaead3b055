"""isobench.analysis.changepoints: a known step is found at its place with its size;
A/A series and a single wild run make none; the interval excludes 0 exactly
for the confirmed steps; too short a series has no candidate."""

import math

import numpy as np
import pytest

from isobench.analysis import changepoints as cp


def series(n, sigma, step=0.0, at=None, seed=0, df=4):
    """n runs around 0 with a step of STEP (log scale) from position AT, each
    with an SE estimated at DF degrees of freedom, as per-run SEs are."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0, sigma, n)
    if step:
        y[at:] += step
    se = sigma * np.sqrt(rng.chisquare(df, n) / df)
    return y, se


def confirmed(y, se):
    return [j for j in cp.judge([cp.find_steps(y, se)])[0] if j.confirmed]


@pytest.mark.parametrize("n, at", [(6, 3), (8, 4), (16, 5), (32, 20)])
def test_a_known_step_is_found_at_its_place_with_its_size(n, at):
    y, se = series(n, 0.02, step=math.log(0.7), at=at, seed=n)
    found = confirmed(y, se)
    assert [j.step.index for j in found] == [at]
    j = found[0]
    assert j.low < math.log(0.7) < j.high  # the interval holds the planted step
    assert j.step.before == (0, at) and j.step.after == (at, n)
    assert j.high < 0  # excludes 0: confirmed


def test_two_steps_each_found():
    y, se = series(24, 0.02, step=math.log(0.8), at=8, seed=3)
    y[16:] += math.log(1.5)
    assert [j.step.index for j in confirmed(y, se)] == [8, 16]


@pytest.mark.parametrize("n", [8, 16, 32])
def test_aa_series_make_no_step(n):
    # 200 A/A series of each length: the false-alarm rate is well under 5%
    # (docs/history.md has the simulated rates: about 0.3%)
    alarms = sum(bool(confirmed(*series(n, 0.05, seed=1000 + i))) for i in range(200))
    assert alarms <= 4


def test_a_single_wild_run_does_not_make_a_step():
    alarms = 0
    for seed in range(100):
        y, se = series(16, 0.02, seed=seed)
        y[7] += 0.3  # 15 sigma off, with an ordinary SE
        alarms += bool(confirmed(y, se))
    assert alarms <= 2


def test_a_noisy_run_weighs_less():
    # the same jump at the last two runs: precise runs make a step, runs whose
    # intervals are ten times wider do not
    y = np.array([0.0, 0.01, -0.01, 0.0, 0.01, -0.01, 0.12, 0.13])
    precise = np.full(8, 0.01)
    assert [j.step.index for j in confirmed(y, precise)] == [6]
    noisy = precise.copy()
    noisy[6:] = 0.2
    assert confirmed(y, noisy) == []


def test_too_short_a_series_has_no_candidate():
    assert cp.MIN_RUNS == 4
    assert cp.find_steps([0.0, 0.0, 0.5], [0.01, 0.01, 0.01]) == []
    # four runs are enough for a clear step (2 on each side)
    assert [j.step.index for j in confirmed(np.array([0.0, 0.001, 0.5, 0.501]), np.full(4, 0.001))] == [2]


def test_the_interval_excludes_zero_exactly_for_confirmed_steps():
    all_series = [
        cp.find_steps(*series(16, 0.05, step=s, at=8, seed=i))
        for i, s in enumerate([0, 0.05, 0.08, 0.1, 0.2, 0, 0.12] * 4)
    ]
    judged = [j for js in cp.judge(all_series) for j in js]
    assert judged
    for j in judged:
        assert j.confirmed == (j.low > 0 or j.high < 0), j


def test_constant_runs_and_bad_input():
    # identical values in every round (se 0) are allowed
    y = np.array([0.0] * 4 + [0.3] * 4)
    assert [j.step.index for j in confirmed(y, np.zeros(8))] == [4]
    with pytest.raises(ValueError):
        cp.find_steps([0.0] * 5, [0.01] * 4)
    with pytest.raises(ValueError):
        cp.find_steps([0.0, math.nan, 0, 0, 0], [0.01] * 5)


def test_judge_corrects_over_every_series():
    strong = cp.find_steps(*series(16, 0.02, step=0.3, at=8, seed=1))
    judged = cp.judge([strong, [], strong])
    assert [len(j) for j in judged] == [1, 0, 1]
    assert judged[0][0].p_adjusted == judged[2][0].p_adjusted
    assert cp.judge([]) == []
