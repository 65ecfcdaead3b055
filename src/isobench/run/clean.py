"""Removes what isobench created: each environment kind's leftovers (QEMU
guests, labelled containers and volumes: the kinds' cleaners), servers,
client-host namespaces, links and iptables rules, and scratch directories
(isobench's and the kinds'). Never touches anything without the isobench
label or name, or outside isobench's own directories, nor anything a live
run owns (core/owner.py: a `Keeper` says so item by item and keeps a line
for each)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from functools import partial

from isobench.core.lock import LOCK_PATH
from isobench.core.owner import OWNERS_DIR, Keeper
from isobench.core.workspace import DATA_ROOT, TMP_ROOT, of_run
from isobench.envs.kinds import kinds

HOST_WIDE = {LOCK_PATH, OWNERS_DIR}  # under a kind's scratch root (/run/isobench), but no run's


def clean(run_id: str | None = None, keeper: Keeper | None = None) -> list[str]:
    """Remove isobench's leftovers (of one run, or all) but a live run's;
    returns what was removed (`keeper.kept`: what was kept)."""
    keeper = keeper or Keeper()
    removed: list[str] = []
    # each kind's own first (guests hold taps the network sweep removes)
    for kind in kinds().values():
        removed += kind.clean(run_id, keeper)
    removed += kill_leftover_stressors(run_id, keeper)
    from isobench.clienthost import clean_network
    from isobench.workloads.leftovers import kill_leftover_servers, kill_servers_on_bench_addresses

    removed += kill_leftover_servers(TMP_ROOT, run_id, keeper)
    if run_id is None:  # a socket does not say which run started its server
        removed += kill_servers_on_bench_addresses(keeper)
    removed += clean_network(run_id, keeper)
    removed += remove_scratch(run_id, keeper)
    if run_id is None:
        for path in keeper.stale_owner_files():  # of runs that were killed: all they left is gone
            with contextlib.suppress(OSError):
                os.remove(path)
                removed.append(f"owner file {path}")
    return removed


def remove_scratch(run_id: str | None, keeper: Keeper) -> list[str]:
    """The `<run id>-…` directories under isobench's and the kinds' roots."""
    removed = []
    roots = [DATA_ROOT, TMP_ROOT, *(root for kind in kinds().values() for root in kind.scratch_roots)]
    for root in roots:
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            if path in HOST_WIDE or (run_id is not None and not of_run(entry, run_id)):
                continue
            if not keeper.keeps_run(f"directory {path}", partial(of_run, entry)):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(f"directory {path}")
    return removed


def kill_leftover_stressors(run_id: str | None, keeper: Keeper) -> list[str]:
    """stress-ng of a [noise] step (its process group) that outlived its run."""
    from isobench.host.noise import leftover_stressors

    removed = []
    for pid in leftover_stressors(run_id):
        if keeper.keeps_run(f"stress-ng pid {pid}", partial(stressor_of, pid)):
            continue
        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
            removed.append(f"stress-ng pid {pid}")
        except (ProcessLookupError, PermissionError):
            pass
    return removed


def stressor_of(pid: int, run_id: str) -> bool:
    from isobench.host.noise import leftover_stressors

    return pid in leftover_stressors(run_id)
