"""Running argv lists on the host, bounded in time: the one way every
module starts a process and reads its result."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Sequence
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
    # why the kernel ended it, when it says: "killed: out of memory (limit 512 MB)"
    killed: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying why a command failed, for errors and the store."""
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f} s: {' '.join(self.argv)}"
        if self.killed:
            return f"{self.killed}: {' '.join(self.argv)}"
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
        return f"exit {self.returncode}: {' '.join(self.argv)}: {tail[0]}"


def as_text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", errors="replace")


def run_argv(
    argv: list[str],
    timeout: float,
    cwd: str | None = None,
    env: dict | None = None,
    live: set[int] | None = None,
    own_session: bool = False,
) -> ExecResult:
    """subprocess.run with the timeout and output capture every step needs;
    never raises for a failing or missing command. `live` holds the
    process's pid while it runs (a duet moves it between CPUs: move_tree).
    ``own_session``: the command leads a session of its own (a measured
    sample: with the kernel's autogroup it is then scheduled as a group of its
    own, as a container's cgroup is, not inside the harness's group with
    whatever else the shell started), and a timeout or an interrupt kills
    its whole process group, not just the process started."""
    start = time.perf_counter()
    proc = _spawn(argv, start, cwd=cwd, env=env, start_new_session=own_session)
    if isinstance(proc, ExecResult):
        return proc
    if live is not None:
        live.add(proc.pid)
    try:
        with proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                # as subprocess.run does: the output so far, without waiting
                # for grandchildren that still hold the pipes
                _kill(proc, own_session)
                proc.wait()
                return ExecResult(
                    argv, -9, as_text(exc.stdout), as_text(exc.stderr), time.perf_counter() - start, timed_out=True
                )
            except BaseException:  # Ctrl-C: a session of its own does not get the terminal's SIGINT
                if own_session:
                    _kill(proc, own_session)
                raise
    finally:
        if live is not None:
            live.discard(proc.pid)
    return ExecResult(argv, proc.returncode, as_text(out), as_text(err), time.perf_counter() - start)


def _spawn(argv: list[str], start: float, **how) -> subprocess.Popen | ExecResult:
    """argv started with no stdin and its output piped (Popen's other
    arguments in ``how``); a command that cannot start is its exit 127."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **how)
    except (FileNotFoundError, PermissionError) as exc:
        return ExecResult(argv, 127, "", str(exc), time.perf_counter() - start)


def run_sample(
    argv: list[str], timeout: float, cwd: str | None = None, live: set[int] | None = None, join: Sequence[str] = ()
) -> ExecResult:
    """A sample's command, as run_argv's own session runs it, entering the
    cgroups whose cgroup.procs files are `join` before it runs (a pid of 0
    written from between fork and exec: nothing it forks is left outside).
    Its output is read until it exits, and PIPES_GRACE_S more for what is
    in flight: a child it left in the background holding its stdout or
    stderr no longer keeps the sample until its timeout (a container's exec
    ends when its process does too). Whatever is left of its session is
    killed with it; the caller's cgroup removal ends what left the session."""
    start = time.perf_counter()
    fds = []
    for path in join:
        with contextlib.suppress(OSError):  # not joined: its session is still ended
            fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
    try:
        proc = _spawn(argv, start, cwd=cwd, start_new_session=True, preexec_fn=_joiner(fds) if fds else None)
    finally:
        for fd in fds:
            os.close(fd)
    if isinstance(proc, ExecResult):
        return proc
    if live is not None:
        live.add(proc.pid)
    try:
        out, err = _read_while_it_runs(proc, start + timeout)
        timed_out = proc.poll() is None
    finally:
        _kill(proc, True)  # the session's leftovers (the process itself has ended, unless it timed out)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        if live is not None:
            live.discard(proc.pid)
    code = -9 if timed_out else proc.returncode
    return ExecResult(argv, code, as_text(out), as_text(err), time.perf_counter() - start, timed_out=timed_out)


def _joiner(fds: list[int]):
    """preexec_fn: the child writes 0 (itself) to each cgroup.procs file
    opened for it, before it runs anything; nothing is allocated there."""

    def join() -> None:
        for fd in fds:
            os.write(fd, b"0")

    return join


PIPES_GRACE_S = 1.0  # a sample's output still in flight once its process has exited


def _read_while_it_runs(proc: subprocess.Popen, deadline: float) -> tuple[bytes, bytes]:
    """stdout and stderr until both end, or the process has exited and
    PIPES_GRACE_S passed, or the deadline (perf_counter)."""
    assert proc.stdout is not None and proc.stderr is not None
    got = {proc.stdout.fileno(): b"", proc.stderr.fileno(): b""}
    reading, pidfd, exited = set(got), os.pidfd_open(proc.pid), None
    try:
        while reading:
            limit = deadline if exited is None else min(deadline, exited + PIPES_GRACE_S)
            left = limit - time.perf_counter()
            ready = select.select([*reading, *([pidfd] if exited is None else [])], [], [], max(left, 0))[0]
            if not ready:
                break
            for fd in ready:
                chunk = b"" if fd == pidfd else os.read(fd, 65536)
                if fd == pidfd:
                    exited = time.perf_counter()
                elif chunk:
                    got[fd] += chunk
                else:
                    reading.discard(fd)
        if exited is None:  # both streams closed early: the process itself is still waited for
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(deadline - time.perf_counter(), 0))
    finally:
        os.close(pidfd)
    return got[proc.stdout.fileno()], got[proc.stderr.fileno()]


def kill_group(proc: subprocess.Popen) -> None:
    """The process and its whole group (a command that leads its own session)."""
    _kill(proc, True)


def _kill(proc: subprocess.Popen, group: bool) -> None:
    if group:
        with contextlib.suppress(OSError):  # the group may be gone already
            os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()


def tree(root: int) -> list[int]:
    """root and every process descended from it, from /proc's parent links
    (this kernel has no /proc/PID/task/TID/children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:  # ended since the listing
            continue
        # the name in parentheses may hold spaces and parentheses: parse after the last ')'
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def move_tree(root: int, cpus: set[int]) -> None:
    """Every thread of root and its descendants onto these CPUs; processes
    that end meanwhile are skipped."""
    move_pids(tree(root), cpus)


def move_pids(pids: list[int], cpus: set[int]) -> None:
    """Every thread of these processes onto these CPUs (what they fork
    afterwards inherits it); processes that ended are skipped."""
    for pid in pids:
        with contextlib.suppress(OSError):  # ended since the walk
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(tid), cpus)


def bound_s(timeout: float) -> int:
    """The whole seconds coreutils' timeout is given for ``timeout``."""
    return max(1, int(timeout))


def bounded(argv: list[str], timeout: float) -> list[str]:
    """argv wrapped in coreutils' timeout, for commands run where our own
    clock cannot kill them (inside a container or a guest)."""
    return ["timeout", "-k", str(KILL_GRACE_S), f"{bound_s(timeout)}", *argv]


def bounded_timed_out(code: int | None, wall_s: float, timeout: float) -> bool:
    """Whether ``bounded``'s timeout ended the command: its exit 124 (TERM)
    or 137 (KILL after the grace) once its whole-second bound had passed
    (the bound, not the fraction asked: 4.9 s is given as 4)."""
    return code in (124, 137) and wall_s >= bound_s(timeout)
