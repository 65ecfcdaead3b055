"""The time budget's rules (isobench.analysis.budget): durations, the fixed looks, and
the call on each case at a look, on effects computed by the real tests."""

import math
import re

import numpy as np
import pytest

from isobench.analysis import budget as b
from isobench.analysis.repetitions import sequential_alpha
from isobench.analysis.stats import compare_cell
from isobench.run.schedule import williams_row
from isobench.study import StudyError, parse_study, with_budget

# the shipped quick study at five rounds: the figures below are worked out for five
QUICK = re.sub(r"(?m)^repetitions = \d+$", "repetitions = 5", open("studies/quick.toml").read())
assert "repetitions = 5" in QUICK


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("30m", 1800),
        ("1h30m", 5400),
        ("90s", 90),
        ("2h", 7200),
        (" 45m ", 2700),
        ("1h0m5s", 3605),
        ("30", 30),
        ("90", 90),
    ],
)
def test_durations(text, seconds):
    assert b.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "30min", "0s", "0m", "25h", "-5m", "1.5h", "5m30"])
def test_not_durations(text):
    with pytest.raises(ValueError):
        b.parse_duration(text)


@pytest.mark.parametrize(
    "seconds, text", [(1, "1m"), (60, "1m"), (61, "2m"), (2820, "47m"), (3600, "1h"), (7501, "2h6m"), (86400, "24h")]
)
def test_the_budget_that_pays_for_a_time_is_whole_minutes_run_reads(seconds, text):
    assert b.budget_text(seconds) == text
    assert seconds <= b.parse_duration(text) < seconds + 60  # --budget reads it back, never short


@pytest.mark.parametrize("seconds", [0, -5, 86401, math.inf])
def test_no_budget_pays_for_nothing_or_more_than_a_day(seconds):
    assert b.budget_text(seconds) is None


def test_points_are_whole_latin_squares_growing_by_half_up_to_the_cap():
    pts = b.points(6, 3, 100)
    assert pts == (6, 9, 15, 24, 36, 54, 81, 100)
    assert all(p % 3 == 0 for p in pts[:-1])
    assert b.points(4, 2, 4) == (4,)
    assert b.points(5, 5, 12) == (5, 10, 12)  # at least one unit more each time
    with pytest.raises(ValueError):
        b.points(1, 3, 10)


def test_first_block_is_the_planned_rounds_rounded_up_to_squares():
    assert b.first_block(5, 3) == 6
    assert b.first_block(3, 3) == 6  # never fewer than BUDGET_FIRST_MIN
    assert b.first_block(8, 4) == 8
    plan = b.make_plan(1800, 5, 3, None)
    assert plan.first == 6 and plan.cap == b.BUDGET_CAP and plan.looks == len(plan.points)
    assert plan.next_point(6) == 9 and plan.next_point(100) is None


def _effect(log_ratio: float, sd: float, n: int, seed: int = 0):
    """A paired cell whose per-round log ratios have exactly this mean and SD."""
    z = np.random.default_rng(seed).standard_normal(n)
    z = (z - z.mean()) / z.std(ddof=1)
    ref = np.full(n, 100.0)
    cand = ref * np.exp(log_ratio + sd * z)
    return compare_cell(cand, ref, True, pairs=list(zip(cand, ref)))


Q = sequential_alpha(8) / 14  # 8 looks, 14 primary cells


def test_a_large_change_is_resolved_at_the_first_look():
    e = _effect(math.log(0.6), 0.03, 6)
    assert b.cell_resolved(e, Q, 5.0)


def test_a_tight_null_cell_is_equivalent_and_resolved():
    e = _effect(0.0, 0.005, 6)
    assert b.cell_resolved(e, Q, 5.0)


def test_a_noisy_cell_is_not_resolved_and_needs_more_rounds_the_noisier_it_is():
    quiet, loud = _effect(0.01, 0.03, 6), _effect(0.01, 0.06, 6)
    assert not b.cell_resolved(quiet, Q, 5.0) and not b.cell_resolved(loud, Q, 5.0)
    assert 6 < b.cell_needs(quiet, Q, 5.0) < b.cell_needs(loud, Q, 5.0)


def test_a_visible_change_needs_fewer_rounds_than_equivalence_would():
    # a 20% drop at SD 0.2 is called sooner than ±5% equivalence could be shown
    e = _effect(math.log(0.8), 0.2, 6)
    either = b.rounds_to_resolve(e.noise_sd, Q, 5.0)
    assert b.cell_needs(e, Q, 5.0) < either


def _ev(case, effects, rounds=6, round_s=10.0):
    return b.Evidence(case, tuple(effects), rounds, round_s)


def test_allocate_stops_resolved_cases_measures_open_ones_and_drops_hopeless_ones():
    plan = b.make_plan(1800, 5, 3, None)
    resolved = _ev(("compression", "default"), [_effect(math.log(0.6), 0.02, 6), _effect(0.0, 0.004, 6, 1)])
    open_ = _ev(("hpcc", "default"), [_effect(0.02, 0.03, 6)])
    hopeless = _ev(("fio", "randread"), [_effect(0.05, 0.5, 6)])
    a = b.allocate([resolved, open_, hopeless], plan, 1200.0, Q, 5.0)
    states = {c.case[0]: c.state for c in a.calls}
    assert states == {"compression": b.RESOLVED, "hpcc": b.OPEN, "fio": b.HOPELESS}
    assert a.measure == (("hpcc", "default"),) and a.more == 3  # to the next point, 9
    assert "1 resolved, 1 open, 1 hopeless of 3 cases" in a.text
    why = next(c.why for c in a.calls if c.state == b.HOPELESS)
    assert "beyond the cap" in why or "time left" in why


def test_a_case_stays_open_for_the_cells_that_can_still_resolve():
    # docker-host's cell needs a few more rounds, docker-nat's hundreds: the
    # case's rounds serve both, so it is measured for docker-host's sake, for
    # the rounds that cell needs, and says one cell is out of reach
    plan = b.make_plan(1800, 5, 3, None)
    near, far = _effect(0.02, 0.012, 6), _effect(0.05, 0.5, 6, 1)
    need = b.cell_needs(near, Q, 5.0)
    assert need < 20 and b.cell_needs(far, Q, 5.0) > plan.cap
    a = b.allocate([_ev(("compression", "default"), [far, near])], plan, 1200.0, Q, 5.0)
    call = a.calls[0]
    assert call.state == b.OPEN and call.needed == need and call.why == "1 of its 2 open cells out of reach"
    assert a.measure == (("compression", "default"),) and a.more == 3
    # with only the far cell open it is hopeless, as before
    alone = b.allocate([_ev(("compression", "default"), [far])], plan, 1200.0, Q, 5.0)
    assert alone.calls[0].state == b.HOPELESS and alone.stop


def test_allocate_gives_the_block_to_the_cases_nearest_an_answer_when_time_is_short():
    plan = b.make_plan(1800, 5, 3, None)
    e = _effect(0.02, 0.012, 6)  # open, needs about 9 rounds
    need = b.cell_needs(e, Q, 5.0)
    assert not b.cell_resolved(e, Q, 5.0) and 9 <= need <= 10
    cheap, dear = _ev(("a", "x"), [e], round_s=5.0), _ev(("b", "x"), [e], round_s=10.0)
    left = (need - 6) * 10.0  # each alone could finish; one block of both (15 s + 30 s) does not fit
    a = b.allocate([dear, cheap], plan, left, Q, 5.0)
    states = {c.case[0]: c.state for c in a.calls}
    assert states == {"a": b.OPEN, "b": b.OUT_OF_TIME}
    assert a.measure == (("a", "x"),) and a.more == 3
    roomy = b.allocate([dear, cheap], plan, 100.0, Q, 5.0)
    assert roomy.measure == (("b", "x"), ("a", "x"))  # in the study's order


def test_allocate_stops_when_nothing_is_open_and_at_the_cap():
    plan = b.make_plan(1800, 5, 3, 9)
    assert plan.points == (6, 9)
    done = b.allocate([_ev(("a", "x"), [_effect(math.log(0.5), 0.02, 6)])], plan, 1000, Q, 5.0)
    assert done.stop and done.count(b.RESOLVED) == 1
    capped = b.allocate([_ev(("a", "x"), [_effect(0.02, 0.05, 9)], rounds=9)], plan, 1000, Q, 5.0)
    assert capped.stop and capped.calls[0].state == b.HOPELESS and "cap of 9" in capped.calls[0].why


def test_an_untestable_case_is_hopeless_with_the_reason():
    plan = b.make_plan(1800, 5, 3, None)
    e = compare_cell([], [1.0, 2.0], True)
    a = b.allocate([_ev(("a", "x"), [e])], plan, 1000, Q, 5.0)
    assert a.calls[0].state == b.HOPELESS and a.calls[0].why.startswith("cannot be tested")


def test_williams_rows_balance_positions_and_neighbours():
    for n in (2, 3, 4, 5):
        period = n if n % 2 == 0 else 2 * n
        rows = [williams_row(n, r) for r in range(period)]
        positions = {(r.index(e), e) for r in rows for e in range(n)}
        assert len(positions) == n * n
        follows = [(x, y) for r in rows for x, y in zip(r, r[1:])]
        assert len(set(follows)) == n * (n - 1) and len(follows) == len(set(follows)) * (period // n)


def test_the_study_budget_field_and_its_refusals():
    s = parse_study(QUICK.replace('baseline = "native"', 'baseline = "native"\nbudget = "30m"'), "q.toml")
    assert s.meta.budget_s == 1800 and s.budget_plan().first == 6
    with pytest.raises(StudyError, match=r"^q.toml: study.budget: 'half an hour' is not a duration"):
        parse_study(QUICK.replace('baseline = "native"', 'baseline = "native"\nbudget = "half an hour"'), "q.toml")
    with pytest.raises(StudyError, match="two stopping rules"):
        parse_study(QUICK.replace("repetitions = 5", 'repetitions = "auto"\nbudget = "30m"'), "q.toml")
    with pytest.raises(StudyError, match=r"^--budget '3x': '3x' is not a duration"):
        with_budget(parse_study(QUICK, "q.toml"), "3x")
    assert with_budget(parse_study(QUICK, "q.toml"), "45m").meta.budget_s == 2700


def test_the_report_says_how_the_budget_was_spent():
    from isobench.results.model import RunData
    from isobench.results.stopping import budget_lines, budget_summary

    facts = {
        "budget": {
            "budget_s": 1800.0,
            "points": [6, 9, 15],
            "looks": 3,
            "spent_s": 1500.0,
            "cases": {
                "compression/default": {"state": "resolved", "rounds": 6, "needed": None, "why": ""},
                "fio/randread": {
                    "state": "hopeless",
                    "rounds": 6,
                    "needed": 471,
                    "why": "needs about 471 rounds, beyond the cap of 15",
                },
            },
        }
    }
    run = RunData("r", "quick", "", None, "complete", facts, "", "", "native", ["native"], {}, [])
    lines = budget_lines(run)
    assert lines[0].startswith("Time budget 30 min (25 min spent at the last look): a first block of 6 rounds")
    assert "tests at alpha = 0.05/3 for the 3 planned looks (at 6, 9, 15 rounds)" in lines[0]
    assert lines[1] == "Workload cases: 1 resolved, 1 hopeless (of 2)."
    assert lines[2] == "fio/randread: hopeless after 6 rounds: needs about 471 rounds, beyond the cap of 15."
    assert budget_summary(run).startswith("Time budget 30 min: of 2 workload cases, 1 resolved, 1 hopeless")
    plain = RunData("r", "quick", "", None, "complete", {}, "", "", "native", ["native"], {}, [])
    assert budget_lines(plain) == [] and budget_summary(plain) == ""
