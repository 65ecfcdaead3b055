"""The duet schedule: slots, sides, overlap, the pairing of a baseline that
ran beside several environments, and the refusals before anything starts."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from isobench.checks.preflight import duet_problems
from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.envs.pinning import duet_sides
from isobench.host.hostinfo import HostInfo
from isobench.results.analysis import pairs
from isobench.results.model import MetricKey, RunData
from isobench.run import duet as duet_mod
from isobench.run.duet import filler_s, home_share, overlap, run_duet
from isobench.run.schedule import Duet, Sequential
from isobench.study import parse_study
from isobench.workloads.base import Measurement
from isobench.workloads.compress import Compression
from isobench.workloads.fio import Fio

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)


@dataclass
class Env:
    name: str
    placed: list = field(default_factory=list)
    paths: Paths = field(default_factory=lambda: Paths("/tmp/d", "/tmp/t"))
    execs: list = field(default_factory=list)
    moved_at: list = field(default_factory=list)

    def place(self, cpus):
        self.placed.append(cpus)

    def move(self, cpus):  # as Environment.move: place, unless the kind has faster
        self.moved_at.append(time.time())
        self.place(cpus)

    def counters(self):
        return {}

    def gate_problem(self):  # a kind without a gate: started at the release
        return "a test environment has no gate"

    def exec(self, argv, timeout, cwd=None):
        self.execs.append(argv)
        time.sleep(0.01)
        return ExecResult(argv, 0, "", "", 0.01)


def compression(**params):
    return Compression(Compression.Params(**params), HOST)


def test_sides_are_disjoint_halves():
    assert duet_sides([0, 1]) == ((0,), (1,))
    assert duet_sides([3, 0, 2, 1]) == ((0, 1), (2, 3))
    assert duet_sides([0, 1, 2]) == ((0,), (1,))  # the odd one is the harness's
    assert duet_sides([0]) == ((), ())


def test_each_environment_sits_on_each_side_equally_often():
    envs = [Env("native"), Env("docker-nat"), Env("docker-host")]
    sched = Duet("native", "interleaved", cpus=[0, 1])
    seen, firsts = Counter(), Counter()
    for r in range(4):
        slots = sched.slots(compression(), envs, r)
        assert [s.envs[0].name for s in slots] == ["native", "native"]  # the baseline beside each
        assert sorted(s.envs[1].name for s in slots) == ["docker-host", "docker-nat"]
        for s in slots:
            assert set(s.cpus[0]).isdisjoint(s.cpus[1])
            seen[(s.envs[1].name, s.cpus[1])] += 1
        firsts[slots[0].envs[1].name] += 1
    assert seen == {
        ("docker-nat", (1,)): 2,
        ("docker-nat", (0,)): 2,
        ("docker-host", (1,)): 2,
        ("docker-host", (0,)): 2,
    }
    assert firsts == {"docker-nat": 2, "docker-host": 2}  # Williams order over the duets


def test_a_workload_that_cannot_duet_runs_alone_in_a_duet_study():
    envs = [Env("native"), Env("docker")]
    sched = Duet("native", "interleaved", cpus=[0, 1])
    fio = Fio(Fio.Params(), HOST)
    assert all(not s.together for s in sched.slots(fio, envs, 0))
    assert sched.used_for(fio) == "sequential" and sched.used_for(compression()) == "duet"
    assert sched.samples_per_round(compression(), 3) == 4 and sched.samples_per_round(fio, 3) == 3
    off = compression(duet=False)  # a study can turn a table's duet off
    assert not any(s.together for s in sched.slots(off, envs, 0))
    assert [len(s.envs) for s in Sequential("native", "interleaved").slots(compression(), envs, 0)] == [1, 1]


def test_a_filler_has_time_to_clean_up_after_its_sigterm():
    """mpirun needs about 1 s after SIGTERM to stop its ranks and remove its
    session directory: with `timeout -k 1` it was SIGKILLed first, and each
    native hpcc duet left about 8 MB in /tmp (2.9 GB by 2026-11-28)."""
    argv = duet_mod.filler_argv(compression(size_mb=1), "default", Env("native"), 0.46)  # type: ignore[arg-type]
    assert argv[:4] == ["timeout", "-k", "5", "0.46"] and argv[4:] == compression(size_mb=1).argv(
        "default", Env("native").paths
    )


def test_overlap_is_the_share_covered_by_the_other_side():
    assert overlap((0.0, 10.0), [(0.0, 10.0)]) == 1.0
    assert overlap((0.0, 10.0), [(0.0, 8.0)]) == pytest.approx(0.8)
    assert overlap((0.0, 10.0), [(0.0, 8.0), (8.5, 12.0)]) == pytest.approx(0.95)
    assert overlap((0.0, 10.0), [(11.0, 12.0)]) == 0.0
    assert filler_s(4.6) == pytest.approx(0.46) and filler_s(0.1) == 0.3 and filler_s(500) == 5.0


def test_a_duet_runs_both_at_once_and_fills_until_the_other_ends(monkeypatch):
    # the short side ends while the long one runs, and the long one goes on
    # 0.3 s past the short side's first filler: in that order on a loaded host too
    running, most = [0], [0]
    lock = threading.Lock()
    long_in, filled = threading.Event(), threading.Event()

    class Filling(Env):
        def exec(self, argv, timeout, cwd=None):
            filled.set()
            return super().exec(argv, timeout, cwd)

    def fake_run(self, case, env):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if env.name == "docker":
            long_in.set()
            assert filled.wait(10)
            time.sleep(0.3)
        else:
            assert long_in.wait(10)
            time.sleep(0.02)
        with lock:
            running[0] -= 1
        return Measurement({"throughput_mbs": 1.0, "real_s": 1.0, "user_s": 1.0, "sys_s": 0.0})

    monkeypatch.setattr(Compression, "run", fake_run)
    base, other = Filling("native"), Env("docker")
    takens = run_duet(compression(), "default", (base, other), ((0,), (1,)))
    assert most[0] == 2  # both samples ran at the same time
    assert base.placed[0] == (0,) and other.placed[0] == (1,)  # then swapped every ROTATE_S
    rec_base, rec_other = takens[0].extra["duet"], takens[1].extra["duet"]
    assert rec_base["partner"] == "docker" and rec_other["partner"] == "native"
    assert rec_base["cpus"] == "0" and rec_other["cpus"] == "1"
    assert rec_base["skew_s"] < 0.2
    assert rec_base["fillers"] >= 1 and rec_other["fillers"] == 0  # only the short side filled
    # each chunk the work cut by timeout, in a fresh directory of its own (core/gate.fresh_argv)
    assert all(argv[:2] == ["sh", "-c"] and argv[6] == "timeout" for argv in base.execs) and other.execs == []
    assert rec_other["overlap"] > 0.7  # the long sample was never alone for long


def key(metric="throughput_mbs"):
    return MetricKey("compression", "default", metric, "MB/s", True)


def test_a_baseline_beside_two_environments_pairs_within_each_duet():
    k = key()
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "a", "b"], {}, [k])
    # round 0: native 10 beside a, 20 beside b; round 1: 11 beside a, 21 beside b
    run.values[(k, "native")] = [10.0, 20.0, 11.0, 21.0]
    run.rounds[(k, "native")] = [0, 0, 1, 1]
    run.partners[(k, "native")] = {0: "a", 1: "b", 2: "a", 3: "b"}
    run.values[(k, "a")], run.rounds[(k, "a")] = [9.0, 10.0], [0, 1]
    run.values[(k, "b")], run.rounds[(k, "b")] = [19.0, 20.0], [0, 1]
    run.partners[(k, "a")] = {0: "native", 1: "native"}
    run.partners[(k, "b")] = {0: "native", 1: "native"}
    assert pairs(run, k, "a", "native") == [(9.0, 10.0), (10.0, 11.0)]
    assert pairs(run, k, "b", "native") == [(19.0, 20.0), (20.0, 21.0)]


def test_sequential_runs_still_pair_by_round():
    k = key()
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "a"], {}, [k])
    run.values[(k, "native")], run.rounds[(k, "native")] = [10.0, 11.0], [0, 1]
    run.values[(k, "a")], run.rounds[(k, "a")] = [9.0, 12.0], [1, 0]
    assert pairs(run, k, "a", "native") == [(9.0, 11.0), (12.0, 10.0)]


STUDY = """
[study]
name = "d"
schedule = "duet"
[environments.native]
[environments.docker-host]
{extra_env}
[workloads.compression]
size_mb = 1
{extra_wl}
"""


def problems(extra_env="", extra_wl="", cpus=(0, 1)):
    study = parse_study(STUDY.format(extra_env=extra_env, extra_wl=extra_wl), "d.toml")
    return duet_problems(study, HOST, list(cpus))


def test_a_duet_that_fits_is_not_refused():
    assert problems() == []


@pytest.mark.parametrize(
    "extra_env,extra_wl,cpus,expect",
    [
        ("", "", (0,), "d.toml: study.schedule: a duet needs at least two usable host CPUs"),
        ('[environments.p]\nkind = "docker"\ncpuset = "1"', "", (0, 1), "environments.p.cpuset: a duet places"),
        ('[environments.p]\nkind = "native"\npin = true', "", (0, 1), "environments.p.pin: a duet places"),
        ('[environments.g]\nkind = "docker"\ninstances = 2', "", (0, 1), "environments.g.instances: a duet runs one"),
        ('[environments.v]\nkind = "vm"\nvcpus = 2', "", (0, 1), "environments.v.vcpus: 2 vCPUs do not fit"),
        ("", "threads = 2", (0, 1), "workloads.compression: one sample keeps 2 CPUs busy, a duet side has 1"),
    ],
)
def test_a_duet_that_cannot_run_is_refused_with_the_field(extra_env, extra_wl, cpus, expect):
    found = problems(extra_env, extra_wl, cpus)
    assert any(expect in p for p in found), found


def test_asking_a_duet_of_a_workload_that_cannot_is_refused():
    study = parse_study(STUDY.format(extra_env="", extra_wl="") + "[workloads.netbw]\nduet = true\n", "d.toml")
    assert any("workloads.netbw.duet: netbw cannot run as a duet" in p for p in duet_problems(study, HOST, [0, 1]))
    fio = parse_study(STUDY.format(extra_env="", extra_wl="") + "[workloads.fio]\nduet = true\n", "d.toml")
    assert duet_problems(fio, HOST, [0, 1]) == []  # fio can, when asked: its sides share the disk
    assert Fio(Fio.Params(duet=True), HOST).duets and not Fio(Fio.Params(), HOST).duets


def test_an_unknown_schedule_is_one_line():
    from isobench.study import StudyError

    with pytest.raises(StudyError, match=r"d.toml: study.schedule: .*'sequential' or 'duet'"):
        parse_study(STUDY.format(extra_env="", extra_wl="").replace('"duet"', '"tandem"'), "d.toml")


def test_the_answer_says_the_schedule():
    from isobench.results.schedule import schedule_summary

    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "a"], {}, [key()])
    assert schedule_summary(run) == ""
    run.host_facts = {
        "schedule": {
            "name": "duet",
            "sides": [[0], [1]],
            "cells": {"compression/default": "duet", "fio/randread": "sequential"},
        }
    }
    text = schedule_summary(run)
    assert "at the same time as native's" in text and "on host CPUs 0 | 1" in text
    assert "(compression/default)" in text and "one sample at a time: fio/randread" in text
    assert "sides swapped every round" in text  # stored before sides rotated within a sample
    run.host_facts["schedule"]["rotate_s"] = 0.5
    assert "sides swapped every 0.5 s while both ran" in schedule_summary(run)
    # a side whose moves stretched its period (run/duet.py swap_period): said, with its median
    run.duet_periods = {"native": [0.5, 0.5], "vm": [2.0, 3.0, 1.0], "docker-nat": [0.6]}
    assert "every 0.5 s while both ran (slower where a side's moves took longer: vm every 2 s, median)" in (
        schedule_summary(run)
    )
    run.host_facts["schedule"]["rotate_s"] = "\x1b[2J"
    assert "every round" in schedule_summary(run)
    assert Duet("native", "interleaved", cpus=[0, 1]).facts()["rotate_s"] == duet_mod.ROTATE_S
    assert Duet("native", "interleaved", cpus=[0, 1]).facts()["move_share"] == duet_mod.MOVE_SHARE
    run.host_facts = {"schedule": "nonsense"}
    assert schedule_summary(run) == ""


def test_a_cpu_set_that_is_faster_cancels_instead_of_spreading():
    from isobench.analysis.stats import compare_cell, log_crossover

    # A/A: nothing differs, but whoever sits on CPU 0 is 10% slower; sides alternate
    pairs_, sides = [], []
    for r in range(10):
        on0 = r % 2 == 0
        wobble = 1 + 0.01 * ((r * 7) % 3 - 1)
        pairs_.append(((0.9 if on0 else 1.0) * wobble, 1.0 if on0 else 0.9))
        sides.append("0" if on0 else "1")
    plain = compare_cell([p for p, _ in pairs_], [q for _, q in pairs_], True, pairs=pairs_)
    crossed = compare_cell([p for p, _ in pairs_], [q for _, q in pairs_], True, pairs=pairs_, sides=sides)
    assert plain.se > 5 * crossed.se  # the set's advantage no longer counts as noise
    assert abs(crossed.pct) < 1.0 and crossed.df == 8
    assert log_crossover([0.1, 0.2, 0.3], ["0", "0", "1"]) is None  # a side of one: the plain paired test
    from isobench.analysis.anomalies import side_asymmetry

    # the same run says the sets were not alike, once, as a warning
    warned = side_asymmetry(pairs_, sides)
    assert warned.flagged and "CPUs 0 is \u221218" in warned.text and warned.p < 0.01
    alike = [(1.0 * (1 + 0.01 * ((r * 7) % 3 - 1)), 1.0) for r in range(10)]
    assert not side_asymmetry(alike, sides).flagged
    assert not side_asymmetry(pairs_[:4], sides[:4]).flagged  # two a side: too few to say


def test_pairs_carry_the_side_of_each_duet():
    from isobench.results.analysis import pairs_and_sides

    k = key()
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "a"], {}, [k])
    run.values[(k, "native")], run.rounds[(k, "native")] = [10.0, 11.0], [0, 1]
    run.partners[(k, "native")] = {0: "a", 1: "a"}
    run.values[(k, "a")], run.rounds[(k, "a")] = [9.0, 12.0], [0, 1]
    run.partners[(k, "a")] = {0: "native", 1: "native"}
    run.sides[(k, "a")] = {0: "1", 1: "0"}
    assert pairs_and_sides(run, k, "a", "native") == ([(9.0, 10.0), (12.0, 11.0)], ["1", "0"])
    del run.sides[(k, "a")]
    assert pairs_and_sides(run, k, "a", "native")[1] is None


def test_a_filler_that_fails_ends_the_filling_not_the_duet(monkeypatch):
    # the long side goes on 0.3 s past the failed filler, whatever a loaded
    # host does to either thread before it (CI once stalled a 0.02 s sample)
    failed = threading.Event()

    def fake_run(self, case, env):
        if env.name == "docker":
            assert failed.wait(10)
            time.sleep(0.3)
        return Measurement({"throughput_mbs": 1.0, "real_s": 1.0, "user_s": 1.0, "sys_s": 0.0})

    class Broken(Env):
        def exec(self, argv, timeout, cwd=None):
            failed.set()
            raise RuntimeError("engine gone")

    monkeypatch.setattr(Compression, "run", fake_run)
    takens = run_duet(compression(), "default", (Broken("native"), Env("docker")), ((0,), (1,)))
    assert all(t.measurement is not None for t in takens)
    # the long side ran alone once the short one could not fill: its overlap says so
    assert takens[0].extra["duet"]["fillers"] == 0
    assert takens[1].extra["duet"]["overlap"] <= 1 - 0.3 / takens[1].wall_s + 0.01


def test_home_share_counts_the_time_before_each_flip():
    assert home_share((0.0, 10.0), []) == 1.0
    assert home_share((0.0, 10.0), [5.0]) == pytest.approx(0.5)
    assert home_share((0.0, 10.0), [2.0, 4.0, 6.0, 8.0]) == pytest.approx(0.6)  # home 0-2, 4-6, 8-10
    assert home_share((0.0, 10.0), [-1.0, 3.0]) == pytest.approx(0.7)  # flipped before it started: away 0-3
    assert home_share((0.0, 10.0), [3.0, 12.0]) == pytest.approx(0.3)  # a flip after the end changes nothing
    assert home_share((5.0, 5.0), [1.0]) == 1.0


def test_sides_swap_cpus_while_their_samples_run(monkeypatch):
    # both samples 0.6 s, a swap every 0.05 s: each side spends about half on each set
    monkeypatch.setattr(duet_mod, "ROTATE_S", 0.05)

    def fake_run(self, case, env):
        time.sleep(0.6)
        return Measurement({"throughput_mbs": 1.0, "real_s": 1.0, "user_s": 1.0, "sys_s": 0.0})

    monkeypatch.setattr(Compression, "run", fake_run)
    base, other = Env("native"), Env("docker")
    takens = run_duet(compression(), "default", (base, other), ((0,), (1,)))
    rec_base, rec_other = takens[0].extra["duet"], takens[1].extra["duet"]
    # each counts the swaps while its own work ran: the two windows differ by
    # where they start and end (a thread at nice 19 on a busy host starts late),
    # one swap per ROTATE_S of that difference, and one for the edge
    ends = [rec["started"] + t.wall_s for rec, t in ((rec_base, takens[0]), (rec_other, takens[1]))]
    apart = abs(rec_base["started"] - rec_other["started"]) + abs(ends[0] - ends[1])
    assert rec_base["swaps"] >= 6 and abs(rec_base["swaps"] - rec_other["swaps"]) <= 1 + apart / 0.05
    # every move puts a side on the set the other just left: they alternate, in step
    assert base.placed[:4] == [(0,), (1,), (0,), (1,)] and other.placed[:4] == [(1,), (0,), (1,), (0,)]
    # about half on each set; a rotation thread stalled by a busy host (CI runs
    # this beside the integration lane) leaves one long stretch on one set,
    # which widens the span by that stretch's share of the window
    for env, rec, t in ((base, rec_base, takens[0]), (other, rec_other, takens[1])):
        edges = [rec["started"], *env.moved_at, rec["started"] + t.wall_s]
        stall = max(b - a for a, b in zip(edges, edges[1:]))
        assert abs(rec["home_share"] - 0.5) < 0.2 + stall / t.wall_s, (rec, stall)
    assert "rotate_error" not in rec_base


def test_a_side_that_cannot_move_keeps_its_sample_and_says_so(monkeypatch):
    monkeypatch.setattr(duet_mod, "ROTATE_S", 0.05)

    def fake_run(self, case, env):
        time.sleep(0.3)
        return Measurement({"throughput_mbs": 1.0, "real_s": 1.0, "user_s": 1.0, "sys_s": 0.0})

    class Stuck(Env):
        def place(self, cpus):
            if self.placed:
                raise OSError("the engine said no")
            self.placed.append(cpus)

    monkeypatch.setattr(Compression, "run", fake_run)
    takens = run_duet(compression(), "default", (Stuck("native"), Env("docker")), ((0,), (1,)))
    assert all(t.status == "ok" for t in takens)
    assert "the engine said no" in takens[0].extra["duet"]["rotate_error"]


def test_native_place_moves_the_commands_already_running():
    import os

    from isobench.envs.native import NativeEnvironment

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    env = NativeEnvironment(name="native", run_id="unit-place")
    env.place((cpus[0],))
    worker = threading.Thread(target=env.exec, args=(["sh", "-c", "sleep 3 & wait"], 10))
    worker.start()
    deadline = time.monotonic() + 5
    while not env._live and time.monotonic() < deadline:
        time.sleep(0.01)
    (root,) = env._live
    time.sleep(0.2)  # the shell has started its child
    env.place((cpus[1],))
    from isobench.core.proc import tree

    moved = tree(root)
    assert len(moved) >= 2  # the shell and its sleep
    assert all(os.sched_getaffinity(pid) == {cpus[1]} for pid in moved)
    for pid in moved[1:]:
        os.kill(pid, 15)
    worker.join(10)
    assert not env._live


def test_readback_keeps_each_duet_samples_swap_period():
    from isobench.store.readback import _duet_start

    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ["native", "vm"], {}, [key()])
    _duet_start(run, "vm", json.dumps({"duet": {"skew_s": 0.001, "gate": "held", "rotate_s": 0.3}}))
    _duet_start(run, "vm", json.dumps({"duet": {"skew_s": 0.001, "gate": "held", "rotate_s": True}}))
    _duet_start(run, "native", json.dumps({"duet": {"skew_s": -0.001, "gate": "held"}}))  # stored before
    assert run.duet_periods == {"vm": [0.3]}
    assert run.duet_starts == {"vm": [("held", 0.001)] * 2, "native": [("held", -0.001)]}
