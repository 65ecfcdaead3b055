"""measure_for: the measured rounds fitted once to the warm-up's pace, so a
short command gets more rounds than a long one in about the same time."""

import pytest

from isobench.run.looks import fitted_rounds
from isobench.study import StudyError, parse_study


def test_a_short_command_gets_more_rounds_and_a_long_one_its_least():
    # sysbench's warm-up: 3 samples of 1.7 s one at a time; as a duet a round is 2 slots
    assert fitted_rounds(180, 5.1, 1, 3, True, 8, 100) == int(180 // (5.1 * 2 / 3 * 1.2))
    # 7-Zip: 3 samples of 11 s: 6 rounds would fit, the least is 8
    assert fitted_rounds(180, 33, 1, 3, True, 8, 100) == 8
    assert fitted_rounds(180, 0.3, 1, 3, True, 8, 100) == 100  # at most
    assert fitted_rounds(180, 33, 0, 3, True, 8, 100) == 8  # no warm-up: nothing to fit
    assert fitted_rounds(180, 6, 1, 3, False, 8, 100) == 30  # one at a time: the warm-up's pace


STUDY = """
[study]
name = "s"
repetitions = 8
measure_for = "3m"
{extra}
[environments.native]
[workloads.mine]
command = ["true"]
"""


def test_measure_for_is_a_duration_and_one_stopping_rule():
    assert parse_study(STUDY.format(extra=""), "s.toml").meta.measure_for == "3m"
    with pytest.raises(StudyError, match="s.toml: study.measure_for: .*not a duration"):
        parse_study(STUDY.format(extra="").replace('"3m"', '"soon"'), "s.toml")
    with pytest.raises(StudyError, match="measure_for fixes the rounds after the warm-up; a budget"):
        parse_study(STUDY.format(extra='budget = "10m"'), "s.toml")


def test_the_progress_line_counts_the_fitted_rounds():
    # a try of 2026-11-27 printed "round 6/8" with 48 rounds fitted: the study's least, not the run's
    from isobench.run.looks import round_label

    meta = parse_study(STUDY.format(extra="warmup = 1"), "s.toml").meta
    assert round_label(meta, 0, 49) == "warm-up"
    assert round_label(meta, 6, 49) == "round 6/48"
    assert round_label(meta, 6) == "round 6/8"  # before the fit: the study's repetitions
