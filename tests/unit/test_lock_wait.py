"""--wait [DURATION] (issue 55, finding 12): `run` and `try` exited 2 at
once when another run held the host's lock, so a job on a shared CI runner
could not wait for its turn. With --wait they wait up to DURATION, saying
who holds the lock, then one line and exit 2."""

from __future__ import annotations

import threading
import time

import pytest
from click.testing import CliRunner

from isobench.cli import execution
from isobench.cli.execution import WAIT_DEFAULT, bare_wait
from isobench.cli.main import main
from isobench.core import lock as lock_module
from isobench.core.lock import AlreadyRunning, RunLock

TAKES = {"--env", "--store", "-o", "--format", "--rounds"}


def test_a_bare_wait_never_takes_the_next_word_for_its_duration():
    run = ["--wait", "studies/quick.toml"]
    assert bare_wait(run, TAKES, True) == [f"--wait={WAIT_DEFAULT}", "studies/quick.toml"]
    assert bare_wait(["quick", "--wait"], TAKES, True) == ["quick", f"--wait={WAIT_DEFAULT}"]
    assert bare_wait(["--wait", "10m", "quick"], TAKES, True) == ["--wait", "10m", "quick"]
    assert bare_wait(["--wait=90", "quick"], TAKES, True) == ["--wait=90", "quick"]
    # try: its options end at the command (or at --), whose own words are left alone
    tried = ["--env", "native", "--wait", "--", "sleep", "--wait"]
    assert bare_wait(tried, TAKES, False) == ["--env", "native", f"--wait={WAIT_DEFAULT}", "--", "sleep", "--wait"]
    assert bare_wait(["--wait", "bzip2", "--wait"], TAKES, False) == [f"--wait={WAIT_DEFAULT}", "bzip2", "--wait"]
    assert bare_wait(["--rounds", "3", "make", "--wait"], TAKES, False) == ["--rounds", "3", "make", "--wait"]


def test_the_lock_is_waited_for_and_its_holder_named(tmp_path):
    path = str(tmp_path / "run.lock")
    first = RunLock(path)
    first.acquire("quick")
    first.set_run_id("20261121-quick-abcd")
    told: list[str] = []
    threading.Timer(1.5, first.release).start()
    began = time.monotonic()
    second = RunLock(path)
    second.acquire("other", 30, told.append)
    assert 1.4 < time.monotonic() - began < 10
    assert len(told) == 1 and "run 20261121-quick-abcd, study quick" in told[0]
    with pytest.raises(AlreadyRunning, match=r"study other, pid \d+, .*\); waited 1 s for it; one study at a time"):
        RunLock(path).acquire("third", 1.0)
    second.release()


@pytest.fixture
def held(tmp_path, monkeypatch):
    """The run lock at a path of the test's, held by a run of study quick."""
    path = str(tmp_path / "run.lock")
    monkeypatch.setattr(lock_module.RunLock.__init__, "__defaults__", (path,))
    first = RunLock(path)
    first.acquire("quick")
    yield first
    first.release()


def test_a_wait_that_ends_held_is_one_line_and_exit_2(held, capfd):
    with pytest.raises(SystemExit) as ended:
        execution.take_lock("mine", 1.0)
    assert ended.value.code == 2
    err = capfd.readouterr().err
    assert "waiting for the run lock (up to 1 s in all): held by study quick, pid" in err
    assert "another isobench run is in progress (study quick, pid" in err and "; waited 1 s for it;" in err
    with pytest.raises(SystemExit):
        execution.take_lock("mine", None)
    assert "; --wait DURATION waits for it" in capfd.readouterr().err


def test_run_try_and_calibrate_take_wait_bare_or_with_a_duration(tmp_path, monkeypatch):
    asked: list = []

    def execute(study, store, progress, *args, **kw):
        asked.append(kw.get("wait_s"))
        raise SystemExit(0)

    monkeypatch.setattr(execution, "execute", execute)
    monkeypatch.chdir(tmp_path)
    study = '[study]\nname = "s"\n[environments.native]\n[workloads.t]\ncommand = ["true"]\nrepeat = 18\n'
    (tmp_path / "s.toml").write_text(study)
    store = ["--store", str(tmp_path / "r.sqlite")]
    runner = CliRunner()
    for args in (
        ["run", *store, "--wait", "./s.toml"],
        ["run", *store, "./s.toml", "--wait", "10m"],
        ["try", *store, "--env", "native", "--wait", "--", "true"],
        ["calibrate", *store, "./s.toml", "--wait"],
    ):
        r = runner.invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
    assert asked == [3600.0, 600.0, 3600.0, 3600.0]
