"""A resumed run says what it did (issue 55, finding 14): a resumed
measure_for run's progress read "[1/-47] round 27/71", its preflight said
"at 8 rounds" for 71 fitted rounds, and the report never said the run was
interrupted and resumed. The runner is the real one on the fake kind
(envkinds/fake.py); the samples are a stand-in workload's, instant."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from isobench.run.progress import RichProgress
from isobench.store.db import Store
from isobench.study import parse_study
from isobench.workloads.base import Measurement
from isobench.workloads.compress import Compression
from unit.test_env_registry import fake  # noqa: F401 - the fake kind's fixture

FITTED = 30  # what measure_for fits to instant warm-ups: max_repetitions
STUDY = f"""
[study]
name = "resumed"
repetitions = 2
max_repetitions = {FITTED}
measure_for = "1m"
warmup = 1
baseline = "fake"
[environments.fake]
[environments.b]
kind = "fake"
[workloads.z]
workload = "compression"
size_mb = 1
"""


class Recorder:
    """The runner's progress, kept: the total it planned and each step."""

    def __init__(self) -> None:
        self.totals: list[int] = []
        self.labels: list[str] = []
        self.advanced = 0

    def start(self, total: int) -> None:
        self.totals.append(total)

    def extend(self, more: int) -> None:
        self.totals.append(self.totals[-1] + more)

    def step(self, label: str) -> None:
        self.labels.append(label)

    def advance(self) -> None:
        self.advanced += 1

    def note(self, message: str) -> None: ...


def _samples(monkeypatch, stop_at: int | None):
    """Compression stands in for a workload: instant samples, Ctrl-C at sample ``stop_at``."""
    count = iter(range(1, 10_000))
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)

    def run(self, case, env):
        n = next(count)
        if stop_at is not None and n == stop_at:
            raise KeyboardInterrupt
        return Measurement(dict.fromkeys(("throughput_mbs", "real_s", "user_s", "sys_s"), 10.0 + 0.1 * (n % 3)))

    monkeypatch.setattr(Compression, "run", run)


def test_a_resumed_measure_for_run_counts_what_it_measures_and_says_it_resumed(
    fake,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    from isobench.cli.running import _resumed
    from isobench.report.section import TERMINAL, ReportContext
    from isobench.report.sections import sections_for
    from isobench.run.runner import run_study

    store = Store(str(tmp_path / "r.sqlite"))
    _samples(monkeypatch, stop_at=41)  # 20 rounds in: far past the study's least (2)
    with pytest.raises(KeyboardInterrupt):
        run_study(parse_study(STUDY, str(tmp_path / "s.toml")), store, run_id="r1")
    assert store.run_facts("r1")["measure_for"] == {"all": FITTED}
    _samples(monkeypatch, stop_at=None)
    study, *_ = _resumed(store, "r1", None, None, False)
    assert study.meta.repetitions == FITTED  # the plan says the fitted rounds, not the study's least
    progress = Recorder()
    run_study(study, store, progress, resume="r1")
    # the plan is what the resumed attempt measured: never negative, never short
    assert progress.totals == [progress.advanced] and progress.advanced == 2 * (1 + FITTED) - 40
    assert all(re.match(rf"round \d+/{FITTED} ", label) for label in progress.labels)
    run = store.load_run("r1")
    assert run.status == "complete"
    at = store.run_facts("r1")["resumed"][0]["at"]
    said = f"Interrupted and resumed once: interrupted after 40 samples, resumed {at}, "
    said += f"which took {progress.advanced} more."
    assert said in _answer(run, ReportContext, sections_for, TERMINAL)


def _answer(run, ReportContext, sections_for, TERMINAL) -> str:
    from isobench.report.blocks import Para

    ctx = ReportContext(run)
    return " ".join(
        b.text for section, blocks in sections_for(ctx, TERMINAL) if section.lead for b in blocks if isinstance(b, Para)
    )


def test_the_progress_counter_never_goes_negative_or_past_its_total():
    console = Console(record=True, width=200)
    progress = RichProgress(console, bar=False)
    progress.start(-47)
    progress.step("round 27/71 z/default in fake")
    progress.advance()
    progress.start(2)  # a plan that falls short: a duet measured again
    for _ in range(3):
        progress.step("round 1/2 z/default in fake with b (duet)")
        progress.advance()
        progress.advance()
    counters = re.findall(r"^\[(\d+)/(-?\d+)\]", console.export_text(), re.M)
    assert counters and all(0 < int(done) <= int(total) for done, total in counters), counters
