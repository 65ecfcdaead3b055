"""Servers a killed run left running on the host (``isobench clean``, and the
runner's teardown): native servers keep their pidfiles in
``<TMP_ROOT>/<run>-<env>/servers/``, and a pid is killed only if it still
runs the server of a registered server workload (a recycled pid is left
alone). Each ServerWorkload says which processes are its own
(``owns_process``, from its ``server_exe``): nothing here names a server."""

from __future__ import annotations

import os
import signal

from isobench.workloads.registry import WORKLOADS
from isobench.workloads.server import SERVERS_DIR, ServerWorkload


def server_workloads() -> list[type[ServerWorkload]]:
    return [cls for cls in WORKLOADS.values() if issubclass(cls, ServerWorkload)]


def is_server_process(exe: str, argv: list[str]) -> bool:
    """One of the workloads' servers: exe is /proc/PID/exe's target, argv its command line."""
    return any(cls.owns_process(exe, argv) for cls in server_workloads())


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def kill_leftover_servers(tmp_root: str, run_id: str | None = None) -> list[str]:
    """SIGKILL the servers native runs started (of one run, or all) that still run."""
    killed = []
    if not os.path.isdir(tmp_root):
        return killed
    for entry in sorted(os.listdir(tmp_root)):
        if run_id is not None and not entry.startswith(run_id):
            continue
        d = os.path.join(tmp_root, entry, SERVERS_DIR)
        if not os.path.isdir(d):
            continue
        for f in os.listdir(d):
            if not f.endswith(".pid"):
                continue
            try:
                with open(os.path.join(d, f)) as fh:
                    pid = int(fh.read().split()[0])
                exe = os.readlink(f"/proc/{pid}/exe")
            except (OSError, ValueError, IndexError):
                continue
            if is_server_process(exe, _cmdline(pid)):
                try:
                    # start-stop-daemon --background gave the server a session of
                    # its own: its whole process group goes, so the workers a
                    # master forked (nginx, php-fpm) do not outlive it
                    if os.getsid(pid) != os.getsid(0):
                        os.killpg(os.getpgid(pid), signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                    killed.append(f"server process {pid} ({exe})")
                except OSError:
                    pass
    return killed
