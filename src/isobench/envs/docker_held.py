"""A container's command held at a duet's gate (core/gate.py): exec'd with
its stdin attached (the gate's pipe), released with the other side, read
from the attached stream until its work ends, and left filling until the
other side is done. The `docker exec` round trip (about 0.1 s here) is
spent before the gate, outside the timed window."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import docker
import docker.errors
from requests.exceptions import ReadTimeout

from isobench.core.dockerclient import exec_frames
from isobench.core.gate import FILLER_GRACE_S, READY, SideGate, ended, gate_argv
from isobench.core.proc import KILL_GRACE_S, ExecResult, bounded


def held_exec(container_id: str, argv: list[str], timeout: float, cwd: str | None, gate: SideGate) -> ExecResult:
    """argv through the gate in the container, bounded in time inside it;
    returns when the work ends (its fillers run on until gate.stop_filling())."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout + KILL_GRACE_S + 30
    client = docker.from_env(timeout=timeout + KILL_GRACE_S + 30)
    sock, kept = None, False
    try:
        exec_id = client.api.exec_create(
            container_id,
            bounded(gate_argv(argv, gate.fill, cwd=cwd, scratch=gate.scratch), timeout),
            workdir=cwd,
            stdin=True,
        )["Id"]
        sock = client.api.exec_start(exec_id, socket=True)._sock
        frames = exec_frames(sock, deadline)
        out, err = _read_until(frames, b"", b"", lambda o, e: e.endswith(READY))
        if err.endswith(READY):
            gate.arrive(lambda: sock.sendall(b"g"))
        gate.abandon()
        out, err = _read_until(frames, out, err, lambda o, e: _ended(o, e) is not None)
        end = _ended(out, err)
        wall = time.perf_counter() - start
        if end is None:  # the stream ended before the work did: its exit code says why
            code = client.api.exec_inspect(exec_id)["ExitCode"]
            return ExecResult(argv, -1 if code is None else code, _text(out), _text(err), wall)
        kept = gate.fill
        gate.work_ended(end.inside, (lambda: _stop(sock, client)) if kept else None)
        return ExecResult(argv, end.code, end.stdout, end.stderr, wall)
    except (ReadTimeout, TimeoutError):
        return ExecResult(argv, -9, "", "engine did not answer in time", time.perf_counter() - start, timed_out=True)
    except docker.errors.DockerException as exc:
        return ExecResult(argv, -1, "", f"engine error: {exc}", time.perf_counter() - start)
    finally:
        gate.abandon()  # never reached the gate: the other side must not wait for it
        if not kept:
            _close(sock, client)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _ended(out: bytes, err: bytes):
    return ended(_text(out), _text(err))


def _read_until(frames, out: bytes, err: bytes, enough) -> tuple[bytes, bytes]:
    while not enough(out, err):
        frame = next(frames, None)
        if frame is None:
            break
        stream, data = frame
        if stream == 2:
            err += data
        else:
            out += data
    return out, err


def _stop(sock: Any, client: Any) -> str:
    """The stop byte, then the rest of its stderr (the fillers' count)."""
    err = b""
    try:
        sock.sendall(b"s")
        deadline = time.monotonic() + FILLER_GRACE_S + 30
        err = _read_until(exec_frames(sock, deadline), b"", b"", lambda o, e: False)[1]
    except (OSError, TimeoutError):
        pass
    finally:
        _close(sock, client)
    return _text(err)


def _close(sock: Any, client: Any) -> None:
    with contextlib.suppress(OSError):
        if sock is not None:
            sock.close()
    client.close()
