"""The QEMU guest agent: the only way isobench talks to a guest. Runs argv
lists (guest-exec, polled until exit or deadline), writes files
(guest-file-*) and reads the guest's own boot times."""

from __future__ import annotations

import base64
import contextlib
import os
import time

from isobench.core.errors import EnvironmentError_
from isobench.core.proc import ExecResult
from isobench.envs.vm.qmp_sync import QmpCommandError, QmpTimeout, SyncQmp

WRITE_CHUNK = 4 * 1024 * 1024


class GuestAgent:
    """A connected guest-agent channel; `owner` (the environment's name)
    starts every error message."""

    def __init__(self, client: SyncQmp, owner: str) -> None:
        self.client = client
        self.owner = owner

    def answers(self, n: int) -> bool:
        """guest-sync with a fresh token: did the agent answer it? Requests
        sent before the guest listens wait in the channel and are answered
        late with ids nobody waits for any more; the library drops those."""
        token = int(time.time() * 1000) % (2**31) + n
        try:
            return self.client.execute("guest-sync", {"id": token}, timeout=0.5) == token
        except (QmpTimeout, QmpCommandError):
            return False

    def exec(self, argv: list[str], timeout: float, input_data: bytes | None = None) -> ExecResult:
        """guest-exec argv as is, polling guest-exec-status until it exits or
        the deadline passes (then the guest process is killed)."""
        start = time.perf_counter()
        args: dict = {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}
        if input_data is not None:
            args["input-data"] = base64.b64encode(input_data).decode()
        try:
            pid = self.client.execute("guest-exec", args, timeout=60)["pid"]
        except QmpCommandError as exc:
            return ExecResult(argv, 127, "", str(exc), time.perf_counter() - start)
        except QmpTimeout as exc:
            return ExecResult(argv, -9, "", f"guest agent: {exc}", time.perf_counter() - start, timed_out=True)
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                st = self.client.execute("guest-exec-status", {"pid": pid}, timeout=60)
            except (QmpTimeout, QmpCommandError) as exc:
                return ExecResult(argv, -9, "", f"guest agent: {exc}", time.perf_counter() - start, timed_out=True)
            if st.get("exited"):
                break
            if time.monotonic() > deadline:
                self.kill(pid)
                return ExecResult(argv, -9, "", "killed at the deadline", time.perf_counter() - start, timed_out=True)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        wall = time.perf_counter() - start
        stdout = base64.b64decode(st.get("out-data", "")).decode("utf-8", errors="replace")
        stderr = base64.b64decode(st.get("err-data", "")).decode("utf-8", errors="replace")
        if st.get("out-truncated") or st.get("err-truncated"):
            stderr += "\n[isobench: output truncated by the guest agent at 16 MiB]"
        code = st.get("exitcode")
        if code is None:
            code = 128 + int(st.get("signal", 0))
        return ExecResult(argv, int(code), stdout, stderr, wall)

    def kill(self, pid: int) -> None:
        with contextlib.suppress(QmpTimeout, QmpCommandError):
            self.client.execute("guest-exec", {"path": "kill", "arg": ["-KILL", str(pid)]}, timeout=10)

    def write(self, path: str, content: bytes) -> None:
        """The bytes to a file in the guest, its directory made first."""
        r = self.exec(["mkdir", "-p", os.path.dirname(path) or "/"], 60)
        if not r.ok:
            raise EnvironmentError_(f"{self.owner}: could not write {path}: {r.describe()}")
        try:
            handle = self.client.execute("guest-file-open", {"path": path, "mode": "w"}, timeout=60)
            try:
                view = memoryview(content)
                for off in range(0, len(view), WRITE_CHUNK):
                    chunk = bytes(view[off : off + WRITE_CHUNK])
                    got = self.client.execute(
                        "guest-file-write", {"handle": handle, "buf-b64": base64.b64encode(chunk).decode()}, timeout=120
                    )
                    if got.get("count") != len(chunk):
                        raise EnvironmentError_(f"{self.owner}: short write to {path}: {got}")
            finally:
                self.client.execute("guest-file-close", {"handle": handle}, timeout=60)
        except (QmpTimeout, QmpCommandError) as exc:
            raise EnvironmentError_(f"{self.owner}: could not write {path}: {exc}") from None

    def boot_times(self, guest_init: str) -> dict:
        """The guest's own view: its uptime when init started (the kernel's
        boot time) and when the agent started, and now."""
        out: dict = {}
        if guest_init == "isobench":
            r = self.exec(["cat", "/run/isobench-kernel-uptime", "/run/isobench-agent-uptime", "/proc/uptime"], 30)
            vals = r.stdout.split()
            if r.ok and len(vals) >= 3:
                out = {
                    "guest_kernel_s": float(vals[0]),
                    "guest_agent_start_s": float(vals[1]),
                    "guest_uptime_at_ready_s": float(vals[2]),
                }
        else:
            r = self.exec(["cat", "/proc/uptime"], 30)
            if r.ok and r.stdout.split():
                out["guest_uptime_at_ready_s"] = float(r.stdout.split()[0])
            r = self.exec(["systemd-analyze"], 30)
            if r.ok:
                out["systemd_analyze"] = r.stdout.strip().splitlines()[0][:200]
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
