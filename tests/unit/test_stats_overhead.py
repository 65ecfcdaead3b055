"""tworuns.overhead_change: how an environment's ratio to its run's baseline
moved between two runs. Against scipy where a reference exists, against
Satterthwaite's formula where it does not, and the printed interval agrees
with the BH decision on thousands of random pairs of runs."""

import math

import numpy as np
import pytest
from scipy import stats as st

from isobench.analysis.stats import TEST_NONE, compare_cell
from isobench.analysis.tworuns import TEST_WELCH_DIFF, overhead_change
from isobench.analysis.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE, adjust, judge

ALPHA = 0.05


def run(rng, n, overhead, sd, drift=1.0, paired=True):
    """One run: (environment's values, baseline's, within-run effect), a
    round-to-round drift shared by both sides of a round."""
    host = drift * np.exp(rng.normal(0, 0.05, n))
    base = 100 * host * np.exp(rng.normal(0, sd, n))
    env = 100 * overhead * host * np.exp(rng.normal(0, sd, n))
    e = compare_cell(env, base, True, pairs=list(zip(env, base)) if paired else None)
    return env, base, e


@pytest.mark.parametrize("seed", range(6))
def test_both_runs_paired_is_welch_between_the_per_round_log_ratios(seed):
    rng = np.random.default_rng(seed)
    env_a, base_a, a = run(rng, 4 + seed, 0.95, 0.03)
    env_b, base_b, b = run(rng, 3 + seed % 3, 0.9, 0.05, drift=0.8)
    e = overhead_change(a, b)
    da, db = np.log(env_a / base_a), np.log(env_b / base_b)
    ref = st.ttest_ind(db, da, equal_var=False)
    assert e.test == TEST_WELCH_DIFF and e.reason == ""
    assert e.log_ratio == pytest.approx(db.mean() - da.mean(), rel=1e-12)
    assert e.p == pytest.approx(ref.pvalue, rel=1e-9)
    assert e.df == pytest.approx(ref.df, rel=1e-9)
    assert e.ratio == pytest.approx(math.exp(db.mean() - da.mean()), rel=1e-12)
    assert (e.n_c, e.n_b) == (len(db), len(da))


def test_unpaired_runs_use_satterthwaite_over_every_component():
    rng = np.random.default_rng(3)
    env_a, base_a, a = run(rng, 5, 1.0, 0.04, paired=False)
    env_b, base_b, b = run(rng, 3, 1.0, 0.02, paired=True)
    e = overhead_change(a, b)
    la_env, la_base = np.log(env_a), np.log(base_a)
    d_b = np.log(env_b / base_b)
    comps = [(np.var(la_env, ddof=1) / 5, 4), (np.var(la_base, ddof=1) / 5, 4), (np.var(d_b, ddof=1) / 3, 2)]
    se2 = sum(w for w, _ in comps)
    df = se2**2 / sum(w**2 / nu for w, nu in comps)
    est = d_b.mean() - (la_env.mean() - la_base.mean())
    assert e.se == pytest.approx(math.sqrt(se2), rel=1e-12)
    assert e.df == pytest.approx(df, rel=1e-12)
    assert e.p == pytest.approx(2 * st.t.sf(abs(est) / math.sqrt(se2), df), rel=1e-9)
    assert "A welch-log, B paired" in e.reason


def test_the_same_drift_on_both_sides_cancels():
    """Every value 20% lower in B: the ratio of ratios is exactly 1."""
    rng = np.random.default_rng(8)
    env, base = 100 * np.exp(rng.normal(0, 0.005, 5)), 95 * np.exp(rng.normal(0, 0.005, 5))
    a = compare_cell(env, base, True, pairs=list(zip(env, base)))
    b = compare_cell(env * 0.8, base * 0.8, True, pairs=list(zip(env * 0.8, base * 0.8)))
    e = overhead_change(a, b)
    assert e.ratio == pytest.approx(1.0, abs=1e-12) and e.p == pytest.approx(1.0)
    assert judge(e).verdict == EQUIVALENT


def test_direction_and_overhead_sign():
    rng = np.random.default_rng(2)
    _, _, a = run(rng, 6, 1.0, 0.01)
    _, _, b = run(rng, 6, 0.9, 0.01)  # throughput 10% lower against the baseline in B
    e = overhead_change(a, b)
    assert e.pct == pytest.approx(-10, abs=2) and e.overhead_pct == pytest.approx(10, abs=2)
    assert judge(e).verdict == CHANGED and judge(e).direction == "worse"


def test_an_untested_run_leaves_the_change_untested_with_its_reason():
    a = compare_cell([100.0], [100.0], True)
    b = compare_cell([90.0, 91.0], [100.0, 99.0], True)
    e = overhead_change(a, b)
    assert e.test == TEST_NONE and e.reason.startswith("A: n < 2")
    assert judge(e).verdict == INCONCLUSIVE


def test_runs_without_noise_are_decided_exactly():
    a = compare_cell([90.0] * 3, [100.0] * 3, True, pairs=[(90.0, 100.0)] * 3)
    same = compare_cell([72.0] * 3, [80.0] * 3, True, pairs=[(72.0, 80.0)] * 3)
    other = compare_cell([70.0] * 3, [80.0] * 3, True, pairs=[(70.0, 80.0)] * 3)
    # log(72) - log(80) is not log(90) - log(100) in floating point: still no change
    assert overhead_change(a, same).p == 1.0 and overhead_change(a, same).ratio == 1.0
    assert math.isfinite(overhead_change(a, same).df) and judge(overhead_change(a, same)).verdict == EQUIVALENT
    assert overhead_change(a, other).p == 0.0 and judge(overhead_change(a, other)).verdict == CHANGED


def test_mismatched_effects_are_refused():
    a = compare_cell([90.0, 91.0], [100.0, 99.0], True)
    with pytest.raises(ValueError):
        overhead_change(a, compare_cell([90.0, 91.0], [100.0, 99.0], False))
    with pytest.raises(ValueError):
        overhead_change(a, compare_cell([90.0, 91.0], [100.0, 99.0], True, alpha=0.01))


def test_rounds_needed_is_predicted_for_an_inconclusive_change():
    rng = np.random.default_rng(4)
    _, _, a = run(rng, 3, 1.0, 0.15)
    _, _, b = run(rng, 3, 0.97, 0.15)
    v = judge(overhead_change(a, b))
    assert v.verdict == INCONCLUSIVE and v.rounds_needed > 3


# -- property: the printed interval excludes 1 exactly when BH rejects --------------------


def random_changes(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        sd = math.exp(rng.uniform(math.log(0.002), math.log(0.4)))
        moved = 1.0 if rng.random() < 0.5 else math.exp(rng.normal(0, 0.2))
        _, _, a = run(rng, int(rng.integers(2, 9)), 0.9, sd, paired=bool(rng.random() < 0.7))
        _, _, b = run(
            rng,
            int(rng.integers(2, 9)),
            0.9 * moved,
            sd * math.exp(rng.normal(0, 0.5)),
            drift=math.exp(rng.normal(0, 0.2)),
            paired=bool(rng.random() < 0.7),
        )
        out.append(overhead_change(a, b))
    return out


def test_interval_excludes_no_change_exactly_when_bh_rejects():
    changes = random_changes(4000, seed=17)
    rng = np.random.default_rng(9)
    start, rejections, verdicts_seen = 0, 0, set()
    while start < len(changes):
        size = int(rng.integers(1, 120))
        table = changes[start : start + size]
        start += size
        verdicts = adjust(table)
        r = sum(v.rejected for v in verdicts)
        q = max(r, 1) * ALPHA / len(table)
        for v in verdicts:
            assert v.level == pytest.approx(1 - q, rel=1e-15)
            assert (v.low > 1 or v.high < 1) == v.changed == v.rejected == bool(v.p_adjusted <= ALPHA)
            assert 0 < v.low <= v.effect.ratio <= v.high
            verdicts_seen.add(v.verdict)
        rejections += r
    assert rejections > 100 and verdicts_seen == {CHANGED, EQUIVALENT, INCONCLUSIVE}
