"""SIGINT and SIGTERM around a run, sent to a real child process (issue 55,
20 and 21): a second signal does not cut the teardown short, and a signal
before the run exists ends in one true line, exit 130."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STUDY = (
    '[study]\nname = "sig"\nrepetitions = 3\nwarmup = 0\nbaseline = "native"\nschedule = "sequential"\n'
    '[environments.native]\n[environments.native-b]\nkind = "native"\n'
    "[workloads.compression]\nsize_mb = 1\nthreads = 1\n"
)


def _child(script: str, tmp: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "ISOBENCH_HOME": str(tmp / "home")}
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp,
        start_new_session=True,  # no Ctrl-C of the suite's terminal reaches it
    )


def _wait_for(proc: subprocess.Popen, word: str, timeout: float = 60) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if line.strip() == word:
            return
    proc.kill()
    pytest.fail(f"the child never said {word!r}: {proc.communicate(timeout=10)[1].decode()[-2000:]}")


TEARDOWN = """
import signal, sys, time
from functools import partial
from isobench.core import owner
from isobench.envs.native import NativeEnvironment
from isobench.run import rounds, runner
from isobench.store.db import Store
from isobench.study import parse_study
from isobench.workloads.compress import Compression

runner.owning = partial(owner.owning, root=OWNERS)
Compression.prepare = lambda self, env: None

def take(*a, **kw):
    print("measuring", flush=True)
    time.sleep(60)

rounds.take = take
stop = NativeEnvironment.stop

def slow_stop(self):
    print("stopping", flush=True)
    time.sleep(1.0)  # the second SIGTERM and a SIGINT come in here
    stop(self)
    with open(MARKS, "a") as fh:
        fh.write(self.name + " stopped\\n")

NativeEnvironment.stop = slow_stop

def interrupt(signum, frame):  # as `isobench run` makes SIGTERM Ctrl-C
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, interrupt)
try:
    runner.run_study(parse_study(STUDY, "sig.toml"), Store(STORE), run_id="sig-run")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_a_second_signal_does_not_cut_the_teardown_short(tmp_path):
    """SIGTERM mid-sample starts the teardown; another SIGTERM and a SIGINT
    while the first environment stops: both environments still stop, the
    run is recorded as interrupted, and its owner file is gone (before, the
    second SIGTERM left the status "running" and the rest standing)."""
    owners, marks, store = tmp_path / "owners", tmp_path / "marks", tmp_path / "r.sqlite"
    script = f"OWNERS, MARKS, STORE, STUDY = {str(owners)!r}, {str(marks)!r}, {str(store)!r}, {STUDY!r}\n" + TEARDOWN
    proc = _child(script, tmp_path)
    try:
        _wait_for(proc, "measuring")
        proc.send_signal(signal.SIGTERM)
        _wait_for(proc, "stopping")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()[-2000:]
    assert out.decode().split()[-1] == "interrupted"
    assert marks.read_text().split("\n")[:2] == ["native stopped", "native-b stopped"], err.decode()[-2000:]
    status = sqlite3.connect(store).execute("SELECT status FROM runs WHERE run_id='sig-run'").fetchone()
    assert status == ("interrupted",)
    assert os.listdir(owners) == []


BEFORE_RUN = """
import sys, time
from functools import partial
from isobench.cli import entry, execution
from isobench.core import lock, owner
from isobench.run import runner
from isobench.store.db import Store
from isobench.study import parse_study

lock.RunLock.__init__.__defaults__ = (LOCK,)
runner.owning = partial(owner.owning, root=OWNERS)
runner.needs_image = lambda study: True
execution.preflight_or_fail = lambda *a, **kw: None
execution.agree_to_packages = lambda *a, **kw: None
execution.say_resolution = lambda *a, **kw: None

class Pilot:
    def as_fact(self, now):
        return {}

execution.host_noise_for_run = lambda *a: Pilot()

def provider(bar):
    def build():
        print("building", flush=True)
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            if CUT_IMPORT:  # as a C extension's init, cut short by the signal, says it
                raise ImportError("initialization failed") from None
            raise
    return build

execution.image_provider = provider
Store(STORE).create_run("earlier-run", parse_study(STUDY, "sig.toml"), {})
entry.main(["run", "sig.toml", "--store", STORE, "--no-progress"])
"""


@pytest.mark.parametrize(("sig", "cut_import"), [(signal.SIGTERM, False), (signal.SIGINT, True)])
def test_a_signal_before_the_run_exists_is_one_true_line(tmp_path, sig, cut_import):
    """Between the lock and the run's record (here: its image being built):
    one line saying nothing was stored, exit 130; not "Aborted!", not an
    unexpected ImportError, and no earlier run named as this one's."""
    (tmp_path / "sig.toml").write_text(STUDY)
    store = tmp_path / "r.sqlite"
    script = (
        f"LOCK, OWNERS, STORE, STUDY, CUT_IMPORT = {str(tmp_path / 'run.lock')!r}, {str(tmp_path / 'owners')!r}, "
        f"{str(store)!r}, {STUDY!r}, {cut_import!r}\n" + BEFORE_RUN
    )
    proc = _child(script, tmp_path)
    try:
        _wait_for(proc, "building")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode()
    assert proc.returncode == 130, text
    assert text.strip() == "interrupted before the run started: nothing was stored", text
    runs = sqlite3.connect(store).execute("SELECT run_id, status FROM runs").fetchall()
    assert runs == [("earlier-run", "running")]  # as it was: nothing of this run, the earlier one untouched


def test_an_interrupted_resume_before_it_reopened_says_the_run_is_as_it_was(capsys):
    from isobench.cli.execution import _interrupted

    class Lock:
        released = False

        def release(self):
            self.released = True

    lock = Lock()
    with pytest.raises(SystemExit) as code:
        _interrupted(lock, None, "r-7")
    assert code.value.code == 130 and lock.released
    said = " ".join(capsys.readouterr().err.split())
    assert said == "interrupted before run r-7 went on: it is as it was (isobench run --resume r-7)"
