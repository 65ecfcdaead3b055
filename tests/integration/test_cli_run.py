"""End to end through the CLI against the real Docker Engine and tools."""

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time

import docker
import pytest

from isobench.core import owner
from isobench.core.workspace import DATA_ROOT, TMP_ROOT

pytestmark = pytest.mark.integration

TINY = """
[study]
name = "tiny"
repetitions = 2
warmup = 0

[environments.native]
[environments.docker-nat]
[environments.docker-host]

[workloads.compression]
size_mb = 8

[workloads.hpcc]
n = 400
nb = 80

[workloads.fio]
size_mb = 32
runtime_s = 1
cases = ["randread", "seqwrite"]
"""


# The studies interrupted and resumed below: TINY's shape (3 environments, 4
# cells) with cheaper samples, since what they check is what happens between
# samples (smaller corpus and file, no fio ramp).
CHEAP = (
    TINY.replace("size_mb = 8", "size_mb = 2")
    .replace("size_mb = 32", "size_mb = 16")
    .replace("runtime_s = 1", "runtime_s = 1\nramp_s = 0")
)
# The studies interrupted (and resumed): native and one container are
# enough for what happens between samples, and a third environment's start,
# preparation and samples took about a third of each test's time.
INTERRUPTED = CHEAP.replace("[environments.docker-host]\n", "")


def isobench(*args, store, cwd, timeout=600, check=True):
    env = {**os.environ, "ISOBENCH_STORE": str(store)}
    proc = subprocess.run(
        [sys.executable, "-m", "isobench.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"isobench {args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def isobench_containers(store=None):
    """isobench's containers and volumes left behind: those of a process
    that has ended, or unmarked; with `store`, only of its runs. What a live
    process owns is not left behind (test.sh's side lane runs its own beside
    these tests), and a test in that lane passes its store: a main-lane
    test's SIGKILLed run leaves its containers until its `clean`."""
    client = docker.from_env()
    boot = owner.boot_id()
    runs = None if store is None else {r for (r,) in sqlite3.connect(store).execute("SELECT run_id FROM runs")}

    def left(labels) -> bool:
        labels = labels or {}
        if runs is not None and labels.get("isobench.run") not in runs:
            return False
        mark = owner.from_labels(labels)
        return mark is None or not owner.is_live(mark, boot, owner.started(mark.pid))

    label = {"label": "isobench=1"}
    return [c.name for c in client.containers.list(all=True, filters=label) if left(c.labels)] + [
        v.name for v in client.volumes.list(filters=label) if left(v.attrs.get("Labels"))
    ]


@pytest.mark.beside  # like the other beside tests below: its own store, its run's containers only
def test_run_report_runs_and_nothing_left(tmp_path):
    study = tmp_path / "tiny.toml"
    study.write_text(CHEAP)  # TINY's shape; what is checked here does not need bigger samples
    store = tmp_path / "r.sqlite"
    out = isobench("run", str(study), "--out", str(tmp_path / "results"), store=store, cwd=tmp_path)
    assert isobench_containers(store) == [], out.stderr[-3000:]
    reports = list((tmp_path / "results").glob("*.md"))
    assert len(reports) == 1
    md = reports[0].read_text()
    header = next(line for line in md.splitlines() if line.startswith("|") and "native" in line)
    for env in ("native", "docker-nat", "docker-host"):
        assert env in header
    plain = md.replace("\\_", "_")  # Markdown escapes underscores
    for metric in ("throughput_mbs", "hpl_gflops", "iops", "bandwidth_mbs"):
        assert metric in plain, metric
    assert "failed (" not in md, "no sample of the tiny study may fail"
    run_id = reports[0].stem
    listing = isobench("runs", store=store, cwd=tmp_path).stdout
    assert run_id[:20] in listing and "complete" in listing
    again = isobench("report", run_id, "--format", "md", store=store, cwd=tmp_path).stdout
    assert again.strip() == md.strip(), "the report is computed from the store alone"
    assert "native" in out.stdout
    # every measured sample is in the store: 3 envs × (1 + 1 + 2 cells) × 2 rounds
    n = sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples WHERE status='ok'").fetchone()[0]
    assert n == 3 * 4 * 2


@pytest.mark.beside
def test_bad_study_fails_fast_with_one_line(tmp_path):
    study = tmp_path / "bad.toml"
    study.write_text(TINY.replace("size_mb = 8", "sise_mb = 8"))
    # The control: the same interpreter starting and parsing a study file
    # (`validate` of a good one), timed in this test, so a busy host slows
    # both alike. A bad study must fail no slower than that; the margin is
    # only the jitter of a process start.
    good = tmp_path / "good.toml"
    good.write_text(TINY)
    t0 = time.perf_counter()
    isobench("validate", str(good), store=tmp_path / "v.sqlite", cwd=tmp_path, check=False)
    control = time.perf_counter() - t0
    t0 = time.perf_counter()
    proc = isobench("run", str(study), store=tmp_path / "r.sqlite", cwd=tmp_path, check=False)
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.5 * control + 1, (elapsed, control)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "bad.toml" in lines[0] and "workloads.compression.sise_mb" in lines[0]
    assert (
        not (tmp_path / "r.sqlite").exists()
        or sqlite3.connect(tmp_path / "r.sqlite").execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    )


def ok_samples(store) -> int:
    try:
        return sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples WHERE status='ok'").fetchone()[0]
    except sqlite3.OperationalError:  # the run has not created its tables yet
        return 0


@contextlib.contextmanager
def study_under_way(tmp_path, repetitions: int, samples: int):
    """Start `isobench run` on the cheap study and yield (process, store, samples
    stored so far, stderr log) once it has measured at least `samples`; never
    leaves it running."""
    study = tmp_path / "study.toml"
    study.write_text(INTERRUPTED.replace("repetitions = 2", f"repetitions = {repetitions}"))
    store = tmp_path / "r.sqlite"
    log = tmp_path / "stderr.log"  # a file, not a pipe: per-sample lines would fill a pipe and stall the run
    proc = subprocess.Popen(
        [sys.executable, "-m", "isobench.cli.main", "run", str(study), "--out", str(tmp_path / "results")],
        cwd=tmp_path,
        env={**os.environ, "ISOBENCH_STORE": str(store)},
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
    )
    try:
        deadline = time.time() + 300
        while time.time() < deadline and ok_samples(store) < samples and proc.poll() is None:
            time.sleep(0.5)
        done = ok_samples(store)
        assert done >= samples, f"the study did not get going: {log.read_text()[-800:]}"
        yield proc, store, done, log
    finally:
        if proc.poll() is None:
            proc.kill()


# Interrupted (or killed) once the run has stored a sample in each environment
# (round 1's compression): what is checked happens between samples, and the
# two hpcc samples that came next made each test wait about 2 s longer.
@pytest.mark.beside
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_keeps_samples_and_leaves_no_container(tmp_path, sig):
    with study_under_way(tmp_path, repetitions=50, samples=2) as (proc, store, done, log):
        proc.send_signal(sig)
        proc.wait(120)
    err = log.read_text()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    db = sqlite3.connect(store)
    assert ok_samples(store) >= done
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert isobench_containers(store) == [], err[-3000:]
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    leftovers = [
        name
        for root in (DATA_ROOT, TMP_ROOT)
        if os.path.isdir(root)
        for name in os.listdir(root)
        if name.startswith(run_id)
    ]
    assert leftovers == []


@pytest.mark.beside
def test_interrupted_run_resumes_to_the_full_shape(tmp_path):
    with study_under_way(tmp_path, repetitions=2, samples=4) as (proc, store, _, _log):
        proc.send_signal(signal.SIGINT)
        proc.wait(120)
    assert proc.returncode == 130
    db = sqlite3.connect(store)
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    before = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert 4 <= before < 16, before
    out = isobench("run", "--resume", run_id[:24], "--out", str(tmp_path / "results"), store=store, cwd=tmp_path)
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "complete"
    # 2 envs × 4 cells × 2 rounds, each exactly once: nothing redone, nothing missing
    rows = db.execute("SELECT env, workload, ccase, round, COUNT(*) FROM samples GROUP BY 1, 2, 3, 4").fetchall()
    assert len(rows) == 16 and all(r[4] == 1 for r in rows)
    assert isobench_containers(store) == [], out.stderr[-3000:]


def test_sigkill_leftovers_are_removed_by_clean(tmp_path):
    with study_under_way(tmp_path, repetitions=50, samples=2) as (proc, store, done, _log):
        proc.kill()  # SIGKILL: no teardown runs
        proc.wait(30)
    assert isobench_containers(), "a SIGKILLed run leaves its containers; this test checks clean removes them"
    out = isobench("clean", store=store, cwd=tmp_path).stdout
    assert "container isobench-" in out
    assert isobench_containers() == []
    assert ok_samples(store) >= done >= 2
    # the kernel released the run lock with the process: a new run may start
    from isobench.core.lock import RunLock

    lock = RunLock()
    lock.acquire("after-kill")
    lock.release()
