"""isobench calibrate's two pure halves: the calibration study it writes
(baseline, A/A copies, slowed copies with the planted quota) and the rates
it reads back from a run's verdicts."""

from pathlib import Path

import pytest

from isobench.results.model import MetricKey, RunData
from isobench.run.calibration import derive, judge, parse_sizes
from isobench.study import StudyError, parse_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = (ROOT / "studies" / "calibrate.toml").read_text()
TPUT = MetricKey("compression", "default", "throughput_mbs", "MB/s", True, "throughput")
REAL = MetricKey("compression", "default", "real_s", "s", False, "duration")


def test_the_derived_study_runs_copies_and_slowed_copies_of_one_environment():
    text, plan = derive(STUDY, "calibrate.toml", None, (5.0, 10.0, 20.0), 3, None)
    study = parse_study(text, "derived")
    assert study.meta.baseline == "docker-host" and study.meta.name == "calibrate-calibrate"
    assert list(study.environments) == [
        "docker-host",
        "docker-host-aa1",
        "docker-host-aa2",
        "docker-host-aa3",
        "docker-host-slow5",
        "docker-host-slow10",
        "docker-host-slow20",
    ]
    cpus = {name: spec.cpus for name, spec in study.environments.items()}
    assert cpus["docker-host"] == cpus["docker-host-aa3"] == plan.quota == 1.0
    assert cpus["docker-host-slow10"] == pytest.approx(0.9) and cpus["docker-host-slow20"] == pytest.approx(0.8)
    # everything else about the environment is the original's
    base = study.environments["docker-host"]
    assert study.environments["docker-host-slow5"].model_copy(update={"cpus": 1.0}) == base
    assert [e.key for e in study.workloads] == [e.key for e in parse_study(STUDY).workloads]


def test_a_long_study_name_still_gives_a_valid_calibration_name():
    long = STUDY.replace('name = "calibrate"', 'name = "a-study-name-of-thirty-one-char"', 1)
    assert long != STUDY
    text, _ = derive(long, "calibrate.toml", None, (10.0,), 2, None)
    assert parse_study(text, "derived").meta.name == "a-study-name-of-thirt-calibrate"


def test_the_environments_own_quota_is_the_unslowed_one():
    text = STUDY.replace("[environments.docker-host]", "[environments.docker-host]\ncpus = 1.5")
    derived, plan = derive(text, "s.toml", "docker-host", (50.0,), 1, 0.3)
    assert plan.quota == 1.5
    assert parse_study(derived).environments["docker-host-slow50"].cpus == pytest.approx(0.75)


@pytest.mark.parametrize(
    "env, copies, needle",
    [
        ("native", 2, "--env: native (native) has no CPU quota (cpus)"),
        ("nope", 2, "--env: 'nope' is not an environment"),
        ("docker-host", 0, "--copies: 0 is outside 1 to 16"),
    ],
)
def test_what_cannot_be_calibrated_is_refused_in_one_line(env, copies, needle):
    text = STUDY.replace("[environments.docker-host]", "[environments.docker-host]\n[environments.native]")
    with pytest.raises(StudyError) as err:
        derive(text, "s.toml", env, (10.0,), copies, None)
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "sizes, needle",
    [
        ("0", "outside (0, 90)"),
        ("90", "outside (0, 90)"),
        ("-5", "outside (0, 90)"),
        ("ten", "not a number"),
        ("5,5", "each planted size once"),
    ],
)
def test_planted_sizes_outside_0_to_90_are_refused(sizes, needle):
    with pytest.raises(StudyError) as err:
        parse_sizes(sizes)
    assert str(err.value).startswith("--sizes:") and needle in str(err.value)


def test_sizes_parse_with_or_without_percent_signs():
    assert parse_sizes("20, 5%,10") == (5.0, 10.0, 20.0)


def _run(factors: dict[str, float], noise: list[float]) -> RunData:
    """A calibration run in memory: each environment's throughput is the
    baseline's times its factor, with the same per-round host drift."""
    envs = list(factors)
    values, rounds = {}, {}
    for env, f in factors.items():
        jitter = [1 + 0.002 * ((i * 7 + len(env)) % 5 - 2) for i in range(len(noise))]
        values[(TPUT, env)] = [v * f * j for v, j in zip(noise, jitter)]
        values[(REAL, env)] = [8 / (v * f * j) for v, j in zip(noise, jitter)]
        rounds[(TPUT, env)] = rounds[(REAL, env)] = list(range(len(noise)))
    return RunData(
        "cal",
        "calibrate-calibrate",
        "",
        None,
        "complete",
        {},
        '[study]\nname = "c"\n',
        "",
        envs[0],
        envs,
        {e: {} for e in envs},
        [TPUT, REAL],
        values,
        rounds=rounds,
    )


def test_judge_counts_false_alarms_on_copies_and_detections_on_slowed_copies():
    drift = [8.0, 7.1, 8.6, 6.9, 7.7, 8.2, 7.4, 8.0]
    run = _run({"dh": 1.0, "dh-aa1": 1.0, "dh-aa2": 1.0, "dh-slow2": 0.98, "dh-slow50": 0.5}, drift)
    result = judge(run)
    by = {r.label: r for r in result.rates}
    assert list(by) == ["A/A", "planted 2%", "planted 50%"]
    # primaries only: throughput, not the duration beside it
    assert by["A/A"].n == 2 and by["A/A"].hits == 0
    assert by["planted 50%"].hits == 1 and by["planted 50%"].measured_pct == pytest.approx(50, abs=1)
    assert 0 <= by["A/A"].low <= by["A/A"].rate <= by["A/A"].high <= 1
    assert result.as_dict()["rates"][2]["rate"] == 1.0


def test_a_copy_that_got_faster_is_not_a_detection():
    drift = [8.0, 7.1, 8.6, 6.9, 7.7, 8.2, 7.4, 8.0]
    result = judge(_run({"dh": 1.0, "dh-slow10": 1.5}, drift))
    assert [(r.label, r.hits, r.n) for r in result.rates] == [("planted 10%", 0, 1)]
