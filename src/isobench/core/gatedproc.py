"""A command on the host held at a duet's gate (core/gate.py): started,
released with the other side, read until its work ends, and left filling
until the other side is done."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Callable

from isobench.core.gate import FILLER_GRACE_S, READY, SYSTEM_PATH, SideGate, ended, filled, gate_argv
from isobench.core.proc import ExecResult, as_text, kill_group


def run_gated(
    argv: list[str],
    timeout: float,
    cwd: str | None,
    gate: SideGate,
    procs: list[str],
    pin: str | None = None,
    done: Callable[[], None] = lambda: None,
    live: set[int] | None = None,
) -> ExecResult:
    """argv through the gate, in the cgroups whose cgroup.procs files are
    `procs` (or pinned by taskset to `pin`, its pid in `live` while it runs:
    a duet's moves then walk its tree), its own session. Returns when the
    work ends; its fillers run on until gate.stop_filling(), and `done` (the
    cgroups' removal) runs once the process has ended."""
    full = gate_argv(argv, gate.fill, procs, cwd, gate.scratch)
    full = ["taskset", "-c", pin, *full] if pin else full
    start = time.perf_counter()
    deadline = start + timeout
    try:
        proc = subprocess.Popen(
            full,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": SYSTEM_PATH, "HOME": os.environ.get("HOME") or "/root"},
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError) as exc:
        gate.abandon()
        done()
        return ExecResult(argv, 127, "", str(exc), time.perf_counter() - start)
    if live is not None:
        live.add(proc.pid)
        done = _also(done, lambda: live.discard(proc.pid))
    try:
        out, err = _read_until(proc, deadline, b"", b"", lambda o, e: e.endswith(READY))
        if err.endswith(READY):
            gate.arrive(lambda: _send(proc, b"g"))
        gate.abandon()
        out, err = _read_until(proc, deadline, out, err, lambda o, e: ended(as_text(o), as_text(e)) is not None)
    except BaseException:
        _end(proc, done)
        raise
    end = ended(as_text(out), as_text(err))
    if end is None:  # it ended (or ran out of time) before the work did
        timed_out = proc.poll() is None
        _end(proc, done)
        code = -9 if timed_out else proc.returncode
        return ExecResult(argv, code, as_text(out), as_text(err), time.perf_counter() - start, timed_out=timed_out)
    wall = time.perf_counter() - start
    if gate.fill and proc.poll() is None:
        gate.work_ended(end.inside, lambda: _stop(proc, done))
    else:  # the gate exits once the work has: whatever the work left is ended with it
        gate.work_ended(end.inside, None)
        _end(proc, done)
    return ExecResult(argv, end.code, end.stdout, end.stderr, wall)


def _also(first: Callable[[], None], then: Callable[[], None]) -> Callable[[], None]:
    def both() -> None:
        first()
        then()

    return both


def _read_until(
    proc: subprocess.Popen, deadline: float, out: bytes, err: bytes, enough: Callable[[bytes, bytes], bool]
) -> tuple[bytes, bytes]:
    """Both streams read until `enough` says so, both end, or the deadline."""
    assert proc.stdout is not None and proc.stderr is not None
    fds = {proc.stdout.fileno(): "out", proc.stderr.fileno(): "err"}
    while fds and not enough(out, err):
        left = deadline - time.perf_counter()
        ready = select.select(list(fds), [], [], left)[0] if left > 0 else []
        if not ready:
            break
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                del fds[fd]
            elif fds[fd] == "out":
                out += chunk
            else:
                err += chunk
    return out, err


def _send(proc: subprocess.Popen, byte: bytes) -> None:
    assert proc.stdin is not None
    proc.stdin.write(byte)
    proc.stdin.flush()


def _stop(proc: subprocess.Popen, done: Callable[[], None]) -> str:
    """The stop byte, then its stderr until the fillers' count: not until
    both streams end, which a child the work left in the background holding
    them would put off until the timeout."""
    with contextlib.suppress(OSError):
        _send(proc, b"s")
    try:
        deadline = time.perf_counter() + FILLER_GRACE_S + 30
        _, err = _read_until(proc, deadline, b"", b"", lambda o, e: filled(as_text(e)) is not None)
    finally:
        _end(proc, done)
    return as_text(err)


def _end(proc: subprocess.Popen, done: Callable[[], None]) -> None:
    if proc.poll() is None:
        kill_group(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    done()
