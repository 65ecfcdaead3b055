"""isobench calibrate's two pure halves: the calibration study it writes
(baseline, A/A copies, slowed copies with planted work or a planted quota)
and the rates it reads back from a run's verdicts, each plant's delivered
size beside its planted one."""

from pathlib import Path

import pytest

from isobench.results.model import MetricKey, RunData
from isobench.run.calibration import delivered, derive, judge, parse_sizes
from isobench.study import StudyError, parse_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = (ROOT / "studies" / "calibrate.toml").read_text()
TPUT = MetricKey("compression", "default", "throughput_mbs", "MB/s", True, "throughput")
REAL = MetricKey("compression", "default", "real_s", "s", False, "duration")


def test_the_derived_study_runs_copies_and_slowed_copies_of_one_environment():
    text, plan = derive(STUDY, "calibrate.toml", None, (5.0, 10.0, 20.0), 3, None, "quota")
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
    derived, plan = derive(text, "s.toml", "docker-host", (50.0,), 1, 0.3, "quota")
    assert plan.quota == 1.5
    assert parse_study(derived).environments["docker-host-slow50"].cpus == pytest.approx(0.75)


@pytest.mark.parametrize(
    "env, copies, plant, plants, needle",
    [
        ("native", 2, "quota", 1, "--env: native (native) has no CPU quota (cpus)"),
        ("nope", 2, "work", 1, "--env: 'nope' is not an environment"),
        ("docker-host", 0, "work", 1, "--copies: 0 is outside 1 to 32"),
        ("docker-host", 1, "work", 33, "--plants: 33 is outside 1 to 32"),
        ("docker-host", 1, "cfs", 1, "--plant: 'cfs' is not a kind of plant; give work or quota"),
    ],
)
def test_what_cannot_be_calibrated_is_refused_in_one_line(env, copies, plant, plants, needle):
    text = STUDY.replace("[environments.docker-host]", "[environments.docker-host]\n[environments.native]")
    with pytest.raises(StudyError) as err:
        derive(text, "s.toml", env, (10.0,), copies, None, plant, plants)
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "sizes, needle",
    [
        ("0", "outside (0, 50]"),
        ("50.5", "outside (0, 50]"),
        ("90", "outside (0, 50]"),
        ("-5", "outside (0, 50]"),
        ("nan", "outside (0, 50]"),
        ("ten", "not a number"),
        ("5,5", "each planted size once"),
    ],
)
def test_planted_sizes_outside_0_to_50_are_refused(sizes, needle):
    with pytest.raises(StudyError) as err:
        parse_sizes(sizes)
    assert str(err.value).startswith("--sizes:") and needle in str(err.value)


def test_sizes_parse_with_or_without_percent_signs():
    assert parse_sizes("20, 5%,10,50") == (5.0, 10.0, 20.0, 50.0)


def test_work_plants_are_the_default_and_leave_every_copy_as_the_environment_is():
    text, plan = derive(STUDY, "calibrate.toml", None, (5.0, 10.0), 2, None, plants=3)
    study = parse_study(text, "derived")
    assert plan.plant == "work" and plan.quota is None
    slowed = [f"docker-host-slow{s}-{i}" for s in (5, 10) for i in (1, 2, 3)]
    assert list(study.environments) == ["docker-host", "docker-host-aa1", "docker-host-aa2", *slowed]
    assert study.meta.plants == {name: float(name.split("slow")[1].split("-")[0]) for name in slowed}
    # no quota anywhere: the copies are the environment itself, the plant is in the work
    assert {spec.cpus for spec in study.environments.values()} == {None}
    assert len({spec.model_dump_json() for spec in study.environments.values()}) == 1


def test_a_workload_that_cannot_plant_work_is_refused_before_anything_starts():
    text = STUDY + '\n[workloads.mine]\ncommand = ["true"]\n'
    with pytest.raises(StudyError) as err:
        derive(text, "s.toml", None, (5.0,), 1, None)
    msg = str(err.value)
    assert msg.startswith("--plant work: workloads.mine: command: repeat = 1 cannot carry a planted 5%")
    assert "give repeat = 18" in msg and msg.endswith("or --plant quota") and "\n" not in msg
    # the quota kind plants it
    assert derive(text, "s.toml", None, (5.0,), 1, None, "quota")[1].quota == 1.0


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


def test_a_plants_delivered_size_is_its_slowdown_against_the_aa_copies():
    assert delivered(5.0, []) == pytest.approx(5.0)
    assert delivered(5.0, [0.0, 0.0, 3.0]) == pytest.approx(5.0)  # the median A/A copy
    # every copy 2% slower than the baseline (a side's bias): a plant measured
    # at 6.9% delivered 5% of it
    assert delivered(100 - 0.98 * 95, [2.0, 2.0]) == pytest.approx(5.0)
    assert delivered(3.0, [-2.0]) == pytest.approx(100 - 97 / 1.02)


def test_judge_reports_each_plants_delivered_size_beside_its_planted_one():
    drift = [8.0, 7.1, 8.6, 6.9, 7.7, 8.2, 7.4, 8.0]
    factors = {"dh": 1.0, "dh-aa1": 0.98, "dh-aa2": 0.98, "dh-slow5-1": 0.98 * 0.95, "dh-slow5-2": 0.98 * 0.97}
    result = judge(_run(factors, drift))
    plants = {p.env: p for p in result.rates[1].plants}
    assert result.rates[1].label == "planted 5%" and result.rates[1].n == 2
    assert plants["dh-slow5-1"].delivered_pct == pytest.approx(5.0, abs=0.3)
    assert plants["dh-slow5-2"].delivered_pct == pytest.approx(3.0, abs=0.3)
    assert plants["dh-slow5-1"].planted_pct == 5.0 and plants["dh-slow5-1"].cell == "compression default throughput_mbs"
    assert result.rates[1].delivered_pct == pytest.approx(4.0, abs=0.3)
    assert result.rates[1].delivered_range == pytest.approx((3.0, 5.0), abs=0.3)
    assert result.rates[1].measured_pct == pytest.approx(100 - 0.98 * 96, abs=0.3)  # not A/A-corrected
    assert not result.rates[0].plants and "delivered_pct" not in result.as_dict()["rates"][0]
    assert result.as_dict()["rates"][1]["plants"][0]["delivered_pct"] == pytest.approx(5.0, abs=0.3)


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


# -- A/A across the seam (--seam) ------------------------------------------------------------

NATIVE = STUDY.replace('baseline = "docker-host"', 'baseline = "native"').replace(
    "[environments.docker-host]", "[environments.native]\npin = true"
)


def test_the_seam_adds_the_placebo_beside_a_native_baseline_placed_as_it_is():
    text, plan = derive(NATIVE, "s.toml", None, (5.0,), 2, None, seam=True)
    study = parse_study(text, "derived")
    assert list(study.environments) == ["native", "native-aa1", "native-aa2", "docker-placebo", "native-slow5"]
    placebo = study.environments["docker-placebo"]
    assert placebo.kind == "docker" and placebo.least_isolation and placebo.pin is True  # the baseline's pin
    assert plan.seam == "docker-placebo" and "docker-placebo beside it (A/A across the seam)" in study.meta.description
    assert "docker-placebo" not in study.meta.plants
    # without --seam, the study is what it was
    assert "docker-placebo" not in parse_study(derive(NATIVE, "s.toml", None, (5.0,), 2, None)[0]).environments


def test_the_seam_is_refused_beside_a_baseline_that_is_not_on_the_host():
    with pytest.raises(StudyError) as err:
        derive(STUDY, "s.toml", None, (5.0,), 2, None, seam=True)
    assert str(err.value).startswith("--seam: docker-host (docker) is not on the host itself;")
    assert "\n" not in str(err.value)


def _seam_run(placebo_factor: float) -> RunData:
    drift = [8.0, 7.1, 8.6, 6.9, 7.7, 8.2, 7.4, 8.0]
    run = _run({"n": 1.0, "n-aa1": 1.0, "docker-placebo": placebo_factor, "n-slow50": 0.5}, drift)
    run.env_facts["docker-placebo"] = {"kind": "docker", "placebo": True}
    return run


def test_judge_reads_the_placebo_apart_as_aa_across_the_seam():
    result = judge(_seam_run(1.0))
    assert [r.label for r in result.rates] == ["A/A", "planted 50%"]  # the placebo is in neither
    seam = result.seam
    assert seam is not None and seam.env == "docker-placebo" and seam.rate.label == "A/A across the seam"
    assert seam.rate.n == 1 and seam.rate.hits == 0  # primaries only: throughput
    [cell] = seam.cells
    assert cell.cell == "compression default throughput_mbs" and not cell.called
    assert cell.low_pct < cell.change_pct < cell.high_pct and abs(cell.change_pct) < 1
    doc = result.as_dict()["seam"]
    assert doc["env"] == "docker-placebo" and doc["hits"] == 0 and doc["cells"][0]["called"] is False
    # a harness that slows the placebo by a fifth: the gate calls it
    slowed = judge(_seam_run(0.8)).seam
    assert slowed is not None and slowed.rate.hits == 1 and slowed.cells[0].called
    assert slowed.cells[0].change_pct == pytest.approx(-20, abs=1)
    # a run without a placebo has no seam, and its JSON says nothing of one
    plain = judge(_run({"n": 1.0, "n-aa1": 1.0}, [8.0, 7.1, 8.6, 6.9, 7.7]))
    assert plain.seam is None and "seam" not in plain.as_dict()


def test_the_seam_is_printed_beside_the_rates():
    from rich.console import Console

    from isobench.cli.calibrate import print_rates

    console = Console(width=160, record=True)
    print_rates(judge(_seam_run(0.8)), console)
    out = console.export_text()
    assert "A/A across the seam" in out and "1 of 1 false alarms" in out
    assert "A/A across the seam: docker-placebo" in out and "change [interval]" in out and "changed" in out
