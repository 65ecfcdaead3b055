"""`isobench history` on the command line: the gate's exit codes, JUnit
content, the three formats, and bad input as one line."""

import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import HISTORY_HOST, history_run


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "r.sqlite")


def fill(path, n=8, at=4, after=0.7, **kw):
    s = Store(path)
    for i in range(n):
        h = {**HISTORY_HOST, "kernel": "6.1.0" if i < at else "6.6.0"}
        cpus = 1.0 if i < at else 0.7
        history_run(
            s,
            f"r{i}",
            i + 1,
            1.0 if i < at else after,
            seed=i,
            host=h,
            env_facts={"docker-host": {"options": {"cpus": cpus}}},
            **kw,
        )
    s.close()


def test_fail_on_change_exits_1_naming_the_cell_the_step_and_the_facts(path, tmp_path):
    fill(path)
    r = invoke("history", "synthetic", "--store", path, "--fail-on-change", "5")
    assert r.exit_code == 1, r.output
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("change: 1 cell(s) of the newest run r7 sit after a step for the worse beyond 5%")
    assert len(lines) == 2  # one line per failing cell
    line = lines[1]
    assert "compression throughput_mbs on docker-host: worse by " in line
    assert "between run r3 (2026-05-04) and run r4 (2026-05-05)" in line
    assert "kernel 6.1.0 -> 6.6.0" in line and "docker-host options.cpus 1.0 -> 0.7" in line
    # the report itself names the step and its facts too
    assert "docker-host options.cpus 1.0 -> 0.7" in r.stdout and "\u25c6" in r.stdout


def test_a_step_below_the_threshold_or_no_step_exits_0(path, tmp_path):
    fill(path)
    assert invoke("history", "--store", path, "--fail-on-change", "40").exit_code == 0
    aa = str(tmp_path / "aa.sqlite")
    fill(aa, after=1.0)
    r = invoke("history", "--store", aa, "--fail-on-change", "0")
    assert r.exit_code == 0 and "No change point" in r.stdout
    better = str(tmp_path / "better.sqlite")
    fill(better, after=1.25)
    assert invoke("history", "--store", better, "--fail-on-change", "0").exit_code == 0


def test_junit_has_one_case_per_primary_cell(path, tmp_path):
    s = Store(path)
    for i in range(6):
        history_run(
            s,
            f"r{i}",
            i + 1,
            1.0,
            ratios={"docker-nat": 1.0 if i < 3 else 0.6},
            envs=("native", "docker-host", "docker-nat"),
            seed=i,
        )
    s.close()
    xml = tmp_path / "h.xml"
    r = invoke("history", "--store", path, "--junit", str(xml), "--fail-on-change", "10")
    assert r.exit_code == 1
    suite = ET.parse(xml).getroot().find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("isobench history synthetic", "2", "1")
    cases = {tc.get("name"): tc for tc in suite}
    assert set(cases) == {"compression throughput_mbs on docker-host", "compression throughput_mbs on docker-nat"}
    failure = cases["compression throughput_mbs on docker-nat"].find("failure")
    assert "worse by 4" in failure.get("message") and "between run r2" in failure.get("message")
    assert cases["compression throughput_mbs on docker-host"].find("failure") is None
    assert "6 run(s); newest r5" in cases["compression throughput_mbs on docker-host"].find("system-out").text
    assert cases["compression throughput_mbs on docker-host"].get("classname") == "isobench.history.synthetic"


def test_a_short_series_is_one_note_and_skipped_in_junit(path, tmp_path):
    fill(path, n=3, at=3)
    xml = tmp_path / "h.xml"
    r = invoke("history", "--store", path, "--fail-on-change", "5", "--junit", str(xml))
    assert r.exit_code == 0
    assert r.stderr.strip() == (
        "note: the longest series of synthetic has 3 comparable run(s); a step needs at "
        "least 4 (2 on each side): run the study 1 more time(s) on this host class"
    )
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite.get("skipped") == "1"
    assert "a step needs at least 4" in suite.find("testcase").find("skipped").get("message")


@pytest.mark.parametrize(
    "args, message",
    [
        (("nosuch",), "error: study 'nosuch': no stored run of it in "),
        (("--env", "vm-x"), "error: --env vm-x: no run of study 'synthetic' has it; it has docker-host"),
        (("--workload", "fio"), "error: --workload fio: no run of study 'synthetic' has it; it has compression"),
        (("--since", "2027-01-01"), "error: study 'synthetic': none of its 4 run(s) can be used (4 run(s) outside"),
        (("--since", "yesterday"), "Invalid value for '--since'"),
    ],
)
def test_bad_input_is_one_line(path, args, message):
    fill(path, n=4, at=4)
    r = invoke("history", "--store", path, *args)
    assert r.exit_code == 2
    assert message in r.stderr
    assert len([x for x in r.stderr.splitlines() if x.strip()]) in (1, 3)  # click's usage error: usage, hint, line
    assert "Traceback" not in r.output


def test_unknown_study_lists_the_stored_ones_and_an_empty_store_says_so(path, tmp_path):
    fill(path, n=1, at=1)
    r = invoke("history", "quick", "--store", path)
    assert "stored studies: synthetic" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    empty = str(tmp_path / "e.sqlite")
    Store(empty).close()
    r = invoke("history", "--store", empty)
    assert r.exit_code == 2 and "no runs stored yet" in r.stderr
    r = invoke("history", "--store", str(tmp_path / "missing.sqlite"))
    assert r.exit_code == 2 and "no such store" in r.stderr


def test_runs_whose_primary_metrics_differ_are_listed_one_line_each(path):
    fill(path, n=4, at=4)
    s = Store(path)
    history_run(s, "kb", 9, 1.0, metric=("throughput_mbs", "kB/s", True))
    s.close()
    r = invoke("history", "--store", path, "--format", "md")
    assert r.exit_code == 0
    left = [x for x in r.stdout.splitlines() if "primary metrics differ" in x]
    assert len(left) == 4 and left[0].startswith("- run r0: compression throughput\\_mbs is MB/s")


def test_markdown_and_html(path, tmp_path):
    fill(path)
    md = invoke("history", "--store", path, "--format", "md").stdout
    assert md.startswith("# History of synthetic")
    assert "## Change points" in md and "docker-host options.cpus 1.0 -> 0.7" in md
    assert "| r4 | 2026-05-05 10:00 |  | −29." in md
    out = tmp_path / "h.html"
    r = invoke("history", "--store", path, "--format", "html", "-o", str(out))
    assert r.exit_code == 0 and "history written to" in r.stdout
    html = out.read_text()
    assert html.count("<svg") == 1 and "<script" not in html
    assert 'id="history-1-compression"' in html and "options.cpus 1.0 -&gt; 0.7" in html
    assert "Content-Security-Policy" in html


def test_user_text_prints_literally(path):
    s = Store(path)
    for i in range(2):
        history_run(s, f"r{i}", i + 1, 1.0, host={**HISTORY_HOST, "cpu_model": "[bold red]evil[/] \x1b[31m"})
    s.close()
    r = invoke("history", "--store", path)
    assert "[bold red]evil[/]" in r.stdout and "\x1b[31m" not in r.stdout
