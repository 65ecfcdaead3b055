"""The runner's view of dying environments (isobench.checks.health) and the study
size check (preflight.study_size): pure logic, no engine needed. The
environments here are stand-ins that only answer health(); the real kinds'
answers are exercised in tests/integration/test_faults.py."""

from __future__ import annotations

import threading

import pytest

from isobench.checks import health
from isobench.checks.preflight import size_problems, study_size
from isobench.envs.base import Environment, Paths
from isobench.host.hostinfo import HostInfo
from isobench.study import parse_study


class Answering(Environment):
    """An environment whose health() answers what the test says, or hangs."""

    def __init__(self, name: str, answer: str | None = None, hang: threading.Event | None = None):
        super().__init__(name)
        self.answer, self.hang, self.asked = answer, hang, 0

    def health(self, timeout: float = 10) -> str | None:
        self.asked += 1
        if self.hang is not None:
            self.hang.wait()
        return self.answer

    def start(self): ...
    def exec(self, argv, timeout, cwd=None):
        raise NotImplementedError

    def write_file(self, path, content): ...
    def stop(self): ...

    @property
    def paths(self) -> Paths:
        return Paths("/d", "/t")


def test_a_dead_environment_is_said_once_and_skipped():
    notes: list[str] = []
    w = health.Watch("r-1", notes.append)
    dead = Answering("box", answer="box: the Docker Engine stopped answering (gone)")
    w.failed(dead, "startup/default", "DockerException: Connection aborted")
    assert w.skips(dead)
    assert len(notes) == 1 and "\n" not in notes[0]
    assert notes[0].startswith("box: the Docker Engine stopped answering")
    assert "isobench run --resume r-1" in notes[0]


def test_a_failing_workload_in_a_healthy_environment_is_said_once_per_workload():
    notes: list[str] = []
    w = health.Watch("r-1", notes.append)
    fine = Answering("native")
    for _ in range(3):
        w.failed(fine, "redis/default", "redis-benchmark: Connection refused")
    assert not w.skips(fine) and fine.asked == 3
    assert len(notes) == 1 and "redis/default in native failed: redis-benchmark: Connection refused" in notes[0]


def test_a_health_check_that_hangs_counts_as_not_answering():
    release = threading.Event()
    try:
        problem = health.ask_health(Answering("vm", hang=release), timeout=0.1)
    finally:
        release.set()
    assert problem is not None and problem.startswith("vm: stopped answering")


def test_complete_only_when_every_planned_cell_has_an_ok_sample():
    planned = {("a", "w", "c", 0), ("a", "w", "c", 1)}
    assert health.final_status(planned, planned | {("b", "w", "c", 0)}) == "complete"
    assert health.final_status(planned, {("a", "w", "c", 0)}) == "incomplete"


def test_leftovers_stay_pending_until_a_cleaner_removes_something(tmp_path, monkeypatch):
    monkeypatch.setattr(health, "PENDING_FILE", str(tmp_path / "pending.json"))
    health.remember_leftovers("r-1", ["box: engine down"])
    assert health.clean_pending(lambda run_id: []) == []  # engine still down
    assert "r-1" in health.pending_runs()
    assert health.clean_pending(lambda run_id: [f"container isobench-{run_id}-box"]) == ["container isobench-r-1-box"]
    assert health.pending_runs() == {}


HOST = HostInfo(cores=2, mem_bytes=24 * 2**30, disk_free_bytes=80 * 2**30)


def _study(envs: int, repetitions: int = 5, workload: str = 'workload = "startup"'):
    text = f'[study]\nname = "s"\nrepetitions = {repetitions}\n[environments.native]\n'
    text += "".join(f'[environments.d{i}]\nkind = "docker"\n' for i in range(envs))
    return parse_study(text + f"[workloads.w]\n{workload}\n", "s.toml")


def test_study_size_counts_samples_and_estimates_time():
    study = _study(2, repetitions=5, workload='workload = "fio"\nruntime_s = 10\nramp_s = 2')
    size = study_size(study, HOST)
    n_cases = size.cells
    # 5 repetitions of 3 environments one at a time: 6, a whole period of the rotation, and a warm-up
    assert size.environments == 3 and size.instances == 3 and size.rounds == 7
    assert size.samples == n_cases * 3 * 7
    assert size.estimated_s >= size.samples * 12  # fio's own runtime + ramp per sample
    assert size_problems(study, size, HOST) == []


@pytest.mark.parametrize("envs,reps,field", [(2000, 5, "environments"), (20, 1000, "study.repetitions")])
def test_absurd_studies_are_refused_in_one_line_naming_the_flag(envs, reps, field):
    study = _study(envs, reps)
    problems = size_problems(study, study_size(study, HOST), HOST)
    assert problems and all("\n" not in p for p in problems)
    assert problems[0].startswith(f"s.toml: {field}: ") and "--allow-large" in problems[0]
