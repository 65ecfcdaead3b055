"""The duet's gate (core/gate.py): one release for both sides, the work's own
instants read back, a side that never comes does not hold the other, and a
duet that did not run as planned says why (run/duet.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time

import pytest

from isobench.core.gate import PAD_TO, PROGRAM, Ended, Gate, Inside, ended, filled, gate_argv
from isobench.host.hostinfo import HostInfo
from isobench.run.duet import ROTATE_S, not_as_planned
from isobench.run.measure import Taken
from isobench.workloads.base import Measurement
from isobench.workloads.compress import Compression

HOST = HostInfo(cores=1, mem_bytes=8 << 30, disk_free_bytes=0)


def test_the_gates_lines_leave_the_works_output_as_it_was():
    end = ended(
        "out\nisobench-gate-out\n", "isobench-gate ready\nwarning: x\nisobench-gate 1000000000 3500000000 8192 0\n"
    )
    assert end == Ended(Inside(1.0, 3.5, 8192), 0, "out\n", "warning: x\n")
    # a work whose stderr did not end its line, and that failed
    end = ended("isobench-gate-out\n", "no newlineisobench-gate 2000000000 2000000001 8192 3\n")
    assert end is not None and end.stderr == "no newline" and end.code == 3 and end.stdout == ""
    # not ended until both streams carry the marks: stdout may come later than stderr
    assert ended("partial", "isobench-gate 1 2 3 0\n") is None
    assert ended("isobench-gate-out\n", "isobench-gate ready\n") is None
    assert filled("isobench-gate 1 2 3 0\nisobench-gate-filled 4 5000000000\n") == (4, 5.0)
    assert filled("") is None


def test_one_release_opens_both_sides_only_when_both_are_ready():
    gate, opened = Gate(), []
    a, b = gate.side(0, ["a"]), gate.side(1, ["b"])
    t = threading.Thread(target=a.arrive, args=(lambda: opened.append(("a", time.monotonic())),))
    t.start()
    time.sleep(0.2)
    assert opened == []  # a waits for b
    b.arrive(lambda: opened.append(("b", time.monotonic())))
    t.join(5)
    assert [n for n, _ in opened] == ["a", "b"] and opened[1][1] - opened[0][1] < 0.01
    assert a.held and b.held


def test_a_side_that_never_reaches_the_gate_does_not_hold_the_other():
    gate, opened = Gate(), []
    a, b = gate.side(0, ["timed"]), gate.side(1, ["timed"])
    t = threading.Thread(target=a.arrive, args=(lambda: opened.append("a"),))
    t.start()
    b.abandon()  # b's sample ended (failed) before its gate
    t.join(5)
    assert opened == ["a"] and not b.held
    # and one whose partner never comes at all goes alone after the timeout
    lonely = Gate(timeout=0.1).side(0, ["x"])
    went = []
    assert lonely.arrive(lambda: went.append(1)) is False and went == [1]


def test_only_the_timed_command_is_held():
    side = Gate().side(0, ["pixz", "-2"])
    assert not side.claim(["rm", "-f", "out"])
    assert side.claim(["pixz", "-2"])
    assert not side.claim(["pixz", "-2"])  # a repeat of the command runs plain


def _gated(argv: list[str], fill: bool, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        gate_argv(argv, fill),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or {"PATH": "/usr/bin:/bin"},
    )
    assert proc.stderr is not None and proc.stderr.readline() == b"isobench-gate ready\n"
    return proc


def _release(proc: subprocess.Popen, byte: bytes = b"g") -> None:
    assert proc.stdin is not None
    proc.stdin.write(byte)
    proc.stdin.flush()


def _wait_lines(path, n: int, timeout: float = 20.0) -> None:
    """Until `path` has n lines: fillers counted as they start, not by a
    sleep that a loaded host (CI's lanes side by side) may not honour."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.01)
    pytest.fail(f"{path}: fewer than {n} lines after {timeout:g} s")


def test_the_gate_holds_the_work_and_gives_it_the_same_environment_size():
    """Real processes: the work does not start before the release, and
    argv plus environment come to PAD_TO bytes whatever the argv's length."""
    sizes = []
    for path in ("/tmp/x", "/tmp/a-much-longer-path-" + "y" * 100):
        proc = _gated(["sh", "-c", 'date +%s%N; env | wc -c; : "$1"', "sh", path], False, {"LONG": "z" * 3000})
        time.sleep(0.3)
        released = time.time()
        _release(proc)
        out, err = proc.communicate(timeout=30)
        end = ended(out.decode(), err.decode())
        assert end is not None and end.code == 0
        started = int(end.stdout.split()[0]) / 1e9
        assert released <= end.inside.start <= started  # held until the release
        sizes.append(end.inside.stack_bytes)
        assert b"LONG" not in out  # the harness's own environment does not reach the work
    assert sizes == [PAD_TO, PAD_TO]


def test_the_gate_fills_with_copies_of_the_work_until_told_to_stop(tmp_path):
    runs = tmp_path / "runs"
    proc = _gated(["sh", "-c", f"echo x >> {runs}; sleep 0.2; echo done"], True)
    _release(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"done\n" and proc.stdout.readline() == b"isobench-gate-out\n"
    began = time.monotonic()
    _wait_lines(runs, 4)  # the work and three fillers of 0.2 s each, silent: nothing more on stdout
    _release(proc, b"s")
    filling_s = time.monotonic() - began
    out, err = proc.communicate(timeout=30)
    assert out == b"" and proc.returncode == 0
    count, until = filled(err.decode()) or (0, 0.0)
    # three copies started before the stop; the ceiling is what 0.2 s a copy allows
    assert 3 <= count <= filling_s / 0.2 + 1 and abs(until - time.time()) < 5


def test_a_failing_work_is_not_filled_and_its_code_comes_through():
    proc = _gated(["sh", "-c", "exit 3"], True)
    _release(proc)
    time.sleep(0.3)
    _release(proc, b"s")
    out, err = proc.communicate(timeout=30)
    end = ended(out.decode(), err.decode())
    assert end is not None and end.code == 3 and proc.returncode == 3
    assert filled(err.decode()) == (0, pytest.approx(time.time(), abs=5))


def _taken(ok: bool = True) -> Taken:
    m = Measurement({"x": 1.0}) if ok else None
    return Taken("", 0.0, 1.0, 0.0, m, "ok" if ok else "failed")


def test_a_duet_not_as_planned_says_why():
    window = (0.0, 4.6)
    ok = {"swaps": 45, "home_share": 0.51, "rotate_s": 0.025, "still_s": 0.2}
    assert not_as_planned(ok, window, _taken()) == ""
    # a harness stopped for 10 s: still for 10 s, home share 0.04
    assert "stood still for 10.0 s" in not_as_planned({**ok, "still_s": 10.0}, window, _taken())
    assert "4% of its time" in not_as_planned({**ok, "home_share": 0.04}, window, _taken())
    # woken late (a TCG guest): 15 swaps of about 39 planned, but evenly: as planned
    assert not_as_planned({**ok, "swaps": 15, "rotate_s": 0.1, "still_s": 0.4}, (0.0, 3.9), _taken()) == ""
    # the limit grows with the record's period, stretched by slow moves
    assert not_as_planned({**ok, "rotate_s": 0.5, "still_s": 4.0}, window, _taken()) == ""
    assert "stood still" in not_as_planned({**ok, "rotate_s": 0.5, "still_s": 6.0}, window, _taken())
    assert "partner failed" in not_as_planned(ok, window, _taken(ok=False))
    assert "partner failed" in not_as_planned(ok, window, None)
    assert "swap failed" in not_as_planned({**ok, "rotate_error": "gone"}, window, _taken())
    # too short to have swapped much: nothing said
    assert not_as_planned({"swaps": 0, "home_share": 1.0, "still_s": 5 * ROTATE_S}, (0.0, 5 * ROTATE_S), _taken()) == ""


def test_a_discarded_try_keeps_its_values():
    from isobench.run.measure import discarded

    taken = Taken("t", 0.0, 1.0, 0.0, Measurement({"x": 2.0}, raw="out"))
    gone = discarded(taken, "duet not as planned")
    assert gone.status == "failed" and gone.error == "duet not as planned"
    assert gone.extra["discarded"] == {"x": 2.0} and gone.raw == "out"


def test_an_environment_whose_gate_cannot_run_falls_back_and_says_why(monkeypatch):
    from isobench.envs import base
    from isobench.envs.native import NativeEnvironment

    assert NativeEnvironment(name="native", run_id="unit-gate").gate_problem() == ""
    monkeypatch.setattr(base, "PYTHON", "/nonexistent/python3")  # an image without Python, say
    problem = NativeEnvironment(name="native", run_id="unit-gate").gate_problem()
    assert problem.startswith("/nonexistent/python3 does not run in it")


def test_a_kind_without_a_gate_says_so():
    from isobench.envs.vm.environment import VmEnvironment

    assert "has no gate" in VmEnvironment(name="vm").gate_problem()


def test_the_answer_says_how_far_apart_the_starts_were():
    from isobench.results.schedule import gate_lines

    starts = {
        "native": [("held", -0.0003), ("held", 0.0001)],
        "docker-nat": [("held", 0.0003), ("held", -0.0021)],
        "vm": [("a vm environment has no gate: its command starts at the release", 0.31)] * 3,
    }
    held, vm = gate_lines(starts)
    assert held.startswith("The two sides' work started together, held at a gate: 0.30 ms apart")
    assert "at most 2.1 ms" in held
    assert (
        vm == "vm was not held at the gate (a vm environment has no gate: its command starts at the release): "
        "its starts were 310 ms apart (median)."
    )
    assert gate_lines({}) == [] and gate_lines({"native": [("", 0.2)]}) == []  # a run stored before the gate


def test_a_duet_not_as_planned_is_measured_again_and_its_try_kept(monkeypatch, tmp_path):
    """The runner's side: the first try's record says it did not run as
    planned; it is stored as failed with its values, and measured again."""
    from isobench.run import rounds
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    tries: list[int] = []

    def fake_duet(works, case, pair, cpus, noise_facts=None):
        tries.append(1)
        why = "its sides stood still for 10.0 s at a stretch (was the harness stopped?)" if len(tries) == 1 else ""
        out = []
        for partner in pair[::-1]:
            t = Taken("2026-11-29T00:00:00+00:00", 0.0, 1.0, 0.0, Measurement({"throughput_mbs": 10.0 + len(tries)}))
            t.extra["duet"] = {"partner": partner.name, "cpus": "0", **({"not_as_planned": why} if why else {})}
            out.append(t)
        return out

    monkeypatch.setattr(rounds, "run_duet", fake_duet)
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    study = parse_study(
        '[study]\nname = "again"\nrepetitions = 1\nwarmup = 0\nbaseline = "native"\nschedule = "duet"\n'
        '[environments.native]\n[environments.native-b]\nkind = "native"\n'
        "[workloads.compression]\nsize_mb = 1\nthreads = 1\n",
        "again.toml",
    )
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(study, store)
    samples = store.samples(run_id)
    assert len(tries) == 2
    failed = [s for s in samples if s["status"] == "failed"]
    assert len(failed) == 2 and all(
        "duet not as planned (its sides stood still for 10.0 s" in s["error"] for s in failed
    )
    assert all(json.loads(s["extra"])["discarded"] == {"throughput_mbs": 11.0} for s in failed)
    assert sorted(s["status"] for s in samples) == ["failed", "failed", "ok", "ok"]
    assert store.load_run(run_id).status == "complete"


def test_a_side_that_falls_back_is_not_held_at_a_gate_nobody_opens(monkeypatch):
    """A kind that can hold commands, in an environment where the gate's
    program does not run: its command runs plain at the release, not held
    until its timeout (the duet took 152 s a try before this)."""
    from isobench.envs.native import NativeEnvironment
    from isobench.run.duet import run_duet

    work = Compression(Compression.Params(size_mb=1, threads=1), HOST)
    monkeypatch.setattr(
        work, "argv", lambda case, paths: ["sh", "-c", "echo 'isobench-time real=0.20 user=0.1 sys=0' >&2; sleep 0.2"]
    )
    a, b = NativeEnvironment(name="native", run_id="unit-fb"), NativeEnvironment(name="native-b", run_id="unit-fb")
    monkeypatch.setattr(b, "gate_problem", lambda: "no Python here")
    t0 = time.monotonic()
    x, y = run_duet(work, "default", (a, b), ((0,), (1,)))
    assert time.monotonic() - t0 < 20 and x.status == y.status == "ok", (x.error, y.error)
    assert x.extra["duet"]["gate"] == "held" and y.extra["duet"]["gate"] == "no Python here"
    assert y.extra["duet"]["clock"] == "harness"


def test_without_cgroups_of_its_own_a_held_native_command_is_still_moved(monkeypatch):
    """Where no cgroup can be made, the command is pinned by taskset and a
    duet's moves walk its tree: before this, nothing moved it, and the
    other side shared its CPU half the time (containers read 14% to 22%
    slower in a run with this path forced)."""
    import os

    from isobench.core.gate import Gate
    from isobench.core.proc import tree
    from isobench.envs import native as native_mod
    from isobench.envs.native import NativeEnvironment

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")

    def no_cgroups(*args, **kwargs):
        raise OSError("no cgroups here")

    monkeypatch.setattr(native_mod.samplecgroup, "SampleCgroup", no_cgroups)
    env = NativeEnvironment(name="native", run_id="unit-nocg")
    argv = ["sh", "-c", "sleep 2"]
    env.gate = Gate(parties=1).side(0, argv)
    env.gate.fill = False
    env.place((cpus[0],))
    worker = threading.Thread(target=env.exec, args=(argv, 30))
    worker.start()
    deadline = time.monotonic() + 10
    while not env._live and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)  # released, the work started
    env.move((cpus[1],))
    moved = tree(next(iter(env._live)))
    assert len(moved) >= 3 and all(os.sched_getaffinity(p) == {cpus[1]} for p in moved)
    worker.join(30)
    assert not env._live and env.gate.standing.startswith("the harness's cgroups (no cgroups here)")


def test_a_cgroup_half_made_is_not_left_behind(tmp_path):
    """The v1 layout in a scratch directory: the third controller's
    directory cannot be made, and the two made before it are removed."""
    from isobench.host import samplecgroup

    for c in samplecgroup.V1_CONTROLLERS:
        (tmp_path / c / samplecgroup.PARENT).mkdir(parents=True)
        (tmp_path / c / "cgroup.procs").write_text("")
    for where in (tmp_path / "cpuset", tmp_path / "cpuset" / samplecgroup.PARENT):
        (where / "cpuset.cpus").write_text("0-1\n")
        (where / "cpuset.mems").write_text("0\n")
    (tmp_path / "cpuset" / samplecgroup.PARENT / "run-native.1").write_text("in the way")
    with pytest.raises(FileExistsError):  # at the third directory, cpuset's
        samplecgroup.SampleCgroup("run-native.1", "0", root=str(tmp_path))
    assert not (tmp_path / "cpu" / samplecgroup.PARENT / "run-native.1").exists()
    assert not (tmp_path / "cpuacct" / samplecgroup.PARENT / "run-native.1").exists()


def _gated_in(argv: list[str], cwd, scratch: str = "") -> subprocess.Popen:
    proc = subprocess.Popen(
        gate_argv(argv, True, cwd=str(cwd), scratch=scratch),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.stderr is not None and proc.stderr.readline() == b"isobench-gate ready\n"
    return proc


def test_a_filler_cut_short_leaves_nothing_where_the_samples_run(tmp_path):
    """Issue 55, 4: a filler cut at the stop byte left its lock directory in
    the work's directory, and every later sample failed ("File exists").
    Each filler runs in a fresh directory of its own beside the work's, with
    the work's files in it, removed once it has ended."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "input.txt").write_text("data\n")
    (work / "sub").mkdir()
    (work / "sub" / "more.txt").write_text("more\n")
    # the work reads its inputs, appends to its own output, and holds a lock directory a while
    held = tmp_path / "held"  # a line each time a run holds its lockdir
    script = f"cat input.txt sub/more.txt >> out.txt && mkdir lockdir && echo x >> {held} && sleep 0.2 && rmdir lockdir"
    proc = _gated_in(["sh", "-c", script], work)
    _release(proc)
    _wait_lines(held, 3)  # the work, then fillers, the second cut mid-sleep with its lockdir made
    _release(proc, b"s")
    out, err = proc.communicate(timeout=30)
    end = ended(out.decode(), err.decode())
    assert end is not None and end.code == 0
    count, _ = filled(err.decode()) or (0, 0.0)
    assert count >= 2, err.decode()  # the fillers found the work's files and did not fail
    assert sorted(p.name for p in work.iterdir()) == ["input.txt", "out.txt", "sub"]  # no lockdir
    assert (work / "out.txt").read_text() == "data\nmore\n"  # the sample's output is its own alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held", "work"]  # every filler's directory removed


def test_a_filler_of_a_work_without_a_directory_gets_an_empty_one_in_scratch(tmp_path):
    scratch, runs = tmp_path / "scratch", tmp_path / "runs"
    scratch.mkdir()
    proc = subprocess.Popen(
        gate_argv(["sh", "-c", f"echo x >> {runs}; touch here; sleep 0.1"], True, scratch=str(scratch)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert proc.stderr is not None and proc.stderr.readline() == b"isobench-gate ready\n"
    _release(proc)
    _wait_lines(runs, 3)  # the work and two fillers of 0.1 s
    _release(proc, b"s")
    _, err = proc.communicate(timeout=30)
    assert (filled(err.decode()) or (0, 0.0))[0] >= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "runs", "scratch"]  # the work's own touch only
    assert list(scratch.iterdir()) == []


def test_the_first_filler_that_fails_is_the_last(tmp_path):
    """A filler that fails is not started again (88 instant failures beside
    the other side's sample, before): here every copy after the work fails."""
    flag = tmp_path / "ran"
    proc = _gated_in(["sh", "-c", f"test ! -e {flag} || exit 1; touch {flag}"], tmp_path)
    _release(proc)
    time.sleep(0.5)
    _release(proc, b"s")
    out, err = proc.communicate(timeout=30)
    assert (ended(out.decode(), err.decode()) or pytest.fail(err.decode())).code == 0
    assert (filled(err.decode()) or (0, 0.0))[0] == 1


# what gVisor's runsc (Debian's 2022 build) answers to pidfd_open
_ENOSYS = (
    "import os\n"
    "def _enosys(pid, flags=0):\n    raise OSError(38, 'Function not implemented')\n"
    "os.pidfd_open = _enosys\n"
)


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no pidfd (gVisor)"])
def test_the_stop_byte_ends_a_running_filler_with_or_without_pidfd(tmp_path, pidfd):
    """Under gVisor the gate died at its first filler (pidfd_open: ENOSYS),
    and the filler, a whole sample of the work, ran on orphaned beside the
    next duets: run own-programs-e497 read sysbench -5.5% in docker-nat and
    -6.7% in docker-host, both sides of the duet after each gVisor one off
    their CPUs about 1 s in 5 (0.05 s without gVisor in the study). Without
    pidfd the gate watches its filler by polling."""
    flag, pids = tmp_path / "ran", tmp_path / "fillers"
    # the work ends at once; every filler after it would run 30 s
    work = f"if [ -e {flag} ]; then echo $$ >> {pids}; exec sleep 30; fi; touch {flag}"
    argv = gate_argv(["sh", "-c", work], True, scratch=str(tmp_path))
    if not pidfd:
        argv[argv.index(PROGRAM)] = _ENOSYS + PROGRAM
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"}
    )
    filler = 0
    try:
        assert proc.stderr is not None and proc.stderr.readline() == b"isobench-gate ready\n"
        _release(proc)
        _wait_lines(pids, 1)
        filler = int(pids.read_text().split()[0])
        _release(proc, b"s")
        out, err = proc.communicate(timeout=20)
        assert (ended(out.decode(), err.decode()) or pytest.fail(err.decode())).code == 0
        assert filled(err.decode()) is not None, err.decode()  # the gate lived to say it
        assert not os.path.exists(f"/proc/{filler}")  # ended and reaped, not left running
    finally:
        proc.kill()
        if filler and os.path.exists(f"/proc/{filler}"):
            os.kill(filler, signal.SIGKILL)


def test_a_filler_home_is_beside_the_works_directory_or_in_scratch():
    from isobench.core.gate import filler_home, fresh_argv

    assert filler_home("/var/lib/isobench/scratch/r-native/command-ab/", "/dev/shm/t") == (
        "/var/lib/isobench/scratch/r-native",
        "/var/lib/isobench/scratch/r-native/command-ab",
    )
    assert filler_home(None, "/dev/shm/t") == ("/dev/shm/t", "") and filler_home("/", "/x") == ("/x", "")
    assert fresh_argv(["timeout", "1", "w"], None, "/s")[3:] == ["sh", "/s", "", "timeout", "1", "w"]


def test_a_filler_without_a_gate_runs_in_a_fresh_directory_too(tmp_path):
    from isobench.core.gate import fresh_argv

    work = tmp_path / "work"
    work.mkdir()
    (work / "input.txt").write_text("data\n")
    argv = fresh_argv(["sh", "-c", "cat input.txt && mkdir lockdir && exit 3"], str(work), "")
    r = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and r.stdout == "data\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and [p.name for p in work.iterdir()] == ["input.txt"]


def test_the_longest_still_stretch_of_a_sample():
    from isobench.run.duet import longest_still

    assert longest_still((10.0, 12.0), []) == 2.0
    assert longest_still((10.0, 12.0), [9.0, 10.5, 10.6, 11.0]) == pytest.approx(1.0)  # the last move to the end
    assert longest_still((10.0, 12.0), [10.9, 13.0]) == pytest.approx(1.1)  # before the first move
