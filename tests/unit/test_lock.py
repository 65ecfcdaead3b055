import fcntl
import json
import multiprocessing
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest

import isobench
from isobench.core.lock import AlreadyRunning, RunLock


def test_second_holder_is_refused_naming_the_first(tmp_path):
    path = str(tmp_path / "run.lock")
    first = RunLock(path)
    first.acquire("quick")
    first.set_run_id("20261121-quick-abcd")
    with pytest.raises(AlreadyRunning) as info:
        RunLock(path).acquire("other")
    msg = str(info.value)
    assert "run 20261121-quick-abcd" in msg and "study quick" in msg and f"pid {os.getpid()}" in msg
    first.release()
    again = RunLock(path)
    again.acquire("other")  # free once released
    again.release()


def _hold_and_die(path):
    RunLock(path).acquire("doomed")
    os._exit(9)  # no release: as after SIGKILL


def test_a_dead_holder_does_not_keep_the_host_locked(tmp_path):
    path = str(tmp_path / "run.lock")
    proc = multiprocessing.get_context("fork").Process(target=_hold_and_die, args=(path,))
    proc.start()
    proc.join(10)
    lock = RunLock(path)
    lock.acquire("next")
    lock.release()


def test_running_run_id_names_the_live_holder_only(tmp_path):
    from isobench.core.lock import running_run_id

    path = str(tmp_path / "run.lock")
    assert running_run_id(path) is None  # no lock file yet
    lock = RunLock(path)
    lock.acquire("quick")
    lock.set_run_id("20261121-quick-abcd")
    assert running_run_id(path) == "20261121-quick-abcd"
    lock.release()
    assert running_run_id(path) is None  # a "running" run in the store is then a dead one


def test_live_runs_are_the_lock_holders_and_the_live_owners_only(tmp_path):
    """A run is live while the lock names it, or while its owner file names a
    process that still runs; a lock held before its run is named adds none
    (CI: a unit test's stored "running" run was taken for the quota lane's)."""
    import dataclasses
    import subprocess

    from isobench.core.lock import live_run_ids
    from isobench.core.owner import me

    path, owners = str(tmp_path / "run.lock"), tmp_path / "owners"
    owners.mkdir()
    gone = subprocess.Popen(["true"])
    gone.wait()
    for run_id, owner in (("mine", me("mine")), ("dead", dataclasses.replace(me("dead"), pid=gone.pid, start=1))):
        (owners / f"{run_id}.json").write_text(json.dumps(dataclasses.asdict(owner)))
    assert live_run_ids(path, str(owners)) == {"mine"}
    lock = RunLock(path)
    lock.acquire("quick")  # held, no run named yet
    assert live_run_ids(path, str(owners)) == {"mine"}
    lock.set_run_id("r9")
    assert live_run_ids(path, str(owners)) == {"mine", "r9"}
    lock.release()


def test_runs_tells_complete_incomplete_interrupted_and_died(tmp_path, monkeypatch):
    """`isobench runs`: a run still marked running that nobody holds the lock
    for (SIGKILL, a disk too full to write its status) shows as died."""
    from click.testing import CliRunner

    import isobench.core.lock
    from isobench.cli.main import main
    from isobench.store.db import Store
    from isobench.study import parse_study

    study = parse_study(
        '[study]\nname = "s"\nbaseline = "native"\n[environments.native]\n[workloads.startup]\n', "s.toml"
    )
    store = Store(str(tmp_path / "r.sqlite"))
    for run_id, status in (("r1", "complete"), ("r2", "incomplete"), ("r3", "interrupted"), ("r4", None)):
        store.create_run(run_id, study, {})
        if status:
            store.finish_run(run_id, status)
    store.close()
    monkeypatch.setattr(isobench.core.lock, "live_run_ids", lambda: frozenset())
    out = CliRunner().invoke(main, ["runs", "--store", str(tmp_path / "r.sqlite"), "--format", "json"]).stdout
    rows = {r["run_id"]: r["status"] for r in json.loads(out)["runs"]}
    assert rows == {"r1": "complete", "r2": "incomplete", "r3": "interrupted", "r4": "died"}, out
    table = CliRunner().invoke(main, ["runs", "--store", str(tmp_path / "r.sqlite")]).stdout
    assert all(re.search(rf"^{r} .* {status} ", table, re.M) for r, status in rows.items()), table
    monkeypatch.setattr(isobench.core.lock, "live_run_ids", lambda: frozenset({"r4"}))  # its isobench is alive
    out = CliRunner().invoke(main, ["runs", "--store", str(tmp_path / "r.sqlite")], terminal_width=200).output
    assert "died" not in out and "running" in out


# -- the lock is root's alone (issue 55) -------------------------------------------
# `flock -s -n /run/isobench/run.lock sleep 12` as nobody stopped root's run
# (a shared flock needs only read access, and the file was 0644); a later
# refusal named a run whose process had gone. Each holder here is a real one:
# flock(1), as nobody or as root, on a lock in a directory of the test's own.

AS_NOBODY = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]
as_nobody = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("flock"),
    reason="a switch to nobody needs root, setpriv and flock",
)


@pytest.fixture
def lock_dir():
    """A lock directory anyone may enter, as /run/isobench (0755) is: only the file's mode keeps nobody out."""
    top = tempfile.mkdtemp(prefix="isobench-lock-", dir="/tmp")
    os.chmod(top, 0o755)
    os.mkdir(os.path.join(top, "run"))
    os.chmod(os.path.join(top, "run"), 0o755)
    yield os.path.join(top, "run")
    shutil.rmtree(top)


def hold(path: str, *, nobody: bool = False, shared: bool = False) -> subprocess.Popen:
    """flock(1) holding `path` for 30 s (or failing at once); the caller stops it."""
    argv = [*(AS_NOBODY if nobody else []), "flock", *(["-s"] if shared else []), "-n", path, "sleep", "30"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def held_or_failed(proc: subprocess.Popen, path: str) -> bool:
    """True once `proc` holds the lock (root's probe is refused), False once it has failed."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with open(path) as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fh, fcntl.LOCK_UN)
            except BlockingIOError:
                return True
        time.sleep(0.02)
    raise AssertionError("flock neither held nor failed in 10 s")


@as_nobody
def test_nobody_cannot_hold_the_run_lock(lock_dir):
    path = os.path.join(lock_dir, "run.lock")
    with open(path, "w"):  # an older isobench's lock file, 0644
        pass
    os.chmod(path, 0o644)
    first = RunLock(path)
    first.acquire("first")  # a root run narrows it
    first.release()
    squatter = hold(path, nobody=True, shared=True)
    try:
        assert not held_or_failed(squatter, path), "nobody holds root's run lock"
        assert "Permission denied" in squatter.communicate(timeout=10)[1]
        lock = RunLock(path)
        lock.acquire("second")  # root's run is not stopped
        lock.release()
    finally:
        squatter.kill()
        squatter.wait()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


@as_nobody
def test_a_reader_that_may_not_open_the_lock_still_sees_it_held(lock_dir):
    """Not root (`isobench runs` of a store one may read, doctor's pilot):
    the lock table says held, not by whom; taking it is an OSError, as
    before, not a refusal of root's directory."""
    path = os.path.join(lock_dir, "run.lock")
    code = textwrap.dedent(f"""\
        from isobench.core.lock import RunLock, running_run_id
        print(running_run_id({path!r}))
        try:
            RunLock({path!r}).acquire("doctor")
        except OSError as exc:
            print(type(exc).__name__)
    """)
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(isobench.__file__))}

    def ask() -> list[str]:
        return subprocess.run(
            [*AS_NOBODY, sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        ).stdout.split()

    lock = RunLock(path)
    lock.acquire("quick")
    lock.set_run_id("r1")
    assert ask() == ["?", "PermissionError"]
    lock.release()
    assert ask() == ["None", "PermissionError"]


def test_a_dead_holders_words_are_never_named(tmp_path):
    """The file still names a SIGKILLed run; another process holds the lock."""
    import dataclasses

    from isobench.core.lock import running_run_id
    from isobench.core.owner import me

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = dataclasses.replace(me(), pid=gone.pid, start=1)
    words = {**dataclasses.asdict(dead), "study": "f3-duet", "run_id": "r-dead", "started": "2026-01-01 00:00:00"}
    path = str(tmp_path / "run.lock")
    with open(path, "w") as fh:
        json.dump(words, fh)
    holder = hold(path)
    try:
        assert held_or_failed(holder, path)
        with pytest.raises(AlreadyRunning) as info:
            RunLock(path).acquire("mine")
        assert "f3-duet" not in str(info.value) and f"pid {gone.pid}" not in str(info.value)
        assert f"{path} is held by a process that names no live isobench run; `fuser -v {path}`" in str(info.value)
        assert running_run_id(path) == "?"
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_directory_that_is_a_symlink_is_refused(tmp_path):
    from isobench.core.workspace import ForeignRoot

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ForeignRoot, match="run is a symlink"):
        RunLock(str(tmp_path / "run" / "run.lock")).acquire("quick")
    assert os.listdir(tmp_path / "elsewhere") == []


HOLD = "import fcntl, sys, time; f = open(sys.argv[1]); fcntl.flock(f, 2); print(1, flush=True); time.sleep(9)"


def test_a_moment_is_one_holder_at_a_time_and_a_stuck_one_is_named(tmp_path):
    """Two client hosts starting at once each pick the first free /24 under
    core/lock.moment: the second waits for the first, and one held past the
    wait is a TimeoutError naming the file."""
    from isobench.core.lock import moment

    path = str(tmp_path / "subnet.lock")
    with moment(path):  # made, taken and given back
        pass
    held = subprocess.Popen([sys.executable, "-c", HOLD, path], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout is not None and held.stdout.readline() == "1\n"
        with pytest.raises(TimeoutError, match=re.escape(path)), moment(path, wait_s=0.3):
            pass
    finally:
        held.kill()
        held.wait()
    with moment(path, wait_s=5):  # free again once its holder has gone
        pass


def test_a_test_lane_takes_a_run_lock_of_its_own_and_a_bad_lane_name_is_one_line(monkeypatch):
    """test.sh's side lane runs `isobench run` beside the main lane's: its
    runs take /run/isobench/lanes/<lane>.lock, not the host's; a lane name
    that would make another path is refused, naming the variable."""
    from isobench.core import lock
    from isobench.core.errors import IsobenchError

    monkeypatch.delenv(lock.LANE_ENV, raising=False)
    assert lock.lock_path() == lock.LOCK_PATH == RunLock().path
    monkeypatch.setenv(lock.LANE_ENV, "beside")
    assert lock.lock_path() == "/run/isobench/lanes/beside.lock" == RunLock().path
    for bad in ("../run", "Beside", "a/b", "x" * 40, "-x"):
        monkeypatch.setenv(lock.LANE_ENV, bad)
        with pytest.raises(IsobenchError, match=lock.LANE_ENV) as err:
            RunLock()
        assert "\n" not in str(err.value)
