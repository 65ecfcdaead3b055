"""What the kernel says of a container's memory: how many processes its
OOM killer ended in the container's cgroup (v1 memory.oom_control, v2
memory.events: ``oom_kill N``) and the cgroup's limit, so that a command
ended by SIGKILL (exit 137) is told as "killed: out of memory (limit N MB)"
rather than as an exit status."""

from __future__ import annotations

import glob
import os

CGROUP_ROOT = "/sys/fs/cgroup"
_UNLIMITED = 1 << 60  # v1 writes "no limit" as a page-rounded 2^63 - 1


def oom_kills(text: str) -> int | None:
    """Pure: the ``oom_kill N`` count of memory.oom_control or memory.events."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def limit_bytes(text: str) -> int | None:
    """Pure: memory.limit_in_bytes (v1) or memory.max (v2); None for none."""
    value = text.strip()
    if not value.isdigit() or int(value) >= _UNLIMITED:
        return None
    return int(value)


def _dirs(container_id: str) -> list[tuple[str, str, str]]:
    """(directory, OOM file, limit file) where Docker's cgroup drivers put the container."""
    v1, v2 = os.path.join(CGROUP_ROOT, "memory"), CGROUP_ROOT
    return [
        (os.path.join(v1, "docker", container_id), "memory.oom_control", "memory.limit_in_bytes"),
        (
            os.path.join(v1, "system.slice", f"docker-{container_id}.scope"),
            "memory.oom_control",
            "memory.limit_in_bytes",
        ),
        (os.path.join(v2, "system.slice", f"docker-{container_id}.scope"), "memory.events", "memory.max"),
        (os.path.join(v2, "docker", container_id), "memory.events", "memory.max"),
    ]


def read(container_id: str, with_limit: bool = True) -> tuple[int | None, int | None]:
    """The container's OOM kills so far and (with_limit) its memory limit,
    from the first cgroup directory that exists; (None, None) where none is
    readable. Every exec reads the kills before it: the limit only matters
    once one was killed."""
    for directory, events, limit in _dirs(container_id):
        try:
            with open(os.path.join(directory, events), encoding="ascii") as fh:
                kills = oom_kills(fh.read())
        except OSError:
            continue
        return kills, _limit(directory, limit) if with_limit else None
    return None, None


def _limit(directory: str, name: str) -> int | None:
    """The directory's limit, else the first of its children's: crun under
    systemd puts the container's processes and limit in the scope's
    `container` (the host lane's guest read "no limit set" for a 64 MB one;
    v2's memory.events above it counts the kills below it)."""
    for d in [directory, *sorted(glob.glob(os.path.join(directory, "*", "")))]:
        try:
            with open(os.path.join(d, name), encoding="ascii") as fh:
                found = limit_bytes(fh.read())
        except OSError:
            continue
        if found is not None:
            return found
    return None


def killed_line(before: int | None, after: int | None, limit: int | None) -> str:
    """Pure: the line a sample's error says when the OOM killer struck
    between the two readings, else ""."""
    if before is None or after is None or after <= before:
        return ""
    return f"killed: out of memory (limit {limit // 2**20} MB)" if limit else "killed: out of memory (no limit set)"
