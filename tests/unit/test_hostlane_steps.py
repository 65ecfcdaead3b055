"""The host lane's step runner (tests/hosts/lane.py): a step killed at its
deadline lost its output with it (the study step of 2026-11-29, 1200 s, "killed
at the deadline" and nothing else); now the lane reads the copy guest.sh keeps
and what still runs, and says the step's last line."""

import importlib.util
import io
import sys
from pathlib import Path

from isobench.core.proc import ExecResult

LANE = Path(__file__).resolve().parents[1] / "hosts" / "lane.py"


def lane():
    spec = importlib.util.spec_from_file_location("hostlane", LANE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["hostlane"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


class Agent:
    def __init__(self, *answers: ExecResult):
        self.answers = list(answers)
        self.calls: list[list[str]] = []

    def exec(self, argv, timeout):
        self.calls.append(argv)
        return self.answers.pop(0)


def test_a_step_killed_at_its_deadline_says_its_last_line_and_what_still_ran():
    look = (
        "==> /run/hostlane/steps/study.out <==\n[3/8] grow in docker-gvisor\n\n"
        "==> /run/hostlane/steps/study.err <==\n\n-----\n  PID ELAPSED COMMAND\n  812 19:58 runsc-sandbox\n"
    )
    ga = Agent(
        ExecResult([], -9, "", "killed at the deadline", 1200.0, timed_out=True), ExecResult([], 0, look, "", 0.1)
    )
    log = io.StringIO()
    step = lane().guest_step(ga, "study", 1200, log)
    assert not step.ok
    assert step.note == "timed out after 1200 s, last said: [3/8] grow in docker-gvisor"
    assert "runsc-sandbox" in log.getvalue() and "study.out" in ga.calls[1][-1]


def test_guest_sh_keeps_each_steps_output():
    text = (LANE.parent / "guest.sh").read_text()
    assert '"step_$1" > >(tee "/run/hostlane/steps/$1.out")' in text
