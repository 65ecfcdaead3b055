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


GUEST = LANE.parent / "guest.sh"
# /proc/self/mountinfo lines of the lane's guest: its fstab's own /isobench/tmp
# and /isobench/data (isobench's VM disk), and a scratch tmpfs a run left
BOOT_MOUNTS = (
    "29 1 254:0 / / rw,noatime shared:1 - ext4 /dev/vda rw\n"
    "41 29 0:36 / /isobench/tmp rw,relatime shared:20 - tmpfs tmpfs rw,mode=1777\n"
    "42 29 254:16 / /isobench/data rw,noatime shared:21 - ext4 /dev/vdb rw\n"
)
LEFT = "97 29 0:51 / /var/lib/isobench/scratch/r1 rw,relatime shared:50 - tmpfs tmpfs rw\n"


def test_clean_counts_only_mounts_made_after_boot(tmp_path):
    """The clean step of 2026-11-29 said "left behind: mounts: /isobench/tmp"
    twice: the guest's own fstab mounts it at boot."""
    import subprocess

    boot, now = tmp_path / "boot", tmp_path / "now"
    boot.write_text(BOOT_MOUNTS)
    now.write_text(BOOT_MOUNTS + LEFT)
    script = f'source {GUEST} && isobench_mounts {boot} >{tmp_path}/list && left_mounts "$1" {tmp_path}/list'

    def left(mountinfo):
        r = subprocess.run(["bash", "-c", script, "-", str(mountinfo)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout.split()

    assert left(boot) == []
    assert left(now) == ["/var/lib/isobench/scratch/r1"]
