"""verdicts: BH, the FCR-level interval, three verdicts, the noise floor and
the gate. The property tests run the real per-cell API on 10,000 data sets."""

import functools
import math
import warnings

import numpy as np
import pytest
from scipy import stats as st

from isobench.analysis.settle import rounds_to_resolve, rounds_to_settle, settle_chance
from isobench.analysis.stats import compare_cell, interval
from isobench.analysis.verdicts import (
    CHANGED,
    EQUIVALENT,
    INCONCLUSIVE,
    ROUNDS_NEEDED_CAP,
    adjust,
    callable_change,
    change_text,
    detectable_change,
    judge,
    regressions,
    rounds_needed,
)

ALPHA = 0.05


def exact(n, mean_log, sd_log, seed):
    """n positive values whose logs have exactly this mean and sd."""
    z = np.random.default_rng(seed).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    return np.exp(mean_log + sd_log * z)


def random_effects(count, seed):
    """Varied data sets: n 2..9, paired or not, CV 0.1%..60%, no change or a
    change of any size, ties from rounding, a few constant samples."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n_c, n_b = rng.integers(2, 10, 2)
        sd = math.exp(rng.uniform(math.log(0.001), math.log(0.6)))
        shift = 0.0 if rng.random() < 0.5 else rng.normal(0, 0.3)
        paired = rng.random() < 0.3
        if paired:
            n_b = n_c
        c = 100 * np.exp(shift + rng.normal(0, sd, n_c))
        b = 100 * np.exp(rng.normal(0, sd, n_b))
        kind = i % 50
        if kind == 0:
            c, b = np.full(n_c, 7.0), np.full(n_b, 7.0)
        elif kind == 1:
            c, b = np.full(n_c, 7.5), np.full(n_b, 7.0)
        elif kind == 2:
            c, b = np.round(c, -1) + 10, np.round(b, -1) + 10  # heavy ties
        out.append(compare_cell(c, b, bool(rng.random() < 0.5), pairs=list(zip(c, b)) if paired else None))
    return out


@pytest.fixture(scope="module")
def effects():
    return random_effects(10_000, seed=11)


def excludes_one(v):
    return v.low > 1 or v.high < 1


# -- property: the printed interval excludes 1 exactly when "changed" -----------------


def test_single_cell_interval_excludes_one_iff_changed(effects):
    kinds = set()
    for e in effects:
        v = judge(e)
        assert v.m == 1 and v.level == pytest.approx(1 - ALPHA, abs=1e-15)
        assert excludes_one(v) == v.changed == v.rejected == (e.p <= ALPHA)
        assert 0 < v.low <= e.ratio <= v.high  # always positive, around the estimate
        if e.p != ALPHA:  # the standalone interval at 1 - alpha is the printed one
            assert interval(e) == (v.low, v.high)
        kinds.add((e.test, v.verdict))
    # The data sets exercised every test and every verdict.
    assert {
        ("paired", CHANGED),
        ("welch-log", CHANGED),
        ("paired", INCONCLUSIVE),
        ("welch-log", INCONCLUSIVE),
        ("welch-log", EQUIVALENT),
    } <= kinds


def test_bh_table_interval_excludes_one_iff_changed(effects):
    rng = np.random.default_rng(5)
    start, tables, rejections = 0, 0, 0
    while start < len(effects):
        size = int(rng.integers(1, 200))
        table = effects[start : start + size]
        start += size
        verdicts = adjust(table)
        ps = np.array([e.p for e in table])
        m = len(table)
        ref = st.false_discovery_control(ps, method="bh")
        assert [v.p_adjusted for v in verdicts] == pytest.approx(list(ref), rel=1e-12, abs=0)
        r = sum(v.rejected for v in verdicts)
        q = max(r, 1) * ALPHA / m
        for v, p in zip(verdicts, ps):
            assert v.m == m and v.level == pytest.approx(1 - q, rel=1e-15)
            assert excludes_one(v) == v.changed == v.rejected == bool(v.p_adjusted <= ALPHA)
            # Step-up property behind the equivalence: rejected p <= R·alpha/m < others.
            assert (p <= q * (1 + 1e-12)) if v.rejected else (p > q * (1 - 1e-12))
            assert 0 < v.low <= v.effect.ratio <= v.high
        tables += 1
        rejections += r
    assert tables > 50 and rejections > 500


# -- BH ------------------------------------------------------------------------------------


def test_bh_adjusted_p_matches_scipy_and_counts_only_tested_cells():
    ps = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
    effects = [compare_cell(*_with_p(p), True) for p in ps]
    untested = compare_cell([1.0], [1.0, 2.0], True)
    verdicts = adjust([untested, *effects])
    assert [e.p for e in effects] == pytest.approx(ps, rel=1e-6)
    ref = st.false_discovery_control([e.p for e in effects], method="bh")
    assert [v.p_adjusted for v in verdicts[1:]] == pytest.approx(list(ref), rel=1e-12)
    assert verdicts[0].verdict == INCONCLUSIVE and "n < 2" in verdicts[0].text
    assert math.isnan(verdicts[0].p_adjusted) and verdicts[0].m == 10
    # Hand computation: p_(k)·m/k = .01, .04, .13, .1025, .084, ... -> only 2 rejected.
    assert [v.rejected for v in verdicts[1:]] == [True, True] + [False] * 8
    assert verdicts[1].level == pytest.approx(1 - 2 * ALPHA / 10)


def _with_p(p, n=4):
    """Paired log ratios with exactly this two-sided p (t on n - 1 df)."""
    t = st.t.isf(p / 2, n - 1)
    d = exact(n, 0.1, 0.1 * math.sqrt(n) / t, seed=int(p * 1e6))
    b = np.full(n, 50.0)
    return d * b, b


def test_adjust_overrides_and_checks():
    e = compare_cell([100, 101, 99, 100], [100, 100.5, 99.5, 100], True)
    assert adjust([e], tol_pct=3)[0].margin_pct == 3
    assert [v.margin_pct for v in adjust([e, e], tol_pct=[1, 2])] == [1, 2]
    with pytest.raises(ValueError):
        adjust([e, e], tol_pct=[1])
    with pytest.raises(ValueError):
        adjust([e], noise_pct=-1)
    with pytest.raises(ValueError):
        adjust([e, compare_cell([1, 2], [1, 2], True, alpha=0.01)])
    assert adjust([]) == []


# -- three verdicts ----------------------------------------------------------------------


def test_clearly_changed():
    v = judge(compare_cell([80, 81, 79, 80, 80.5], [100, 101, 99, 100, 100.5], True))
    assert v.verdict == CHANGED and v.direction == "worse"
    assert v.pct == pytest.approx(-19.9, abs=0.1) and v.overhead_pct == pytest.approx(19.9, abs=0.1)
    assert -21 < v.pct_low < -19.9 < v.pct_high < -18.5
    assert v.text.startswith("worse: \u221220.0% [\u221221.0%, \u221219.0%] at 95%, significant after correction")
    assert v.rounds_needed is None


def test_clearly_equivalent():
    c, b = exact(10, math.log(100.3), 0.005, 1), exact(10, math.log(100), 0.005, 2)
    v = judge(compare_cell(c, b, True))
    assert v.verdict == EQUIVALENT and not v.rejected
    assert -5 < v.pct_low < 0 < v.pct_high < 5
    assert v.text.startswith("equivalent within ±5%: +0.3% [")


def test_inconclusive_with_rounds_needed():
    c, b = exact(3, math.log(100), 0.2, 3), exact(3, math.log(100), 0.2, 4)
    e = compare_cell(c, b, True)
    v = judge(e)
    assert v.verdict == INCONCLUSIVE
    # Welch on equal sds: df 2(n - 1) at n rounds, the noise observed at df 4. The smallest n
    # whose run settles the cell 4 times in 5 at the worst true change (analysis/settle.py):
    # 633 (518 at the observed sd taken as exact, >1000 asking for the half-margin width)
    need = rounds_to_settle(e.noise_sd, e.df, ALPHA, 5.0, e.df_factor, e.df_lost, now=3)
    assert e.df == pytest.approx(4) and e.df_factor == pytest.approx(2) and need == 633
    chance = functools.partial(settle_chance, e.noise_sd, e.df, ALPHA, 5.0, df_factor=e.df_factor)
    assert chance(n=need) >= 0.8 > chance(n=need - 1)  # exact: not one over
    assert v.rounds_needed == need and "about 633 rounds would resolve ±5% 4 times in 5" in v.text
    assert rounds_needed(e, ALPHA, 5.0, cap=2000) == need
    assert rounds_needed(e, ALPHA, 5.0, cap=500) == 501  # beyond a cap: the cap + 1


def _paired_cell(n, shift, sd=0.05, seed=6):
    b = np.full(n, 100.0)
    c = b * exact(n, shift, sd, seed)
    return compare_cell(c, b, True, pairs=list(zip(c, b)))


def test_rounds_needed_really_resolves_any_estimate():
    # Paired, observed log-ratio sd 0.05 at n = 3: at the predicted n, with the
    # same noise, every estimate gives "changed" or "equivalent".
    e = _paired_cell(3, 0.0, seed=5)
    v = judge(e)
    assert v.verdict == INCONCLUSIVE
    n = rounds_to_resolve(e.noise_sd, ALPHA, 5.0)  # at the observed noise taken as exact
    assert v.rounds_needed == rounds_needed(e, ALPHA, 5.0) > n and 4 <= n <= 50  # 4 times in 5 asks more
    target = math.log(1.05) / 2  # the hardest estimate: half the margin
    for shift in [*np.linspace(-0.1, 0.1, 81), target, -target]:
        assert judge(_paired_cell(n, shift)).verdict != INCONCLUSIVE, shift
    # One round fewer leaves that estimate inconclusive.
    assert judge(_paired_cell(n - 1, target)).verdict == INCONCLUSIVE


def test_rounds_needed_is_capped():
    e = compare_cell([50, 100, 200], [60, 120, 250], True)
    v = judge(e)
    assert v.verdict == INCONCLUSIVE
    assert v.rounds_needed == ROUNDS_NEEDED_CAP + 1 and v.rounds_needed_text == ">1000"
    assert "more than 1000 rounds" in v.text and "about >" not in v.text


# -- the smallest change an inconclusive cell's run could have called ---------------------


def test_an_inconclusive_cell_says_the_smallest_change_its_run_could_call():
    # paired, per-round log-ratio sd 0.05 at n = 3, alone (m = 1: q = alpha)
    e = _paired_cell(3, 0.0, seed=5)
    v = judge(e)
    assert v.verdict == INCONCLUSIVE and e.noise_sd == pytest.approx(0.05)
    expected = math.expm1(detectable_change(e.noise_sd, 3, ALPHA)) * 100
    assert v.callable_pct == pytest.approx(expected, rel=1e-12) and 10 < expected < 30
    assert callable_change(e, ALPHA) == v.callable_pct
    assert (
        f"; this run could call changes of about {change_text(expected)} or more; about "
        f"{v.rounds_needed} rounds would resolve ±5%"
    ) in v.text
    # Welch (no pairs): the same with n = min(n_c, n_b) at Welch's df, at the level of the printed interval
    w = compare_cell(exact(4, math.log(100), 0.2, 3), exact(3, math.log(100), 0.2, 4), True)
    many = adjust([w] + [_paired_cell(3, 0.0, seed=5)] * 9)
    assert w.test == "welch-log" and many[0].verdict == INCONCLUSIVE and many[0].m == 10
    q = 1 - many[0].level
    assert many[0].callable_pct == pytest.approx(math.expm1(detectable_change(w.noise_sd, 3, q, df=w.df)) * 100)
    assert many[0].callable_pct > judge(w).callable_pct  # the stricter level of ten cells calls less


def test_only_inconclusive_cells_carry_the_callable_change():
    changed = judge(compare_cell([80, 81, 79, 80, 80.5], [100, 101, 99, 100, 100.5], True))
    c, b = exact(10, math.log(100.3), 0.005, 1), exact(10, math.log(100), 0.005, 2)
    equivalent = judge(compare_cell(c, b, True))
    untested = judge(compare_cell([5.0], [1.0, 2.0], True))
    assert [v.verdict for v in (changed, equivalent, untested)] == [CHANGED, EQUIVALENT, INCONCLUSIVE]
    for v in (changed, equivalent, untested):
        assert v.callable_pct is None and v.callable_text == "" and "could call" not in v.text


def test_the_callable_change_shrinks_as_rounds_grow():
    verdicts = [judge(_paired_cell(n, 0.0, sd=0.2)) for n in (3, 5, 8, 12, 20)]
    assert all(v.verdict == INCONCLUSIVE for v in verdicts)
    pcts = [v.callable_pct for v in verdicts]
    assert all(a > b for a, b in zip(pcts, pcts[1:])), pcts


def test_the_callable_change_is_printed_like_the_pilots_resolution():
    assert [change_text(p) for p in (3.14159, 9.96, 10.4, 31.2, 999.0, 1000.0, math.inf)] == [
        "3.1%",
        "10.0%",
        "10%",
        "31%",
        "999%",
        ">+999%",
        ">+999%",
    ]
    # three noisy rounds among 99 cells: a many-fold change, said as such
    calm = compare_cell([100, 101, 99], [100, 100.5, 99.5], True)
    v = adjust([_paired_cell(3, 0.0, sd=0.5)] + [calm] * 98)[0]
    assert v.callable_pct > 999 and "; this run could call only changes beyond +999%;" in v.text
    # two: beyond what exp can say (e^delta overflows), so nothing is said, never "inf"
    wild = compare_cell([100, 60], [50, 100], True, pairs=[(100, 50), (60, 100)])
    v = adjust([wild] + [calm] * 98)[0]
    assert v.verdict == INCONCLUSIVE and v.callable_pct is None and "could call" not in v.text


def test_two_rounds_among_99_cells_keep_a_finite_positive_interval():
    # df = 1 at level 1 - 0.05/99: t = 1260, exp(log ratio ± t·se) under- and
    # overflows; the bounds stay finite and positive.
    wild = compare_cell([100, 60], [50, 100], True, pairs=[(100, 50), (60, 100)])
    calm = compare_cell([100, 101, 99], [100, 100.5, 99.5], True)
    v = adjust([wild] + [calm] * 98)[0]
    assert wild.test == "paired" and v.m == 99 and v.verdict == INCONCLUSIVE
    assert 0 < v.low < v.effect.ratio < v.high < math.inf
    assert v.text.startswith("inconclusive at n = 2: +9.5% [<\u221299.9%, >+999%] at ")  # never "inf"


def test_verdicts_never_warn_on_degenerate_cells():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cells = [
            compare_cell([7.0] * 3, [7.0] * 3, True),
            compare_cell([2.0] * 3, [1.0] * 3, True),
            compare_cell([0.0, 1.0], [1.0, 2.0], True),
            compare_cell([5.0], [1.0, 2.0], True),
        ]
        v = adjust(cells)
    assert [x.verdict for x in v] == [EQUIVALENT, CHANGED, INCONCLUSIVE, INCONCLUSIVE]
    assert v[0].low == v[0].high == 1.0
    assert "no logarithm" in v[2].text and v[2].rounds_needed is None


# -- the noise floor -------------------------------------------------------------------------


def test_noise_floor_holds_back_a_small_real_change():
    c = exact(10, math.log(102), 0.004, 7)
    b = exact(10, math.log(100), 0.004, 8)
    plain = judge(compare_cell(c, b, False))
    assert plain.verdict == CHANGED and plain.direction == "worse"
    assert 1 < plain.pct_low and plain.pct_high < 3
    floored = judge(compare_cell(c, b, False, noise_pct=3))
    assert floored.rejected and floored.verdict == EQUIVALENT
    assert "inside the noise floor ±3%" in floored.text
    assert regressions([floored], 1.0) == [] and regressions([plain], 1.0) == [plain]
    # A floor the interval reaches beyond does not hold the change back.
    assert judge(compare_cell(c, b, False, noise_pct=2)).verdict == CHANGED


def test_noise_floor_above_tolerance_widens_equivalence():
    c, b = exact(6, math.log(106), 0.01, 9), exact(6, math.log(100), 0.01, 10)
    v = adjust([compare_cell(c, b, True)], tol_pct=2, noise_pct=10)[0]
    assert v.margin_pct == 10 and v.verdict == EQUIVALENT


# -- the gate ---------------------------------------------------------------------------------


def test_regressions_are_bh_changed_worse_beyond_pct():
    base = [100, 101, 99, 100, 100.5, 99.5]
    cells = [
        compare_cell([80, 81, 79, 80, 80.5, 79.5], base, True),  # throughput -20%: regression
        compare_cell([120, 121, 119, 120, 120.5, 119.5], base, True),  # throughput +20%: better
        compare_cell([97, 98, 96, 97, 97.5, 96.5], base, True),  # -3%: changed, under 5%
        compare_cell([110, 111, 109, 110, 110.5, 109.5], base, False),  # latency +10%: regression
        compare_cell([50, 150, 100], [100, 101, 99], True),  # too noisy to tell
    ]
    v = adjust(cells)
    assert [x.verdict for x in v] == [CHANGED, CHANGED, CHANGED, CHANGED, INCONCLUSIVE]
    assert regressions(v, 5) == [v[0], v[3]]
    assert regressions(v, 15) == [v[0]]
    assert regressions(v, 2) == [v[0], v[2], v[3]]


def test_a_level_never_reads_100_percent():
    from isobench.analysis.verdicts import fmt_level

    assert fmt_level(0.95) == "95%" and fmt_level(0.975) == "97.5%"
    assert fmt_level(1 - 0.05 / 66) == "99.92%"  # as before: four significant digits
    assert fmt_level(1 - 0.05 / (64 * 21)) == "99.9963%"  # two budgeted runs' 21 primaries
    assert fmt_level(1 - 0.05 / 1e6) == "99.999995%"


def test_a_crossover_cell_predicts_at_its_own_df():
    """A duet blocked by CPU side tests at n − 2 df: the change it could call
    and the rounds that would settle it are computed there, not at n − 1."""
    rng = np.random.default_rng(3)
    n = 7
    d = rng.normal(0.0, 0.06, n)
    pairs = [(100 * math.exp(x), 100.0) for x in d]
    sides = ["0" if r % 2 == 0 else "1" for r in range(n)]
    e = compare_cell([c for c, _ in pairs], [b for _, b in pairs], True, pairs=pairs, sides=sides)
    assert e.test == "paired-crossover" and e.df == n - 2
    v = judge(e)
    assert v.verdict == INCONCLUSIVE
    assert v.callable_pct == pytest.approx(math.expm1(detectable_change(e.noise_sd, n, ALPHA, df=n - 2)) * 100)
    assert v.callable_pct > math.expm1(detectable_change(e.noise_sd, n, ALPHA)) * 100  # n − 1 would promise more
    k = rounds_to_resolve(e.noise_sd, ALPHA, 5.0, df_lost=1.0)
    target = math.log1p(5 / 100) / 2

    def half(rounds: int, df: float) -> float:
        return float(st.t.isf(ALPHA / 2, df)) * e.noise_sd / math.sqrt(rounds)

    assert half(k, k - 2) < target <= half(k - 1, k - 3)  # exact at the crossover's df
    assert v.rounds_needed == rounds_to_settle(e.noise_sd, n - 2, ALPHA, 5.0, df_lost=1.0)  # and 4 times in 5
    assert v.rounds_needed != rounds_to_settle(e.noise_sd, n - 1, ALPHA, 5.0)


def test_a_run_with_looks_says_a_fixed_runs_rounds():
    """An adaptive or budgeted run tests at alpha/K; the rounds it suggests for a
    fixed run are at a fixed run's level (its budget figure: results/suggestion.py)."""
    from isobench.results.analysis import Question, Settings, judge_cells
    from isobench.results.model import MetricKey

    e = _paired_cell(3, 0.0, seed=5)
    (v,) = adjust([e], ALPHA / 8, looks=8)
    assert v.level == pytest.approx(1 - ALPHA / 8) and v.looks == 8 and v.fixed_q == pytest.approx(ALPHA)
    assert v.rounds_needed == rounds_needed(e, ALPHA, 5.0) < rounds_needed(e, ALPHA / 8, 5.0)
    assert judge(e).looks == 1 and judge(e).fixed_q == pytest.approx(ALPHA)
    with pytest.raises(ValueError, match="looks"):
        adjust([e], looks=0)
    key = MetricKey("w", "c", "m", "u", True)
    b = [100.0] * 3
    c = [100 * x for x in exact(3, 0.0, 0.05, 5)]  # _paired_cell(3, 0.0, seed=5)'s values
    (w,) = judge_cells([Question(key, c, b, list(zip(c, b)))], Settings(looks=8))
    assert w.looks == 8 and w.rounds_needed == v.rounds_needed
