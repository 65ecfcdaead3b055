"""Planted work (isobench calibrate's default plant): the arithmetic, what
each workload plants (compression: a longer corpus, throughput over the base
size; a command: more whole runs; the rest: a one-line refusal), the study's
``plants`` refused in one line, and the planted copy running only where it
was planted (the plan, a duet's side)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import pytest

from isobench.core.plants import CannotPlant, extra_share, plant_problem, planted_amount, rate_slowdown, slowdown_of
from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.run.duet import run_duet
from isobench.run.plan import plan, planted_of
from isobench.study import StudyError, parse_study
from isobench.workloads.command import Command
from isobench.workloads.compress import MB, Compression
from isobench.workloads.fio import Fio

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)
TIME_LINE = "isobench-time real=2.00 user=1.90 sys=0.05\n"


def test_a_planted_slowdown_is_an_extra_share_of_the_work():
    assert extra_share(5) == pytest.approx(5 / 95) and extra_share(50) == 1.0
    assert planted_amount(8 * MB, 5) == 8_421_053
    assert slowdown_of(8 * MB, 8_421_053) == pytest.approx(5.0, abs=1e-5)
    assert planted_amount(19, 5) == 20 and slowdown_of(19, 20) == pytest.approx(5.0)
    assert planted_amount(10, 50) == 20  # half the rate: twice the work
    assert planted_amount(1, 5) == 1  # never less than the base


def test_a_measured_overhead_is_read_as_the_slowdown_of_the_rate():
    assert rate_slowdown(5.0, True) == 5.0  # a throughput 5% lower
    assert rate_slowdown(100.0, False) == pytest.approx(50.0)  # a time twice as long
    assert rate_slowdown(5 / 95 * 100, False) == pytest.approx(5.0)
    assert math.isnan(rate_slowdown(math.nan, False))


@pytest.mark.parametrize("pct", [0, -1, 50.01, 90, math.nan, math.inf])
def test_a_plant_of_0_or_above_50_is_no_plant(pct):
    assert "(0, 50]" in plant_problem(pct)


@pytest.mark.parametrize("pct", [0.1, 5, 50])
def test_plants_up_to_50_are_plants(pct):
    assert plant_problem(pct) == ""


def compression(**params) -> Compression:
    return Compression(Compression.Params(**{"size_mb": 8, "threads": 1, **params}), HOST)


def test_compression_plants_a_longer_corpus_and_counts_the_base_size():
    base, planted = compression(), compression().planted(5)
    assert planted.plant_pct == pytest.approx(5.0, abs=1e-5) and base.plant_pct == 0
    paths = Paths("/d", "/t")
    assert base.argv("default", paths)[-2] == "/t/compression/corpus-8MB.txt"
    assert planted.argv("default", paths)[-2] == "/t/compression/corpus-8421053B.txt"
    assert planted.footprint()[0].bytes == 8_421_053
    m_base = base.parse("default", ExecResult([], 0, "", TIME_LINE, 2.0))
    m_planted = planted.parse("default", ExecResult([], 0, "", TIME_LINE, 2.0))
    # the same time over the same base size: the plant is in the longer corpus
    assert m_planted.values["throughput_mbs"] == m_base.values["throughput_mbs"] == 4.0
    assert m_planted.extra["input_bytes"] == 8_421_053
    assert planted.units("default", m_planted) == ["MB", 8.0]


def command(**params) -> Command:
    return Command(Command.Params(**{"command": ["true"], **params}), HOST)


def test_a_command_plants_whole_runs():
    planted = command(repeat=19).planted(5)
    assert planted.params.repeat == 20 and planted.plant_pct == pytest.approx(5.0)
    near = command(repeat=20).planted(5)  # 21 runs: 4.8%, within a tenth of 5%
    assert near.params.repeat == 21 and near.plant_pct == pytest.approx(100 / 21)
    assert command(repeat=1).planted(50).params.repeat == 2


@pytest.mark.parametrize(
    "params, needle",
    [
        (
            {"repeat": 1},
            "command: repeat = 1 cannot carry a planted 5% in whole runs (1 runs would plant 0.0%); give repeat = 18",
        ),
        (
            {
                "repeat": 40,
                "metrics": {"rate": {"regex": "rate (?P<value>[0-9.]+)", "primary": True, "higher_is_better": True}},
            },
            "command: its primary metric is read from the output",
        ),
    ],
)
def test_a_command_that_cannot_carry_the_plant_says_why_in_one_line(params, needle):
    with pytest.raises(CannotPlant) as err:
        command(**params).planted(5)
    assert str(err.value).startswith(needle) and "\n" not in str(err.value)


def test_a_workload_without_an_amount_of_work_cannot_plant():
    with pytest.raises(CannotPlant, match=r"^fio cannot plant work: it has no amount of work"):
        Fio(Fio.Params(), HOST).planted(5)


STUDY = """
[study]
name = "p"
baseline = "docker-host"
{plants}
[environments.docker-host]
[environments.docker-host-slow]
preset = "docker-host"

[workloads.compression]
size_mb = 8
threads = 1
{more}
"""


@pytest.mark.parametrize(
    "plants, more, needle",
    [
        ("plants = { docker-host-slow = 60 }", "", "study.plants: docker-host-slow: 60 is outside (0, 50]"),
        ("plants = { docker-host-slow = 0 }", "", "study.plants: docker-host-slow: 0 is outside (0, 50]"),
        ("plants = { docker-host = 5 }", "", "study.plants.docker-host: the baseline is what plants are measured"),
        ("plants = { nowhere = 5 }", "", "study.plants.nowhere: not one of the environments (docker-host, "),
        ("plants = { docker-host-slow = 5 }", "[workloads.fio]", "study.plants.docker-host-slow: workloads.fio: fio "),
    ],
)
def test_a_studys_bad_plant_is_one_line_naming_the_field(plants, more, needle):
    with pytest.raises(StudyError) as err:
        parse_study(STUDY.format(plants=plants, more=more), "s.toml")
    assert needle in str(err.value) and str(err.value).startswith("s.toml: ") and "\n" not in str(err.value)


def test_the_plan_runs_the_planted_copy_only_where_it_was_planted():
    study = parse_study(STUDY.format(plants="plants = { docker-host-slow = 5 }", more=""), "s.toml")
    (cell,) = plan(study, HOST)
    assert cell.workload_in("docker-host") is cell.workload
    planted = cell.workload_in("docker-host-slow")
    assert isinstance(planted, Compression) and planted.corpus_bytes == 8_421_053
    assert planted_of([cell]) == {("compression", "docker-host-slow"): planted}


@dataclass
class Env:
    name: str
    paths: Paths = field(default_factory=lambda: Paths("/d", "/t"))
    execs: list = field(default_factory=list)

    def place(self, cpus):
        pass

    def move(self, cpus):
        pass

    def counters(self):
        return {}

    def gate_problem(self):  # a kind without a gate: started at the release
        return "a test environment has no gate"

    def exec(self, argv, timeout, cwd=None):
        self.execs.append(argv)
        time.sleep(0.05)
        return ExecResult(argv, 0, "", TIME_LINE, 0.05)


def test_a_duet_runs_each_sides_own_workload():
    base, slow = Env("docker-host"), Env("docker-host-slow")
    takens = run_duet((compression(), compression().planted(5)), "default", (base, slow), ((0,), (1,)))
    assert all(t.measurement is not None for t in takens)
    assert base.execs[0][-2].endswith("corpus-8MB.txt") and slow.execs[0][-2].endswith("corpus-8421053B.txt")
    # fillers too run the side's own work
    assert all(argv[-2].endswith("corpus-8421053B.txt") for argv in slow.execs)
