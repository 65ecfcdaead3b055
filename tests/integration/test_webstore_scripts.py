"""The shell an instance's stack starts and stops with (workloads/
webstore_scripts.py), run for real with start-stop-daemon on stand-in
servers (sleep, a shell that ignores SIGTERM): readiness waits, a server
that dies is named with its log, and stop escalates to SIGKILL. Seconds."""

import os
import subprocess
import time

import pytest

from isobench.workloads.webstore_scripts import Daemon, start_script, stop_script

pytestmark = pytest.mark.beside  # stand-ins in its own tmp_path: nothing a clean or another test sees


def sh(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=timeout)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[1][0] not in "ZX"
    except OSError:
        return False


def test_start_waits_for_readiness_and_stop_removes_all(tmp_path):
    d = str(tmp_path / "dir with space")
    flag = f"{d}/ready'flag"
    daemons = [
        Daemon("first", "/bin/sleep", ("30",), f"{d}/a.pid", f"{d}/a.log", ("test", "-e", flag)),
        Daemon("second", "/bin/sleep", ("31",), f"{d}/b.pid", f"{d}/b.log"),
    ]
    os.makedirs(d)
    os.chmod(d, 0o777)
    os.chmod(tmp_path, 0o777)
    # the first is ready only when its flag appears: the script waits for it
    proc = subprocess.Popen(["sh", "-c", start_script(daemons, "nobody", 20)], stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert proc.poll() is None and not os.path.exists(f"{d}/b.pid")  # the second waits for the first
    open(flag, "w").close()
    assert proc.wait(30) == 0, proc.stderr.read()
    pids = [int(open(f"{d}/{n}.pid").read()) for n in ("a", "b")]
    assert all(alive(p) for p in pids)
    r = sh(stop_script([("second", f"{d}/b.pid"), ("first", f"{d}/a.pid")], 5))
    assert r.returncode == 0, r.stderr
    assert not any(alive(p) for p in pids)
    assert not os.path.exists(f"{d}/a.pid") and not os.path.exists(f"{d}/b.pid")
    # nothing to stop is not an error
    assert sh(stop_script([("first", f"{d}/a.pid")], 5)).returncode == 0


def test_a_server_that_exits_is_named_with_its_log(tmp_path):
    d = str(tmp_path)
    os.chmod(d, 0o777)
    daemons = [
        Daemon(
            "pg", "/bin/sh", ("-c", "echo cannot open data directory; exit 3"), f"{d}/p.pid", f"{d}/p.log", ("false",)
        )
    ]
    t0 = time.monotonic()
    r = sh(start_script(daemons, "nobody", 30))
    assert r.returncode == 1 and time.monotonic() - t0 < 10
    assert r.stderr.startswith("pg exited: cannot open data directory"), r.stderr


def test_stop_kills_a_server_that_ignores_term(tmp_path):
    d = str(tmp_path)
    os.chmod(d, 0o777)
    daemons = [
        Daemon("stubborn", "/bin/sh", ("-c", "trap '' TERM; sleep 60 & wait; sleep 60"), f"{d}/s.pid", f"{d}/s.log")
    ]
    assert sh(start_script(daemons, "nobody", 5)).returncode == 0
    pid = int(open(f"{d}/s.pid").read())
    time.sleep(0.3)  # its trap is set
    t0 = time.monotonic()
    r = sh(stop_script([("stubborn", f"{d}/s.pid")], 1))
    assert r.returncode == 0, r.stderr
    assert not alive(pid) and 1 <= time.monotonic() - t0 < 10  # TERM ignored for the grace, then KILL
