"""Hostile inputs, round two (docs/hostile-inputs.md): run ids that are
paths, hostile exports, stores that are not isobench's, files that hang or
never end, control characters on the way to the terminal. Each crafted input
gets one line on stderr and exit 2, and nothing is written outside the store."""

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests import inprocess
from tests.synthetic_runs import simple_run

from isobench.store.db import Store

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "src"))
ESC_OSC52 = "\x1b]52;c;aGVsbG8=\x07"  # a clipboard write


# The commands run in this process (tests/inprocess.py); only what could
# hang or never end runs as a process of its own (isobench_process).
@pytest.fixture
def isobench(monkeypatch, capfd):
    def run(*args: str, cwd: Path, store: Path | None = None) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        monkeypatch.setenv("ISOBENCH_HOME", str(cwd / "home"))
        monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
        if store is not None:
            monkeypatch.setenv("ISOBENCH_STORE", str(store))
        else:
            monkeypatch.delenv("ISOBENCH_STORE", raising=False)
        return inprocess.isobench(capfd, *args)

    return run


# A guard against a hang, not a speed target: the unit lane runs at autogroup
# nice 19 beside the quota tests, and a CLI start there can wait a minute for CPU.
def isobench_process(*args: str, cwd: Path, store: Path | None = None, timeout: float = 300):
    env = {**os.environ, "PYTHONPATH": SRC, "ISOBENCH_HOME": str(cwd / "home")}
    env.pop("ISOBENCH_DEBUG", None)
    if store is not None:
        env["ISOBENCH_STORE"] = str(store)
    return subprocess.run(
        [sys.executable, "-m", "isobench.cli.entry", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=cwd,
    )


def one_line_refusal(proc, needle: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert needle in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr + proc.stdout


def files_under(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


@pytest.fixture
def export(tmp_path):
    """A real run export (archive's format) to mutate."""
    store = Store(str(tmp_path / "src.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 10.2, 9.9], "docker-nat": [9.8, 9.9, 9.7]})
    from isobench.store.transfer import export_run

    return export_run(store, "r1")


def write(tmp_path: Path, doc: dict, name="x.run.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


# -- run ids that are paths --------------------------------------------------------------


@pytest.mark.parametrize("bad_id", ["/tmp/isobench-escaped", "../../escaped", "a/b", "x\n", "-rf", ""])
def test_an_imported_run_id_that_is_a_path_is_refused(tmp_path, export, bad_id, isobench):
    export["run_id"] = bad_id
    store = tmp_path / "s.sqlite"
    proc = isobench("import", str(write(tmp_path, export)), cwd=tmp_path, store=store)
    one_line_refusal(proc, "bad run id")
    assert not sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def test_rename_is_checked_too(tmp_path, export, isobench):
    proc = isobench(
        "import", str(write(tmp_path, export)), "--rename", "../../x", cwd=tmp_path, store=tmp_path / "s.sqlite"
    )
    one_line_refusal(proc, "--rename: bad run id '../../x'")


def test_a_stored_id_that_is_a_path_never_becomes_one(tmp_path, isobench):
    """A store written by someone else may hold any id: report, export and
    archive refuse to make a default path of it."""
    store = tmp_path / "s.sqlite"
    s = Store(str(store))
    simple_run(s, "../../escaped", {"native": [1.0, 1.1], "docker-nat": [1.0, 1.2]})
    s.close()
    before = files_under(tmp_path)
    for args in (
        ["report", "../../escaped", "--format", "html"],
        ["export", "../../escaped"],
        ["archive", "../../escaped"],
    ):
        one_line_refusal(isobench(*args, cwd=tmp_path, store=store), "bad run id")
    assert files_under(tmp_path) - before <= {"home"}
    assert not (tmp_path.parent.parent / "escaped.html").exists()


def test_run_id_and_resume_are_checked_before_anything_starts(tmp_path, isobench):
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\n[environments.native]\n[workloads.compression]\n')
    one_line_refusal(
        isobench("run", str(study), "--run-id", "../x", cwd=tmp_path, store=tmp_path / "s.sqlite"),
        "--run-id: bad run id",
    )


# -- exports that would import and then break every reader -------------------------------


def _mutations():
    def env_name(d):
        runs = d["runs"][0]
        runs["environments"] = json.dumps(["native", "$\\cmd{$"])
        for row in d["samples"] + d["env_facts"]:
            if row["env"] == "docker-nat":
                row["env"] = "$\\cmd{$"

    return {
        "missing runs key": (lambda d: d.pop("runs"), "not an isobench run export"),
        "rows of the wrong type": (lambda d: d.__setitem__("samples", [1, 2]), "samples: must be a list of rows"),
        "a NaN value": (
            lambda d: d["samples"][0].__setitem__("vals", '{"throughput_mbs": NaN}'),
            "samples[0].vals: 'throughput_mbs' is nan",
        ),
        "a string value": (
            lambda d: d["samples"][0].__setitem__("vals", '{"throughput_mbs": "fast"}'),
            "a measured value is a finite number",
        ),
        "host facts that are not JSON": (
            lambda d: d["runs"][0].__setitem__("host_facts", "{not json"),
            "runs.host_facts: not valid JSON",
        ),
        "an extra that is a list": (
            lambda d: d["samples"][0].__setitem__("extra", "[1]"),
            "samples[0].extra: must be a JSON object",
        ),
        "units of the wrong shape": (
            lambda d: d["samples"][0].__setitem__("extra", '{"units": "MB"}'),
            "samples[0].extra.units: must be [unit, count]",
        ),
        "a metric defined twice": (lambda d: d["metric_defs"].append(dict(d["metric_defs"][0])), "is defined twice"),
        "a round that is a string": (
            lambda d: d["samples"][0].__setitem__("round", "1"),
            "samples[0].round: must be int",
        ),
        "a LaTeX environment name": (env_name, "runs.environments: bad name"),
        "deep nesting": (
            lambda d: d["samples"][0].__setitem__("extra", "[" * 100000 + "]" * 100000),
            "samples[0].extra: nested too deeply",
        ),
        "a control character in a metric": (
            lambda d: d["metric_defs"][0].__setitem__("metric", "x\x1b[2J"),
            "holds control characters",
        ),
    }


@pytest.mark.parametrize("what", list(_mutations()))
def test_a_malformed_export_imports_nothing(tmp_path, export, what, isobench):
    mutate, needle = _mutations()[what]
    mutate(export)
    store = tmp_path / "s.sqlite"
    proc = isobench("import", str(write(tmp_path, export)), cwd=tmp_path, store=store)
    one_line_refusal(proc, needle)
    rows = (
        sqlite3.connect(store)
        .execute(
            "SELECT (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM samples) + (SELECT COUNT(*) FROM metric_defs)"
        )
        .fetchone()[0]
    )
    assert rows == 0, "either the whole run is imported or nothing"


def test_a_good_export_still_imports_and_reads(tmp_path, export, isobench):
    store = tmp_path / "s.sqlite"
    proc = isobench("import", str(write(tmp_path, export)), cwd=tmp_path, store=store)
    assert proc.returncode == 0, proc.stderr
    assert isobench("report", "r1", cwd=tmp_path, store=store).returncode == 0


def test_a_read_only_store_on_import_is_one_line(tmp_path, export, isobench):
    store = tmp_path / "s.sqlite"
    Store(str(store)).close()
    # root ignores file modes; an immutable file is read-only even for root
    if subprocess.run(["chattr", "+i", str(store)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not supported on this file system")
    try:
        proc = isobench("import", str(write(tmp_path, export)), cwd=tmp_path, store=store)
    finally:
        subprocess.run(["chattr", "-i", str(store)], check=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "s.sqlite" in proc.stderr, proc.stderr


# -- files that hang, never end, or are far too big ---------------------------------------


@pytest.mark.parametrize("command", ["validate", "import"])
def test_a_fifo_and_dev_zero_are_refused_at_once(tmp_path, command):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        # reading either would never end: the timeout is what fails a hang
        proc = isobench_process(command, str(path), cwd=tmp_path, store=tmp_path / "s.sqlite")
        one_line_refusal(proc, "not a regular file")


def test_a_36_mb_study_is_refused_by_its_size(tmp_path, isobench):
    # The control: the same study without its padding, refused for its
    # missing environments and timed here, so a busy host slows both alike;
    # parsing the 36 MB would take seconds more. Timed in this process's CPU
    # (the commands run in it), after a first untimed refusal has loaded
    # what validate loads, so neither a busy host nor an import is counted.
    small = tmp_path / "small.toml"
    small.write_text('[study]\nname = "big"\n')
    needle = "at least one [environments.NAME] table"
    one_line_refusal(isobench("validate", str(small), cwd=tmp_path), needle)
    t0 = time.process_time()
    one_line_refusal(isobench("validate", str(small), cwd=tmp_path), needle)
    control = time.process_time() - t0
    big = tmp_path / "big.toml"
    big.write_text('[study]\nname = "big"\n' + "# padding\n" * 3_600_000)
    t0 = time.process_time()
    one_line_refusal(isobench("validate", str(big), cwd=tmp_path), "more than a study file may hold")
    elapsed = time.process_time() - t0
    assert elapsed < 1.5 * control + 1, (elapsed, control)


# -- stores -------------------------------------------------------------------------------


def test_another_programs_runs_table_is_left_untouched(tmp_path, isobench):
    other = tmp_path / "other.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE runs (id INTEGER, km REAL)")
    db.commit()
    db.close()
    before = other.read_bytes()
    one_line_refusal(isobench("runs", "--store", str(other), cwd=tmp_path), "not an isobench store")
    one_line_refusal(isobench("import", "x.json", "--store", str(other), cwd=tmp_path), "not an isobench store")
    assert other.read_bytes() == before
    assert not (tmp_path / "other.sqlite-wal").exists()


def test_a_read_command_never_creates_a_store(tmp_path, isobench):
    typo = tmp_path / "resluts" / "s.sqlite"
    for args in (["runs"], ["report"], ["export"], ["compare", "a", "b"], ["archive"]):
        one_line_refusal(isobench(*args, "--store", str(typo), cwd=tmp_path), "no such store")
    assert not typo.parent.exists()


def test_an_empty_store_path_is_refused(tmp_path, export, isobench):
    proc = isobench("import", str(write(tmp_path, export)), "--store", "", cwd=tmp_path)
    one_line_refusal(proc, "--store: empty path")


def test_an_underscore_in_a_prefix_is_literal(tmp_path, isobench):
    store = tmp_path / "s.sqlite"
    s = Store(str(store))
    simple_run(s, "a1b-run", {"native": [1.0, 1.1], "docker-nat": [1.0, 1.2]})
    s.close()
    one_line_refusal(isobench("report", "a_b", cwd=tmp_path, store=store), "no run 'a_b'")
    assert isobench("report", "a1b", cwd=tmp_path, store=store).returncode == 0


# -- output ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["report", "r1", "--format", "md", "-o", "{missing}/r.md"],
        ["report", "r1", "-o", "/dev/full"],
        ["compare", "r1", "r2", "-o", "{missing}/c.txt"],
        ["export", "r1", "--format", "json", "-o", "/dev/full"],
        ["archive", "r1", "-o", "/dev/full"],
    ],
)
def test_output_that_cannot_be_written_is_one_line(tmp_path, args, isobench):
    store = tmp_path / "s.sqlite"
    s = Store(str(store))
    simple_run(s, "r1", {"native": [1.0, 1.1], "docker-nat": [1.0, 1.2]})
    simple_run(s, "r2", {"native": [1.0, 1.1], "docker-nat": [1.0, 1.3]})
    s.close()
    args = [a.replace("{missing}", str(tmp_path / "no" / "such")) for a in args]
    proc = isobench(*args, cwd=tmp_path, store=store)
    one_line_refusal(proc, "cannot write")


def test_control_characters_in_user_text_never_reach_the_terminal(tmp_path, export, isobench):
    export["runs"][0]["host_facts"] = json.dumps({"cores": 2, "hostname": "evil" + ESC_OSC52})
    export["samples"][0]["status"] = "failed"
    export["samples"][0]["error"] = "boom" + ESC_OSC52
    store = tmp_path / "s.sqlite"
    assert isobench("import", str(write(tmp_path, export)), cwd=tmp_path, store=store).returncode == 0
    for fmt in ("terminal", "md"):
        proc = isobench("report", "r1", "--format", fmt, cwd=tmp_path, store=store)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
        assert "\\x1b]52" in proc.stdout  # shown, escaped
    # and in errors: an id with ESC and a newline prints as one escaped line
    one_line_refusal(isobench("report", "r" + ESC_OSC52 + "\nx", cwd=tmp_path, store=store), "\\x1b]52")


def test_comparing_a_run_with_itself_says_so(tmp_path, isobench):
    store = tmp_path / "s.sqlite"
    s = Store(str(store))
    simple_run(s, "r1", {"native": [1.0, 1.1, 1.0], "docker-nat": [1.0, 1.2, 1.1]})
    s.close()
    proc = isobench("compare", "r1", "r1", cwd=tmp_path, store=store)
    assert proc.returncode == 0 and "comparing run r1 with itself" in proc.stderr
