"""The duet call of a user's command (workloads/duetcall.py): what its sample
alone used, read from real GNU time output, decides whether it runs as a
duet; the call is said in words and kept with the run."""

from pathlib import Path

import pytest

from isobench.study import StudyError, parse_study
from isobench.workloads.base import NO_HOST
from isobench.workloads.command import Command, CommandParams
from isobench.workloads.command_rules import block_io_bytes, split_time
from isobench.workloads.duetcall import DuetCall, decide, from_record

DATA = Path(__file__).parents[1] / "data" / "command"


def usage_of(name: str, mode: str = "auto") -> tuple[float, float, float]:
    """(CPU s, wall s, block I/O bytes) the command workload reads from a real output."""
    w = Command(CommandParams(command=("x",), duet=mode if mode == "auto" else mode == "true"), NO_HOST)
    m = w.parse_runs([((DATA / f"{name}.stdout").read_text(), (DATA / f"{name}.stderr").read_text())])
    used = w.usage(m.values, m.extra)
    assert used is not None
    return used


def test_a_one_thread_program_runs_as_a_duet():
    # 7z b -mmt1: 9.94 s of CPU in 9.95 s, 16 blocks written
    cpu, wall, io = usage_of("7z-b")
    call = decide("auto", 1, cpu, wall, io, "native")
    assert call.duet and call.cpus == pytest.approx(0.999, abs=0.001)
    assert call.text() == "ran as a duet: 1.00 CPU per wall second, 0.0 MB/s of disk; measured on 1 CPU per side"


def test_disk_io_keeps_a_program_one_at_a_time():
    # fio's randread that missed the page cache: 154216 + 16416 blocks in 1.52 s
    cpu, wall, io = usage_of("fio")
    assert io == (154216 + 16416) * 512
    call = decide("auto", 1, cpu, wall, io)
    assert not call.duet
    assert call.text() == "one at a time: 57.5 MB/s of disk I/O: the two sides would share the device"
    # own-programs' tar through xz, its page cache cold: 1.2 MB/s is its own work, not a device's
    assert decide("auto", 1, cpu_s=2.9, wall_s=3.0, io_bytes=3.6e6).duet


def test_more_cpus_than_a_side_keep_it_one_at_a_time_unless_the_study_forces_it():
    call = decide("auto", 1, cpu_s=3.8, wall_s=2.0, io_bytes=0.0)
    assert not call.duet and call.text() == "one at a time: 1.90 CPUs, more than a side's 1"
    forced = decide("true", 1, cpu_s=3.8, wall_s=2.0, io_bytes=0.0)
    assert forced.duet and forced.saturated and "its side was saturated" in forced.text()
    # within 10% of a side: a one-thread program and its helper processes
    assert decide("auto", 1, cpu_s=2.1, wall_s=2.0, io_bytes=0.0).duet
    assert decide("auto", 2, cpu_s=3.8, wall_s=2.0, io_bytes=0.0).text().endswith("measured on 2 CPUs per side")


def test_false_and_a_failed_sample():
    assert decide("false", 1, 1.0, 1.0, 0.0).text() == "one at a time: the study says duet = false"
    failed = decide("auto", 1, None, None, None)
    assert not failed.duet and "its warm-up failed" in failed.text()
    assert decide("true", 1, None, None, None).duet


def test_the_call_is_kept_and_read_back():
    call = decide("auto", 1, 1.0, 1.0, 1000.0, "native")
    assert from_record(call.record()) == call
    assert from_record({"duet": "yes", "mode": "auto", "side_cpus": 1}) is None
    assert from_record("duet") is None


def test_block_io_from_gnu_time():
    _, block = split_time((DATA / "sysbench-cpu.stderr").read_text())
    assert block_io_bytes(block) == 8 * 512
    assert block_io_bytes("\tFile system inputs: 3\n") is None


def test_the_table_decides_only_under_a_duet_study_and_is_undecided_until_its_sample():
    w = Command(CommandParams(command=("x",)), NO_HOST)
    assert w.duet_mode() == "auto" and not w.duets
    w.settle_duet(DuetCall(True, "auto", 1, 1.0, 0.0))
    assert w.duets
    assert Command(CommandParams(command=("x",), duet=False), NO_HOST).duet_mode() == "false"


STUDY = """
[study]
name = "s"
repetitions = 3
schedule = "duet"
[environments.native]
[environments.docker-nat]
[workloads.mine]
command = ["true"]
duet = {value}
"""


@pytest.mark.parametrize("value", ['"sometimes"', "1", '"yes"'])
def test_a_bad_duet_value_is_one_line_naming_the_field(value):
    with pytest.raises(StudyError) as err:
        parse_study(STUDY.format(value=value), "s.toml")
    text = str(err.value)
    assert "\n" not in text and "workloads.mine.duet" in text and 'true, false or "auto"' in text


def test_duet_true_in_a_sequential_study_is_refused_naming_the_table():
    from isobench.checks.preflight import duet_problems
    from isobench.host.hostinfo import HostInfo

    host = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)
    study = parse_study(STUDY.format(value="true").replace('schedule = "duet"', ""), "s.toml")
    (line,) = duet_problems(study, host, [0, 1])
    assert line.startswith("s.toml: workloads.mine.duet: true asks for a duet") and 'schedule = "duet"' in line
    assert duet_problems(parse_study(STUDY.format(value='"auto"'), "s.toml"), host, [0, 1]) == []


def test_an_undecided_table_runs_alone_and_its_call_is_said():
    from isobench.envs.base import Paths
    from isobench.results.model import RunData
    from isobench.results.schedule import schedule_summary
    from isobench.run.schedule import Duet

    class Env:
        def __init__(self, name):
            self.name, self.paths = name, Paths("/d", "/t")

    envs = [Env("native"), Env("docker-nat"), Env("docker-host")]
    schedule = Duet("native", "interleaved", cpus=[0, 1])
    w = Command(CommandParams(command=("x",)), NO_HOST)
    assert schedule.decides(w) and schedule.used_for(w) == "auto"
    assert [s.together for s in schedule.slots(w, envs, -1)] == [False] * 3  # the warm-up, one at a time
    w.settle_duet(decide("auto", schedule.side_cpus(), 1.0, 1.0, 0.0, "native"))
    assert not schedule.decides(w) and [s.together for s in schedule.slots(w, envs, 0)] == [True, True]
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", [e.name for e in envs], {}, [])
    run.host_facts = {
        "schedule": {
            "name": "duet",
            "sides": [[0], [1]],
            "rotate_s": 0.1,
            "cells": {"x/default": "duet", "fio/default": "sequential"},
            "calls": {"x/default": w.duet_call.record(), "fio/default": decide("false", 1, None, None, None).record()},
        }
    }
    text = schedule_summary(run)
    assert "x/default: ran as a duet: 1.00 CPU per wall second, 0.0 MB/s of disk; measured on 1 CPU per side." in text
    assert "fio/default: one at a time: the study says duet = false." in text
    assert "cannot duet" not in text
