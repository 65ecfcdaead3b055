"""isobench's keys in Docker Engine's /etc/docker/daemon.json, merged with
what the file already holds (other keys and other runtimes are kept).

- docker0 at 198.18.0.1/24 and user networks from 198.18.64.0/18, inside the
  RFC 2544 benchmarking range 198.18.0.0/15, never a LAN range; overlay2;
- the OCI runtimes beside runc that are installed (Debian's crun and runsc),
  under "runtimes", so `docker run --runtime NAME` can choose them. gVisor
  is registered once per platform with the runtimeArgs that work under
  Docker on an ordinary host (docs/environments/runtimes.md says why).

scripts/start-dockerd.sh runs ``python3 -S -m isobench.host.daemonconf PATH``
with Debian's python3 before the venv exists: stdlib only, no other
isobench import. It prints "unchanged", "runtimes" (only that key changed: dockerd
reloads it on SIGHUP, without stopping containers) or "changed" (a
restart is needed).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys

BASE_KEYS: dict = {
    "bip": "198.18.0.1/24",
    "default-address-pools": [{"base": "198.18.64.0/18", "size": 24}],
    "storage-driver": "overlay2",
}

# gVisor's own network stack (netstack) refuses to start here; with
# --network=host the sandbox passes socket calls to the kernel stack of the
# container's network namespace (a bridge veth or the host's), so networks
# are Docker's own and network figures measure gVisor's syscall interception,
# not netstack. ptrace is the platform that runs anywhere (this 2022 build
# has no systrap); kvm is not registered: where /dev/kvm cannot run a guest
# (a paravirtual hypervisor) its sandbox spins in create forever.
GVISOR_ARGS = ("--network=host",)
GVISOR_PLATFORMS = {"runsc": "ptrace"}


def runtime_entries(which=shutil.which) -> dict[str, dict]:
    """The "runtimes" entries for the runtimes installed on this host
    (``which`` finds a binary or returns None)."""
    entries: dict[str, dict] = {}
    crun = which("crun")
    if crun:
        entries["crun"] = {"path": crun}
    runsc = which("runsc")
    if runsc:
        for name, platform in GVISOR_PLATFORMS.items():
            entries[name] = {"path": runsc, "runtimeArgs": [f"--platform={platform}", *GVISOR_ARGS]}
    return entries


def merge(conf: dict, runtimes: dict[str, dict]) -> dict:
    """A new daemon.json object: conf with isobench's base keys set and the
    given runtimes added or replaced under "runtimes"; every other key and
    every other runtime kept. conf is not modified."""
    merged = copy.deepcopy(conf)
    merged.update(copy.deepcopy(BASE_KEYS))
    if runtimes:
        existing = merged.get("runtimes")
        table = dict(existing) if isinstance(existing, dict) else {}
        table.update(copy.deepcopy(runtimes))
        merged["runtimes"] = table
    return merged


def update_file(path: str, runtimes: dict[str, dict]) -> tuple[bool, bool]:
    """Merge into the file (created if missing), atomically. Returns
    (file changed, "runtimes" key changed)."""
    try:
        with open(path, encoding="utf-8") as fh:
            conf = json.load(fh)
    except FileNotFoundError:
        conf = {}
    if not isinstance(conf, dict):
        raise ValueError(f"{path}: not a JSON object")
    merged = merge(conf, runtimes)
    if merged == conf:
        return False, False
    tmp = path + ".isobench-tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(merged, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)
    base_changed = any(conf.get(k) != merged.get(k) for k in merged if k != "runtimes")
    return True, not base_changed


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python3 -m isobench.host.daemonconf /etc/docker/daemon.json\n")
        return 2
    path = argv[0]
    try:
        changed, only_runtimes = update_file(path, runtime_entries())
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    # unchanged | runtimes (only "runtimes" changed: a SIGHUP reloads it) | changed
    print("unchanged" if not changed else "runtimes" if only_runtimes else "changed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
