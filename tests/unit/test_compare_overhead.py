"""isobench compare --overhead: a host whose speed drifted between two runs
(every value 20% lower) makes the raw compare see changes everywhere while
the overhead compare sees none; an environment 10% slower against its
baseline is named, alone, and fails the gate; the JUnit file counts what
the compare said; bad input is one line."""

import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from isobench.analysis.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE
from isobench.cli.main import main
from isobench.core.errors import IsobenchError
from isobench.report.compare_render import junit_cases, render_markdown
from isobench.results.compare import compare_overheads, compare_runs
from isobench.store.db import Store
from synthetic_runs import ENVS, PLAIN, Synthetic, simple_run, write_run

# (workload, metric, higher is better) of every synthetic cell (redis: every clients=N case)
METRICS = [(w, m, hib) for w, cases in PLAIN.items() for ms in cases.values() for m, _u, hib, _n, _sd in ms] + [
    ("redis", m, hib) for m, hib in (("throughput_rps", True), ("latency_mean_us", False), ("cpu_util_pct", False))
]


def drift(factor: float, envs=ENVS) -> dict:
    """Every value of every environment scaled alike: the host, not isolation."""
    return {(env, w, m): factor for env in envs for w, m, _ in METRICS}


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("overhead") / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    write_run(s, Synthetic("drifted", seed=2, inject=drift(0.8)))  # nothing changed but the host
    slower = drift(0.8)
    for w, m, hib in METRICS:  # and docker-nat 10% slower against native
        slower[("docker-nat", w, m)] = 0.8 * (0.9 if hib else 1.1)
    write_run(s, Synthetic("slower", seed=2, inject=slower))
    s.close()
    return path


def load(path, *ids):
    s = Store(path)
    runs = [s.load_run(i) for i in ids]
    s.close()
    return runs


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def excludes_no_change(v) -> bool:
    return v.low > 1 or v.high < 1


def test_a_host_drift_is_change_raw_and_no_change_as_overhead(store_path):
    a, b = load(store_path, "a", "drifted")
    raw = compare_runs(a, b)
    assert raw.count(EQUIVALENT) == 0 and raw.count(CHANGED) > len(raw.cells) // 2
    over = compare_overheads(a, b)
    assert over.form == "overhead" and over.baseline == "native"
    assert len(over.cells) == 3 * len(b.metrics)  # every metric, every environment but native
    assert {c.env for c in over.cells} == {"docker-nat", "docker-host", "vm-tcg"}
    assert over.count(CHANGED) == 0 and over.regressions(5) == []
    assert over.count(EQUIVALENT) > 0
    # each run's ratio is what its Table I measures: paired by round
    assert all(c.within_a.test == c.within_b.test == "paired" for c in over.cells)

    r = invoke("compare", "a", "drifted", "--store", store_path, "--fail-on-change", "5")
    assert r.exit_code == 1 and "form: raw values" in r.output
    r = invoke("compare", "a", "drifted", "--store", store_path, "--overhead", "--fail-on-change", "5")
    assert r.exit_code == 0, r.output
    assert "form: overhead: each environment's ratio to native" in r.output
    assert f"0 of {len(over.cells)} cells changed" in r.output and "regression" not in r.output


def test_an_environment_slower_against_its_baseline_is_named_alone(store_path):
    a, b = load(store_path, "a", "slower")
    over = compare_overheads(a, b)
    worse = over.regressions(5)
    assert worse and {c.env for c in worse} == {"docker-nat"}
    assert {c.env for c in over.flagged} == {"docker-nat"}
    assert all(c.verdict.direction == "worse" for c in over.flagged)
    # the quiet cells (CV 0.5-1%) are found, at about their 10%
    by_name = {c.name: c for c in worse}
    for name in (
        "compression throughput_mbs on docker-nat vs native",
        "nuttcp/transmit throughput_gbps on docker-nat vs native",
    ):
        assert by_name[name].worse_pct == pytest.approx(10, abs=3)

    r = invoke("compare", "a", "slower", "--store", store_path, "--overhead", "--fail-on-change", "5")
    assert r.exit_code == 1
    # lines wrap at the console's width, which differs between a terminal and
    # a pytest-xdist worker: compare the words
    gate = " ".join(r.output.split("regression:", 1)[1].split())
    assert "cost against native got worse than in a by more than 5%" in gate
    assert gate.count(": worse: ") == gate.count(" on docker-nat vs native: worse: ") == len(worse)


def test_interval_and_verdict_agree_in_both_forms(store_path):
    for ids in (("a", "drifted"), ("a", "slower")):
        a, b = load(store_path, *ids)
        for result in (compare_runs(a, b), compare_overheads(a, b)):
            for c in result.cells:
                v = c.verdict
                assert excludes_no_change(v) == v.changed == v.rejected == bool(v.p_adjusted <= 0.05)
                assert 0 < v.low <= v.effect.ratio <= v.high
                if v.verdict == INCONCLUSIVE:
                    assert v.rounds_needed and v.rounds_needed > 5


def junit(path):
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    return suite, cases


def test_junit_counts_cells_failures_and_inconclusives(store_path, tmp_path):
    out = tmp_path / "j.xml"
    r = invoke(
        "compare", "a", "slower", "--store", store_path, "--overhead", "--fail-on-change", "5", "--junit", str(out)
    )
    assert r.exit_code == 1 and "JUnit XML written to" in r.output
    a, b = load(store_path, "a", "slower")
    over = compare_overheads(a, b)
    suite, cases = junit(out)
    assert suite.get("name") == "isobench compare a slower --overhead"
    assert int(suite.get("tests")) == len(cases) == len(over.cells)
    assert int(suite.get("failures")) == len(over.regressions(5))
    assert int(suite.get("skipped")) == over.count(INCONCLUSIVE) > 0
    failed = {tc.get("name") for tc in cases if tc.find("failure") is not None}
    assert failed == {c.name for c in over.regressions(5)}
    message = next(tc for tc in cases if tc.find("failure") is not None).find("failure").get("message")
    assert message.startswith("cost against native worse than in a by more than 5%: worse: ")
    assert all(tc.get("classname") == "isobench.compare.overhead.synthetic" for tc in cases)

    # the raw form, no gate: nothing fails, inconclusive cells are skipped (the file replaced: --force)
    r = invoke("compare", "a", "drifted", "--store", store_path, "--junit", str(out), "--force")
    assert r.exit_code == 0
    raw = compare_runs(*load(store_path, "a", "drifted"))
    suite, cases = junit(out)
    assert (int(suite.get("tests")), int(suite.get("failures")), int(suite.get("skipped"))) == (
        len(raw.cells),
        0,
        raw.count(INCONCLUSIVE),
    )
    assert junit_cases(raw)[0].classname == "isobench.compare.raw.synthetic"


def test_markdown_and_html_say_the_form(store_path, tmp_path):
    a, b = load(store_path, "a", "slower")
    md = render_markdown(compare_overheads(a, b))
    assert "form: overhead" in md and "| A: vs native | B: vs native |" in md
    out = tmp_path / "c.html"
    r = invoke("compare", "a", "slower", "--store", store_path, "--overhead", "--format", "html", "-o", str(out))
    assert r.exit_code == 0
    html = out.read_text()
    assert 'id="form"' in html and "B: vs native" in html and "WORSE" in html and "<script" not in html


def test_pairing_follows_each_runs_order(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    vals = {"native": [100.0, 101.0, 99.0, 100.5], "docker-nat": [95.0, 96.0, 94.0, 95.5]}
    simple_run(s, "run-a", vals)
    simple_run(s, "run-b", vals)
    s.db.execute("UPDATE runs SET study_text=? WHERE run_id='run-a'", ('[study]\nname = "x"\norder = "blocked"\n',))
    s.db.commit()
    (cell,) = compare_overheads(s.load_run("run-a"), s.load_run("run-b")).cells
    assert (cell.within_a.test, cell.within_b.test) == ("welch-log", "paired")
    assert "A welch-log, B paired" in cell.verdict.effect.reason


# -- bad input: one line naming what is missing --------------------------------------------


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --overhead: "), r.output
    return lines[0]


def test_different_baselines_are_one_line(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    vals = {"native": [100.0, 101.0, 99.0], "docker-nat": [95.0, 96.0, 94.0]}
    simple_run(s, "run-a", vals)
    simple_run(s, "run-b", vals)
    s.db.execute("UPDATE runs SET baseline='docker-nat' WHERE run_id='run-b'")
    s.db.commit()
    line = one_line_error(invoke("compare", "run-a", "run-b", "--store", path, "--overhead"))
    assert "different baselines ('native' in A, 'docker-nat' in B)" in line and "drop --overhead" in line
    assert invoke("compare", "run-a", "run-b", "--store", path).exit_code == 0  # raw values still compare


def test_no_shared_environment_besides_the_baseline_is_one_line(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    simple_run(s, "run-a", {"native": [100.0, 101.0], "docker-nat": [95.0, 96.0]})
    simple_run(s, "run-b", {"native": [100.0, 101.0], "docker-host": [95.0, 96.0]}, envs=("native", "docker-host"))
    line = one_line_error(invoke("compare", "run-a", "run-b", "--store", path, "--overhead"))
    assert "share no environment other than the baseline 'native' (A has docker-nat; B has docker-host)" in line


def test_an_unmeasured_baseline_is_one_line(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    simple_run(s, "run-a", {"native": [100.0, 101.0], "docker-nat": [95.0, 96.0]})
    simple_run(s, "run-b", {"native": [], "docker-nat": [95.0, 96.0]})  # every baseline sample lost
    line = one_line_error(invoke("compare", "run-a", "run-b", "--store", path, "--overhead"))
    assert "run run-b (B) has no measured value of its baseline 'native'" in line
    with pytest.raises(IsobenchError, match="no measured value"):
        compare_overheads(s.load_run("run-a"), s.load_run("run-b"))


def test_no_metric_in_common_is_one_line(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    simple_run(s, "run-a", {"native": [100.0, 101.0], "docker-nat": [95.0, 96.0]})
    simple_run(s, "run-b", {"native": [100.0, 101.0], "docker-nat": [95.0, 96.0]}, workload="fio", case="randread")
    line = one_line_error(invoke("compare", "run-a", "run-b", "--store", path, "--overhead"))
    assert "no cell" in line and "measured with native in both" in line


def test_an_unwritable_junit_path_is_one_line(store_path, tmp_path):
    r = invoke("compare", "a", "drifted", "--store", store_path, "--junit", str(tmp_path / "no" / "j.xml"))
    assert r.exit_code == 2 and "--junit" in r.output and "cannot write" in r.output
