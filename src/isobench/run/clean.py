"""Removes what isobench created: each environment kind's leftovers (QEMU
guests, labelled containers and volumes: the kinds' cleaners), servers,
client-host namespaces, links and iptables rules, and scratch directories
(isobench's and the kinds'). Never touches anything without the isobench
label or name, or outside isobench's own directories."""

from __future__ import annotations

import os
import shutil
import signal

from isobench.core.workspace import DATA_ROOT, TMP_ROOT
from isobench.envs.kinds import kinds


def clean(run_id: str | None = None) -> list[str]:
    """Remove isobench's leftovers (of one run, or all); returns what was removed."""
    removed: list[str] = []
    # each kind's own first (guests hold taps the network sweep removes)
    for kind in kinds().values():
        removed += kind.clean(run_id)
    removed += kill_leftover_stressors(run_id)
    from isobench.clienthost import clean_network
    from isobench.workloads.leftovers import kill_leftover_servers, kill_servers_on_bench_addresses

    removed += kill_leftover_servers(TMP_ROOT, run_id)
    if run_id is None:  # a socket does not say which run started its server
        removed += kill_servers_on_bench_addresses()
    removed += clean_network(run_id)
    roots = [DATA_ROOT, TMP_ROOT, *(root for kind in kinds().values() for root in kind.scratch_roots)]
    for root in roots:
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            if run_id is None or entry.startswith(run_id):
                shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
                removed.append(f"directory {os.path.join(root, entry)}")
    return removed


def kill_leftover_stressors(run_id: str | None = None) -> list[str]:
    """stress-ng of a [noise] step (its process group) that outlived its run."""
    from isobench.host.noise import leftover_stressors

    removed = []
    for pid in leftover_stressors(run_id):
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
            removed.append(f"stress-ng pid {pid}")
        except (ProcessLookupError, PermissionError):
            pass
    return removed
