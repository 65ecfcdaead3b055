"""Who owns a leftover and whether it still runs (core/owner.py): clean
keeps a live owner's things and removes a dead one's."""

import json
import os
import subprocess

import pytest

from isobench.core import owner as own
from isobench.core.owner import Keeper, Owner, from_labels, is_live, keeps, start_ticks

# a real /proc/PID/stat of /bin/sleep copied to "/tmp/sl p) x": the command
# holds a space and a ')', so fields are counted after the last ')'
STAT = (
    "4817 (sl p) x) S 4816 4813 32333 0 -1 4194304 136 0 0 0 0 0 0 0 20 0 1 0 1080355 2990080 374 "
    "18446744073709551615 94316943204352 94316943222281 140727306202128 0 0 0 0 6 0 1 0 0 17 0 0 0 0 0 0 "
    "94316943236368 94316943237632 94317652217856 140727306205891 140727306205907 140727306205907 "
    "140727306207211 0\n"
)
BOOT = "ec2bf931-3463-4f4c-a5ea-a3e1aef2903b"  # /proc/sys/kernel/random/boot_id, same host


def test_start_ticks_is_field_22_after_the_command():
    assert start_ticks(STAT) == 1080355
    assert start_ticks("") is None and start_ticks("1 (x) S 0") is None


def test_live_only_on_its_boot_with_its_start_time():
    owner = Owner(4817, BOOT, 1080355, "r1")
    assert is_live(owner, BOOT, 1080355)
    assert not is_live(owner, BOOT, None)  # no process has the pid
    assert not is_live(owner, BOOT, 1090000)  # the pid was reused by a later process
    assert not is_live(owner, "another-boot", 1080355)  # a pid of an earlier boot


def test_keeps_a_live_owner_but_not_the_cleaner_itself_nor_no_owner():
    owner, other = Owner(4817, BOOT, 1080355), Owner(99, BOOT, 5)
    assert keeps(owner, BOOT, 1080355, me=other)
    assert not keeps(owner, BOOT, 1080355, me=owner)  # a run sweeping its own
    assert not keeps(None, BOOT, None, me=other)  # unmarked: made before owners were marked
    assert not keeps(owner, BOOT, None, me=other)


def test_labels_round_trip_and_a_partial_mark_is_no_owner():
    labels = {"isobench": "1", "isobench.run": "r1", **own.owner_labels("r1")}
    assert from_labels(labels) == own.me("r1")
    assert from_labels({"isobench": "1", "isobench.pid": "7"}) is None
    assert from_labels({"isobench.pid": "x", "isobench.boot": BOOT, "isobench.start": "1"}) is None
    assert from_labels(None) is None


def test_keeper_keeps_a_live_runs_things_and_names_it(tmp_path):
    root = str(tmp_path)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        live = Owner(sleeper.pid, own.boot_id(), own.started(sleeper.pid) or 0, "live-1")
        dead = Owner(sleeper.pid, own.boot_id(), (own.started(sleeper.pid) or 0) + 1, "dead-1")  # pid reused
        for o in (live, dead):
            (tmp_path / f"{o.run_id}.json").write_text(json.dumps(o.__dict__))
        keeper = Keeper(root)
        assert set(keeper.live_runs()) == {"live-1"}
        assert keeper.keeps_run("directory /x/live-1-native", "live-1-native".startswith)
        assert not keeper.keeps_run("directory /x/dead-1-native", "dead-1-native".startswith)
        marked = {"isobench.pid": str(live.pid), "isobench.boot": live.boot, "isobench.start": str(live.start)}
        assert keeper.keeps_marked("container c1", {**marked, "isobench.run": "live-1"})
        assert not keeper.keeps_marked("container c2", {**marked, "isobench.start": "1"})
        assert keeper.keeps_marked("container c3", {"isobench.run": "live-1"})  # unmarked: its run's file
        why = f"run live-1 is live (pid {sleeper.pid})"
        assert keeper.kept == [f"directory /x/live-1-native: {why}", f"container c1: {why}", f"container c3: {why}"]
        assert keeper.stale_owner_files() == [str(tmp_path / "dead-1.json")]
    finally:
        sleeper.kill()
        sleeper.wait()
    assert keeper.live_runs() == {} and len(keeper.stale_owner_files()) == 2


def test_owning_writes_this_process_then_removes_it(tmp_path):
    with own.owning("r9", str(tmp_path)):
        assert own.read_owners(str(tmp_path)) == {"r9": own.me("r9")}
        assert Keeper(str(tmp_path)).live_runs() == {}  # its own process never keeps it from itself
    assert not os.listdir(tmp_path)


def test_the_boottime_offset_is_read_in_clock_ticks():
    assert (
        own.boottime_offset_ticks("monotonic           0         0\nboottime        86400         0\n", 100) == 8640000
    )
    assert own.boottime_offset_ticks("1 0 0\n7 -5 500000000\n", 100) == -450  # the clocks' numbers, a negative offset
    assert own.boottime_offset_ticks("", 100) == 0 and own.boottime_offset_ticks("boottime x 0\n", 100) == 0


def test_a_run_started_in_a_time_namespace_is_live_to_a_clean_outside_it(tmp_path):
    """A real `unshare --time --boottime 86400`: the run inside writes its
    owner file as it reads its start time (a day later than the host's), and
    the Keeper outside must still see it live (issue 55, 23: clean removed it)."""
    import sys
    import time

    code = (
        "import sys, time\n"
        "from isobench.core import owner\n"
        f"with owner.owning('ns-1', {str(tmp_path)!r}):\n"
        "    print(open('/proc/uptime').read().split()[0], flush=True)\n"
        "    time.sleep(30)\n"
    )
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    argv = ["unshare", "--time", "--boottime", "86400", "--fork", "--kill-child", sys.executable, "-c", code]
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": src}
        )
    except FileNotFoundError:
        pytest.skip("no unshare here")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            pytest.skip(f"no time namespace here: {proc.communicate(timeout=10)[1].decode().strip()[:200]}")
        with open("/proc/uptime") as fh:
            assert float(line) - float(fh.read().split()[0]) > 80000  # it did run a day ahead
        deadline = time.monotonic() + 5
        while not (tmp_path / "ns-1.json").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        keeper = Keeper(str(tmp_path))
        assert set(keeper.live_runs()) == {"ns-1"} and keeper.stale_owner_files() == []
    finally:
        proc.kill()
        proc.wait()
