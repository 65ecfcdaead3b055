"""isobench compare: A/A gives no changed cell, an injected regression is
changed and fails the gate, an improvement never does, a tiny real change is
equivalent within the tolerance, a noisy one is inconclusive."""

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.report.compare_render import render_markdown
from isobench.results.compare import compare_runs
from isobench.store.db import Store
from synthetic_runs import Synthetic, simple_run, write_run

A_VALUES = [100.0, 101.0, 99.0, 100.5, 99.5]


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "r.sqlite")


def _runs(store_path, b_native, b_docker, metric=("throughput_mbs", "MB/s", True)):
    s = Store(store_path)
    simple_run(s, "run-a", {"native": A_VALUES, "docker-nat": A_VALUES}, metric)
    simple_run(s, "run-b", {"native": b_native, "docker-nat": b_docker}, metric)
    a, b = s.load_run("run-a"), s.load_run("run-b")
    s.close()
    return a, b


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_aa_identical_data_flags_nothing_and_exits_0(store_path):
    a, b = _runs(store_path, A_VALUES, A_VALUES)
    result = compare_runs(a, b)
    assert len(result.cells) == 2 and not result.flagged
    assert result.summary_line().startswith("0 of 2 cells changed")
    assert "2 equivalent within \u00b15%" in result.summary_line()
    r = invoke("compare", "run-a", "run-b", "--store", store_path, "--fail-on-change", "5")
    assert r.exit_code == 0, r.output
    assert "0 of 2 cells changed" in r.output and "equivalent" in r.output


def test_injected_20pct_regression_is_flagged_and_fails_the_gate(store_path):
    slow = [v * 0.8 for v in A_VALUES]
    a, b = _runs(store_path, A_VALUES, slow)
    result = compare_runs(a, b)
    (flagged,) = result.flagged
    assert flagged.env == "docker-nat" and flagged.verdict.pct == pytest.approx(-20)
    assert result.regressions(5) == [flagged] and result.regressions(25) == []
    r = invoke("compare", "run-a", "run-b", "--store", store_path, "--fail-on-change", "5")
    assert r.exit_code == 1
    assert "compression throughput_mbs on docker-nat: worse: \u221220.0% [" in r.output
    assert "native" not in r.output.split("regression:")[1]


def test_improvement_is_flagged_but_not_a_regression(store_path):
    fast = [v * 1.2 for v in A_VALUES]
    a, b = _runs(store_path, A_VALUES, fast)
    result = compare_runs(a, b)
    assert [c.env for c in result.flagged] == ["docker-nat"] and result.regressions(5) == []
    r = invoke("compare", "run-a", "run-b", "--store", store_path, "--fail-on-change", "5")
    assert r.exit_code == 0


def test_direction_aware_for_lower_is_better(store_path):
    a, b = _runs(store_path, A_VALUES, [v * 1.2 for v in A_VALUES], metric=("real_s", "s", False))
    (cell,) = compare_runs(a, b).regressions(5)  # 20% more time is worse
    assert cell.env == "docker-nat" and cell.worse_pct == pytest.approx(20)


def test_a_real_but_tiny_change_is_changed_and_below_the_gate(store_path):
    tight = [100.0, 100.1, 99.9, 100.05, 99.95]
    s = Store(store_path)
    simple_run(s, "run-a", {"native": tight, "docker-nat": tight})
    simple_run(s, "run-b", {"native": tight, "docker-nat": [v * 0.99 for v in tight]})
    a, b = s.load_run("run-a"), s.load_run("run-b")
    result = compare_runs(a, b, tolerance_pct=2)
    (changed,) = result.flagged  # real: 1% is far beyond this noise ...
    assert changed.verdict.pct == pytest.approx(-1)
    assert result.regressions(5) == []  # ... but not beyond the gate's 5%


def test_a_noise_floor_from_the_study_holds_back_a_tiny_change(store_path):
    tight = [100.0, 100.1, 99.9, 100.05, 99.95]
    s = Store(store_path)
    simple_run(s, "run-a", {"native": tight, "docker-nat": tight})
    simple_run(s, "run-b", {"native": tight, "docker-nat": [v * 0.99 for v in tight]})
    s.db.execute(
        "UPDATE runs SET study_text=? WHERE run_id='run-b'",
        ('[study]\nname = "x"\nnoise_floor_pct = { compression = 3 }\n',),
    )
    s.db.commit()
    result = compare_runs(s.load_run("run-a"), s.load_run("run-b"))
    assert result.flagged == []
    cell = next(c for c in result.cells if c.env == "docker-nat")
    assert cell.verdict.verdict == "equivalent" and "noise floor" in cell.verdict.reason


def test_noisy_runs_are_inconclusive_with_rounds_needed(store_path):
    noisy_a, noisy_b = [100.0, 70.0, 130.0], [95.0, 65.0, 125.0]
    s = Store(store_path)
    simple_run(s, "run-a", {"native": noisy_a, "docker-nat": noisy_a})
    simple_run(s, "run-b", {"native": noisy_b, "docker-nat": noisy_b})
    result = compare_runs(s.load_run("run-a"), s.load_run("run-b"))
    assert {c.verdict.verdict for c in result.cells} == {"inconclusive"}
    assert all(c.verdict.rounds_needed > 3 for c in result.cells)
    assert "inconclusive" in render_markdown(result)


def test_synthetic_aa_and_regression_outputs(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    write_run(s, Synthetic("b", seed=1))  # same seed: identical samples
    write_run(s, Synthetic("c", seed=1, inject={("docker-nat", "fio", "iops"): 0.8}))
    assert compare_runs(s.load_run("a"), s.load_run("b")).flagged == []
    r = invoke("compare", "a", "c", "--store", path, "--fail-on-change", "5", "--format", "md")
    assert r.exit_code == 1 and "fio/randread iops on docker-nat" in r.output
    out = tmp_path / "c.html"
    r = invoke("compare", "a", "c", "--store", path, "--format", "html", "-o", str(out))
    assert r.exit_code == 0
    html = out.read_text()
    assert 'id="compare-table"' in html and "WORSE" in html and "<script" not in html


def test_cells_in_one_run_only_are_listed(store_path):
    s = Store(store_path)
    simple_run(s, "run-a", {"native": A_VALUES, "docker-nat": A_VALUES})
    simple_run(s, "run-b", {"native": A_VALUES, "docker-host": A_VALUES}, envs=("native", "docker-host"))
    result = compare_runs(s.load_run("run-a"), s.load_run("run-b"))
    assert [c.env for c in result.cells] == ["native"]
    assert result.only_in_a == ["compression throughput_mbs on docker-nat"]
    assert result.only_in_b == ["compression throughput_mbs on docker-host"]
    assert "Only in A" in render_markdown(result)


def test_nothing_in_common_is_an_error(store_path):
    s = Store(store_path)
    simple_run(s, "run-a", {"native": A_VALUES, "docker-nat": A_VALUES})
    simple_run(s, "run-b", {"native": A_VALUES, "docker-nat": A_VALUES}, workload="fio", case="randread")
    r = invoke("compare", "run-a", "run-b", "--store", store_path)
    assert r.exit_code == 2


def test_facts_diff_names_the_doctor_finding_that_changed():
    from isobench.results.compare import _facts_diff
    from isobench.results.model import RunData

    def run(load: str) -> RunData:
        doctor = [
            {"check": "swap", "status": "ok", "value": "0 device(s)", "fix": ""},
            {"check": "load", "status": "ok", "value": load, "fix": "wait"},
        ]
        return RunData(
            run_id="r",
            study_name="s",
            started_at="",
            finished_at=None,
            status="complete",
            host_facts={"cores": 2, "doctor": doctor},
            study_text="",
            study_hash="h",
            baseline="native",
            environments=[],
            env_facts={},
            metrics=[],
        )

    diff = _facts_diff(run("load average 0.10"), run("load average 1.80"))
    assert diff == [("host doctor load", "ok: load average 0.10", "ok: load average 1.80")]


def test_what_differs_leaves_out_when_each_run_was_imported_or_resumed():
    """issue 55: compare's "What differs" listed two import times."""
    from isobench.results.compare import _facts_diff
    from isobench.results.model import RunData

    def run(at: str, cores: int = 2) -> RunData:
        facts = {"cores": cores, "imported": {"at": at}, "resumed": [{"at": at, "was": "interrupted"}]}
        return RunData("r", "s", "", None, "complete", facts, "", "h", "native", [], {}, [])

    assert _facts_diff(run("2026-11-29T02:26:10+0000"), run("2026-11-30T08:00:00+0000")) == []
    assert _facts_diff(run("2026-11-29T02:26:10+0000"), run("2026-11-30T08:00:00+0000", 4)) == [
        ("host cores", "2", "4")
    ]
