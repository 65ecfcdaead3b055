import json
import multiprocessing
import os
import re

import pytest

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
