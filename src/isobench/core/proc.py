"""Running argv lists on the host, bounded in time: the one way every
module starts a process and reads its result."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

KILL_GRACE_S = 5  # after TERM, coreutils' timeout sends KILL this much later


@dataclass(frozen=True)
class ExecResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying why a command failed, for errors and the store."""
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f} s: {' '.join(self.argv)}"
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
        return f"exit {self.returncode}: {' '.join(self.argv)}: {tail[0]}"


def as_text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def run_argv(argv: list[str], timeout: float, cwd: str | None = None, env: dict | None = None) -> ExecResult:
    """subprocess.run with the timeout and output capture every step needs;
    never raises for a failing or missing command."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
    except subprocess.TimeoutExpired as exc:
        return ExecResult(
            argv, -9, as_text(exc.stdout), as_text(exc.stderr), time.perf_counter() - start, timed_out=True
        )
    except (FileNotFoundError, PermissionError) as exc:
        return ExecResult(argv, 127, "", str(exc), time.perf_counter() - start)
    return ExecResult(argv, proc.returncode, as_text(proc.stdout), as_text(proc.stderr), time.perf_counter() - start)


def bounded(argv: list[str], timeout: float) -> list[str]:
    """argv wrapped in coreutils' timeout, for commands run where our own
    clock cannot kill them (inside a container or a guest)."""
    return ["timeout", "-k", str(KILL_GRACE_S), f"{max(1, int(timeout))}", *argv]
