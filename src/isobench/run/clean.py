"""Removes what isobench created: each environment kind's leftovers (QEMU
guests, labelled containers and volumes: the kinds' cleaners), servers,
client-host namespaces, links and iptables rules, and scratch directories
(isobench's and the kinds'). Never touches anything without the isobench
label or name, or outside isobench's own directories, nor anything a live
run owns (core/owner.py: a `Keeper` says so item by item and keeps a line
for each). A scratch root that is not isobench's alone (a symlink, another
user's directory: core/workspace.py) is refused before anything is touched,
and an entry under one is removed, never followed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from functools import partial

from isobench.core.lock import LANES_DIR, LOCK_PATH, SUBNET_LOCK_PATH
from isobench.core.owner import OWNERS_DIR, Keeper
from isobench.core.workspace import SCRATCH_ROOTS, TMP_ROOT, of_run, refuse_foreign
from isobench.envs.kinds import kinds

# under a kind's scratch root (/run/isobench), but no run's
HOST_WIDE = {LOCK_PATH, LANES_DIR, SUBNET_LOCK_PATH, OWNERS_DIR}


def clean(run_id: str | None = None, keeper: Keeper | None = None) -> list[str]:
    """Remove isobench's leftovers (of one run, or all) but a live run's;
    returns what was removed (`keeper.kept`: what was kept)."""
    keeper = keeper or Keeper()
    for root in scratch_roots():  # before anything: a foreign root is no one's to sweep
        refuse_foreign(root)
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


def scratch_roots() -> list[str]:
    return [*SCRATCH_ROOTS, *(root for kind in kinds().values() for root in kind.scratch_roots)]


def remove_scratch(run_id: str | None, keeper: Keeper, roots: list[str] | None = None) -> list[str]:
    """The `<run id>-…` entries under isobench's and the kinds' roots; only
    those really gone are listed."""
    removed = []
    for root in scratch_roots() if roots is None else roots:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            if path in HOST_WIDE or (run_id is not None and not of_run(entry, run_id)):
                continue
            what = f"{entry_kind(path)} {path}"
            if not keeper.keeps_run(what, partial(of_run, entry)) and remove_entry(path):
                removed.append(what)
    return removed


def entry_kind(path: str) -> str:
    return "symlink" if os.path.islink(path) else "directory" if os.path.isdir(path) else "file"


def remove_entry(path: str) -> bool:
    """Remove a directory tree (rmtree opens each level without following
    a link), a file or a symlink (itself, not what it names); True once gone."""
    try:
        if entry_kind(path) == "directory":
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except OSError:
        pass  # what stays is not listed as removed
    return not os.path.lexists(path)


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
