"""What a native sample's command leaves behind (issue 55, 26), with real
processes: a daemon it forked and a child holding its pipes end with the
sample, one at a time and in a duet, and the sample ends when its command
does (as a container's exec does) instead of at its timeout; a harness
stopped mid-duet leaves the duet not as planned."""

from __future__ import annotations

import os
import subprocess
import threading
import time

import pytest

from isobench.envs.native import NativeEnvironment
from isobench.host import samplecgroup
from isobench.host.hostinfo import HostInfo
from isobench.run.duet import run_duet
from isobench.run.measure import take
from isobench.workloads.base import check
from isobench.workloads.compress import Compression

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=0)
LINE = "echo 'isobench-time real=0.20 user=0.1 sys=0' >&2"  # what Compression parses


def _running(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry))
    return found


def _gone(marker: str, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(marker)


def _work(monkeypatch, script: str) -> Compression:
    work = Compression(Compression.Params(size_mb=1, threads=1), HOST)
    monkeypatch.setattr(work, "argv", lambda case, paths: ["sh", "-c", script])
    monkeypatch.setattr(work, "cwd", lambda case, paths: None)
    return work


def test_a_sample_alone_ends_with_its_command_and_takes_its_daemon_and_children(monkeypatch):
    """A child in the background holding stdout and stderr, and a daemon in a
    session of its own: before, the sample ran to its timeout (Docker's said
    ok) and both outlived it."""
    marker = f"{31 + os.getpid() % 1000 / 1000:.3f}"
    script = f"sleep {marker} & setsid sleep {marker} </dev/null >/dev/null 2>&1 & {LINE}; echo out"
    work = _work(monkeypatch, script)

    def run(self, case, env):  # the timed command alone, checked as the workloads check theirs
        return self.parse(case, check(env.exec(self.argv(case, env.paths), 8)))

    monkeypatch.setattr(Compression, "run", run)
    env = NativeEnvironment(name="native", run_id=f"unit-left-{os.getpid()}")
    t0 = time.monotonic()
    taken = take(work, "default", env)
    assert taken.status == "ok", (taken.error, taken.raw)
    assert time.monotonic() - t0 < 5  # the command's end, not its 8 s timeout
    assert env.timed is None  # the sample's claim ends with it
    assert _gone(marker), _running(marker)
    assert not [n for n in samplecgroup.leftovers() if n.startswith(env.run_id)]


def test_only_the_timed_command_is_ended_whole(monkeypatch):
    """A server the workload starts outside its timed command (through
    start-stop-daemon, in a session of its own) is not the sample's: it runs on."""
    marker = f"{32 + os.getpid() % 1000 / 1000:.3f}"
    env = NativeEnvironment(name="native", run_id=f"unit-srv-{os.getpid()}")
    env.timed = ["sh", "-c", "true"]
    try:
        r = env.exec(["sh", "-c", f"setsid sleep {marker} </dev/null >/dev/null 2>&1 &"], timeout=10)
        assert r.ok and _running(marker)
        assert env.timed == ["sh", "-c", "true"]  # not claimed by another command
    finally:
        for pid in _running(marker):
            os.kill(pid, 9)


def test_a_duet_side_whose_child_holds_the_pipes_does_not_wait_for_it(monkeypatch):
    """Held at the gate: the stop read the gate's stderr until both streams
    ended, 35 s with a child holding them, and then claimed no filling."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("a duet needs two CPUs")
    marker = f"{33 + os.getpid() % 1000 / 1000:.3f}"
    short = _work(monkeypatch, f"sleep {marker} & {LINE}; sleep 0.2")
    long = _work(monkeypatch, f"{LINE}; sleep 1.0")
    run_id = f"unit-duetleft-{os.getpid()}"
    a, b = NativeEnvironment(name="native", run_id=run_id), NativeEnvironment(name="native-b", run_id=run_id)
    t0 = time.monotonic()
    try:
        for env in (a, b):
            env.start()  # its scratch: where a filler of a work without a directory gets a fresh one
        x, y = run_duet((short, long), "default", (a, b), ((cpus[0],), (cpus[1],)))
    finally:
        for env in (a, b):
            env.stop()
    assert time.monotonic() - t0 < 15
    assert x.status == y.status == "ok", (x.error, y.error)
    assert x.extra["duet"]["fillers"] >= 1 and y.extra["duet"]["overlap"] > 0.9, (x.extra["duet"], y.extra["duet"])
    assert _gone(marker), _running(marker)
    assert not [n for n in samplecgroup.leftovers() if n.startswith(run_id)]


def test_a_harness_stopped_mid_duet_leaves_it_not_as_planned(monkeypatch):
    """SIGSTOP of isobench itself for 1.5 s of a 2.5 s duet: the sides do not
    swap meanwhile, and the record says so (the issue's 10 s stop swapped 8
    times of about 46, home share 0.04); the runner measures it again."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("a duet needs two CPUs")
    work = _work(monkeypatch, f"{LINE}; sleep 2.5")
    run_id = f"unit-stop-{os.getpid()}"
    a, b = NativeEnvironment(name="native", run_id=run_id), NativeEnvironment(name="native-b", run_id=run_id)
    stopper = subprocess.Popen(
        ["sh", "-c", f"sleep 0.6; kill -STOP {os.getpid()}; sleep 1.5; kill -CONT {os.getpid()}"]
    )
    guard = threading.Timer(10, lambda: os.kill(os.getpid(), 18))  # SIGCONT, whatever happens
    guard.start()
    try:
        x, y = run_duet(work, "default", (a, b), ((cpus[0],), (cpus[1],)))
    finally:
        stopper.wait(30)
        guard.cancel()
    assert x.status == y.status == "ok", (x.error, y.error)
    for record in (x.extra["duet"], y.extra["duet"]):
        assert "(was the harness stopped?)" in record.get("not_as_planned", ""), record
        assert record["still_s"] >= 1.4, record  # the stop, as its longest stretch without a swap
