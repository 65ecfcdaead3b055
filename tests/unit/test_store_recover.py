"""A store's every round travels, and a damaged store is told and recovered
truthfully (issue 55, findings 5, 6, 17, 24, 25): real stores made through the
store API, damaged with byte writes as the review damaged them, and the real
`archive`, `import`, `store check` and `store recover` commands."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from tests.synthetic_runs import simple_run

from isobench.cli import entry
from isobench.core.metric import Metric
from isobench.run.duetcalls import PROBE_ROUND
from isobench.store import shapes
from isobench.store.db import Sample, Store

PAGE = 4096  # SQLite's default page size, which isobench never changes


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "s.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    shapes._said.clear()
    return tmp_path


def isobench(capfd, *args) -> tuple[int, str, str]:
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


def beside(path: Path) -> list[str]:
    """The files SQLite keeps beside a store."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-"))


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return _five_runs(tmp_path_factory.mktemp("made") / "five.sqlite")


@pytest.fixture
def five_runs(made):
    """A copy of the five runs' store at the path given."""

    def copy(path: Path) -> Path:
        shutil.copyfile(made, path)
        return path

    return copy


def _five_runs(path: Path) -> Path:
    """Five runs of 400 samples, each sample's raw output naming its run
    (so that a page holding only one run's rows can be found in the file)."""
    store = Store(str(path))
    store.db.execute("PRAGMA synchronous=OFF")  # a test's store: 2000 commits need no fsync each
    for i in range(5):
        run_id = f"r{i}"
        simple_run(store, run_id, {"native": [], "docker-nat": []})
        for j in range(400):
            env = ("native", "docker-nat")[j % 2]
            values = {"throughput_mbs": 10.0 + j % 7}
            raw = f"<{run_id}>" * 8
            store.add_sample(
                Sample(
                    run_id,
                    env,
                    "compression",
                    "default",
                    j // 2,
                    False,
                    "ok",
                    "2026-05-01T10:00:00+0000",
                    1.0,
                    values,
                    raw=raw,
                )
            )
    store.close()
    return path


def pages(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [data[i : i + PAGE] for i in range(0, len(data), PAGE)]


def write_at(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)


def one_runs_page(path: Path, run_id: str) -> int:
    """The number (from 0) of a page that holds rows of RUN_ID and of no other run."""
    for number, page in enumerate(pages(path)):
        named = {m for m in (f"<r{i}>".encode() for i in range(5)) if m in page}
        if named == {f"<{run_id}>".encode()}:
            return number
    raise AssertionError(f"no page holds only {run_id}'s rows")


# -- 5: every round isobench stores travels ----------------------------------------


def test_a_duet_probe_sample_is_archived_imported_and_recovered(sandbox, capfd):
    store = Store(str(sandbox / "s.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 11.0, 12.0], "docker-nat": [9.0, 10.0, 11.0]})
    # run/duetcalls.py: a table with warmup = 0 keeps its probe alone as a warm-up at PROBE_ROUND
    store.define_metrics("r1", "compression", "default", [Metric("throughput_mbs", "MB/s", True)])
    probe = Sample("r1", "native", "compression", "default", PROBE_ROUND, True, "ok", "2026-05-01T10:00:00+0000", 1.0)
    store.add_sample(probe)
    store.close()
    code, out, err = isobench(capfd, "archive", "r1", "-o", sandbox / "r1.run.json")
    assert code == 0, err
    code, out, err = isobench(capfd, "import", sandbox / "r1.run.json", "--store", sandbox / "other.sqlite")
    assert code == 0 and "imported run r1" in out, (out, err)
    rounds = sqlite3.connect(sandbox / "other.sqlite").execute("SELECT MIN(round) FROM samples").fetchone()[0]
    assert rounds == PROBE_ROUND
    code, out, err = isobench(capfd, "store", "recover", "-o", sandbox / "new.sqlite")
    assert code == 0 and "1 run(s) copied" in out and "0 lost" in out, (out, err)


def test_an_import_still_refuses_rounds_no_study_makes(sandbox, capfd):
    import json

    store = Store(str(sandbox / "s.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 11.0], "docker-nat": [9.0, 10.0]})
    store.close()
    assert isobench(capfd, "archive", "r1", "-o", sandbox / "r1.run.json")[0] == 0
    doc = json.loads((sandbox / "r1.run.json").read_text())
    for bad, warmup in ((PROBE_ROUND, 0), (-2, 1), (5000, 0)):  # the probe is a warm-up, and the only negative
        doc["samples"][0].update(round=bad, warmup=warmup)
        (sandbox / "bad.run.json").write_text(json.dumps(doc))
        code, _, err = isobench(capfd, "import", sandbox / "bad.run.json", "--store", sandbox / "o.sqlite")
        assert code == 2 and f"samples[0].round: {bad} is not a round a study makes" in err, err


# -- 24: recover reads what it can and says exactly what it lost -------------------


def recover(capfd, store: Path, new: Path) -> tuple[int, str, str]:
    return isobench(capfd, "store", "recover", "--store", store, "-o", new)


def test_one_damaged_samples_page_loses_only_the_run_whose_rows_are_on_it(sandbox, capfd, five_runs):
    store = five_runs(sandbox / "s.sqlite")
    page = one_runs_page(store, "r2")
    write_at(store, page * PAGE + 8, b"\xff" * 12)  # its cell pointers: the review's damage
    code, out, err = recover(capfd, store, sandbox / "new.sqlite")
    assert code == 2 and "4 run(s) copied into" in out and ", 1 lost" in out, (out, err)
    assert "lost run r2: samples: " in out and "of its 400 rows do not read" in out, out
    assert not any(f"lost run r{i}" in out for i in (0, 1, 3, 4)), out  # they read whole: through the index
    kept = sqlite3.connect(sandbox / "new.sqlite")
    assert kept.execute("SELECT run_id, COUNT(*) FROM samples GROUP BY 1").fetchall() == [
        (f"r{i}", 400) for i in (0, 1, 3, 4)
    ]


@pytest.mark.parametrize("damage", ["half", "hundred bytes", "middle pages"])
def test_a_store_that_lost_rows_says_which_runs_and_exits_2(sandbox, capfd, five_runs, damage):
    store = five_runs(sandbox / "s.sqlite")
    data = store.read_bytes()
    if damage == "half":
        store.write_bytes(data[: len(data) // 2])
    elif damage == "hundred bytes":
        store.write_bytes(data[:100])
    else:
        rng = random.Random(7)
        for page in rng.sample(range(12, len(data) // PAGE), 3):
            write_at(store, page * PAGE, rng.randbytes(PAGE))
    code, out, err = recover(capfd, store, sandbox / "new.sqlite")
    assert code == 2, (out, err)
    assert "0 run(s) copied" not in out or "not made" in out, out  # never "0 copied, 0 lost" as if whole
    assert not out.rstrip().endswith(", 0 lost"), out
    if damage == "hundred bytes":  # nothing reads: said, and nothing made
        assert "0 run(s) copied" in out and "not read: runs:" in out and "runs no table names may be lost" in out
        assert not (sandbox / "new.sqlite").exists()
    else:  # what reads is copied: the runs before the damage
        copied = sqlite3.connect(sandbox / "new.sqlite").execute("SELECT run_id FROM runs").fetchall()
        lost = [line.split()[2].rstrip(":") for line in out.splitlines() if line.strip().startswith("lost run")]
        assert copied and lost and len(copied) + len(lost) == 5, out
        assert damage != "half" or ("r0",) in copied, out  # the run before the cut


@pytest.mark.parametrize("damage", ["zeroed first page", "random header"])
def test_a_store_whose_first_page_is_damaged_is_read_with_isobenchs_own(sandbox, capfd, five_runs, damage):
    store = five_runs(sandbox / "s.sqlite")
    write_at(store, 0, bytes(PAGE) if damage == "zeroed first page" else random.Random(7).randbytes(100))
    code, out, err = recover(capfd, store, sandbox / "new.sqlite")
    what = "first page" if damage == "zeroed first page" else "header"
    assert f"the store's first page does not read (file is not a database); read with isobench's own {what}" in out
    assert code == 0 and "5 run(s) copied into" in out and ", 0 lost" in out, (out, err)
    assert isobench(capfd, "store", "check", "--store", sandbox / "new.sqlite")[0] == 0
    assert [p.name for p in sandbox.iterdir() if p.name.startswith(".")] == []  # its mended copy removed


# -- 6: a store whose runs is a view recursing for ever ---------------------------------


def recursive_runs(path: Path, five_runs) -> Path:
    five_runs(path)
    db = sqlite3.connect(path)
    columns = [r[1] for r in db.execute("PRAGMA table_info(runs)")]
    db.execute("DROP TABLE runs")
    select = ", ".join("'r' || n AS run_id" if c == "run_id" else f"'x' AS {c}" for c in columns)
    db.execute(
        f"CREATE VIEW runs AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT {select} FROM c"
    )
    db.commit()
    db.close()
    return path


def test_store_check_is_not_sound_for_a_view_isobench_never_made(sandbox, capfd, five_runs):
    store = recursive_runs(sandbox / "s.sqlite", five_runs)
    code, out, err = isobench(capfd, "store", "check", "--store", store)
    assert code == 2 and "sound" not in out, (out, err)
    assert "view 'runs': not in isobench's schema (isobench's runs is a table)" in out, out
    db = sqlite3.connect(store)
    db.execute("CREATE TRIGGER t AFTER INSERT ON samples BEGIN SELECT 1; END")
    db.execute("ALTER TABLE samples ADD COLUMN doubled REAL GENERATED ALWAYS AS (wall_s * 2)")
    db.commit()
    db.close()
    code, out, err = isobench(capfd, "store", "check", "--store", store)
    assert "trigger 't': not in isobench's schema" in out and "column 'doubled' is computed" in out, out


def test_recover_of_a_recursive_view_ends_at_once_and_makes_nothing(sandbox, five_runs):
    import subprocess
    import sys

    store = recursive_runs(sandbox / "s.sqlite", five_runs)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [
        sys.executable,
        "-m",
        "isobench",
        "store",
        "recover",
        "--store",
        str(store),
        "-o",
        str(sandbox / "new.sqlite"),
    ]
    try:  # in a process of its own: before, it read the view for ever, growing by 50 MB a second
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("recover read the view for a minute")
    assert done.returncode == 2 and "runs: a view, not isobench's table" in done.stdout, (done.stdout, done.stderr)
    assert "lost run r0" in done.stdout, done.stdout
    assert not (sandbox / "new.sqlite").exists() and sum(p.stat().st_size for p in sandbox.iterdir()) < 2 * 2**20


# -- 25: nothing left behind --------------------------------------------------------


def test_a_failed_recover_leaves_nothing_and_its_retry_is_not_refused(sandbox, capfd, five_runs):
    store = five_runs(sandbox / "s.sqlite")
    store.write_bytes(store.read_bytes()[:100])
    before = sorted(p.name for p in sandbox.iterdir())
    for _ in range(2):
        code, out, err = recover(capfd, store, sandbox / "new.sqlite")
        assert code == 2 and "not made" in out and "exists" not in err, (out, err)
        assert sorted(p.name for p in sandbox.iterdir()) == before


@pytest.mark.parametrize("damage", ["sound", "half", "one page", "zeroed first page"])
def test_check_and_recover_leave_no_wal_or_shm_beside_the_store_they_read(sandbox, capfd, five_runs, damage):
    import hashlib

    store = five_runs(sandbox / "s.sqlite")
    if damage == "half":
        store.write_bytes(store.read_bytes()[: os.path.getsize(store) // 2])
    elif damage == "one page":
        write_at(store, one_runs_page(store, "r2") * PAGE + 8, b"\xff" * 12)
    elif damage == "zeroed first page":
        write_at(store, 0, bytes(PAGE))
    digest = hashlib.sha256(store.read_bytes()).hexdigest()
    assert beside(store) == []
    isobench(capfd, "store", "check", "--store", store)
    assert beside(store) == []
    recover(capfd, store, sandbox / "new.sqlite")
    assert beside(store) == [] and beside(sandbox / "new.sqlite") == []
    assert hashlib.sha256(store.read_bytes()).hexdigest() == digest  # only read


# -- 17: store check's lines, one a problem --------------------------------------------


def test_store_check_prints_one_problem_a_line_and_counts_them(sandbox, capfd, five_runs):
    store = five_runs(sandbox / "s.sqlite")
    db = sqlite3.connect(store)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'samples_run'").fetchone()[0]
    db.close()
    write_at(store, (root - 1) * PAGE + 8, b"\xff" * 12)  # the index's root: SQLite joins its lines in one row
    code, out, err = isobench(capfd, "store", "check", "--store", store)
    lines = out.splitlines()
    assert code == 2 and "\\x0a" not in out and len(lines) >= 5, out
    assert all(line.startswith("  ") and "*** in database" not in line for line in lines), out
    said = f"damaged: {len(lines)} problem(s) above"
    assert said in " ".join(err.split()), err


def test_an_empty_store_is_sound_and_recovers_whole(sandbox, capfd):
    for name, make in (
        ("empty.sqlite", lambda p: p.write_bytes(b"")),
        ("fresh.sqlite", lambda p: Store(str(p)).close()),
    ):
        make(sandbox / name)
        assert isobench(capfd, "store", "check", "--store", sandbox / name)[0] == 0
        code, out, err = recover(capfd, sandbox / name, sandbox / f"new-{name}")
        assert code == 0 and "0 run(s) copied into" in out and ", 0 lost" in out, (out, err)
