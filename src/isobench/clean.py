"""Removes what isobench created: its QEMU guests, servers, client-host
namespaces, links and iptables rules, labelled containers and volumes, and
scratch directories. Never touches anything without the isobench label or
name, or outside isobench's own directories."""

from __future__ import annotations

import os
import shutil
import signal

from isobench.dockerclient import engine_or_none
from isobench.workspace import DATA_ROOT, LABEL, TMP_ROOT


def clean(run_id: str | None = None) -> list[str]:
    """Remove isobench's leftovers (of one run, or all); returns what was removed."""
    removed: list[str] = []
    removed += kill_leftover_vms(run_id)
    removed += kill_leftover_stressors(run_id)
    from isobench.clienthost import clean_network, kill_leftover_servers
    removed += kill_leftover_servers(TMP_ROOT, run_id)
    removed += clean_network(run_id)
    client = engine_or_none()
    if client is not None:
        label = f"{LABEL}.run={run_id}" if run_id else f"{LABEL}=1"
        for container in client.containers.list(all=True, filters={"label": label}):
            container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
        for volume in client.volumes.list(filters={"label": label}):
            volume.remove(force=True)
            removed.append(f"volume {volume.name}")
    from isobench.envs.vm import SOCKET_ROOT
    for root in (DATA_ROOT, TMP_ROOT, SOCKET_ROOT):
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            if run_id is None or entry.startswith(run_id):
                shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
                removed.append(f"directory {os.path.join(root, entry)}")
    return removed


def kill_leftover_stressors(run_id: str | None = None) -> list[str]:
    """stress-ng of a [noise] step (its process group) that outlived its run."""
    from isobench.noise import leftover_stressors
    removed = []
    for pid in leftover_stressors(run_id):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
            removed.append(f"stress-ng pid {pid}")
        except (ProcessLookupError, PermissionError):
            pass
    return removed


def _isobench_qemu(cmdline: list[str], run_id: str | None) -> bool:
    """Is this argv an isobench guest's QEMU (of run_id, if given)? Only a
    qemu-system binary whose -name is isobench-<run id>-... qualifies."""
    if not cmdline or not os.path.basename(cmdline[0]).startswith("qemu-system"):
        return False
    try:
        name = cmdline[cmdline.index("-name") + 1].split(",")[0]
    except (ValueError, IndexError):
        return False
    if name.startswith("guest="):
        name = name[len("guest="):]
    prefix = f"isobench-{run_id}-" if run_id else "isobench-"
    return name.startswith(prefix)


def kill_leftover_vms(run_id: str | None = None) -> list[str]:
    """SIGKILL isobench's QEMU processes (never another QEMU)."""
    import time

    killed = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        if _isobench_qemu(argv, run_id):
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(pid)
            except OSError:
                continue
    deadline = time.monotonic() + 10
    while killed and time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in killed):
        time.sleep(0.05)
    return [f"qemu process {p}" for p in killed]
