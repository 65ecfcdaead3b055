"""What the host is: memory, CPUs, NUMA nodes, huge pages, THP. Read-only
parsers of /proc and /sys, shared by facts, preflight, groups and VMs."""

from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class HostInfo:
    """The host figures parameters are derived from."""

    cores: int
    mem_bytes: int
    disk_free_bytes: int


def read_text(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes per field (counts such as HugePages_Free stay counts)."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[name.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    return out


def meminfo(path: str = "/proc/meminfo") -> dict[str, int]:
    return parse_meminfo(read_text(path) or "")


def bracketed(value: str | None) -> str | None:
    """THP files read like 'always [madvise] never': the bracketed word is in force."""
    if value and "[" in value and "]" in value:
        return value[value.index("[") + 1:value.index("]")]
    return value


def thp_mode() -> str:
    return bracketed(read_text("/sys/kernel/mm/transparent_hugepage/enabled")) or "unknown"


def hugetlbfs_free_mb() -> tuple[int, str | None]:
    """Free reserved huge pages (MiB) and a hugetlbfs mount point."""
    mem = meminfo()
    free_mb = mem.get("HugePages_Free", 0) * mem.get("Hugepagesize", 0) // 2**20
    mount = None
    for line in (read_text("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == "hugetlbfs":
            mount = parts[1]
            break
    return free_mb, mount


def cpu_model() -> str:
    for line in (read_text("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def parse_cpulist(text: str) -> list[int]:
    """A kernel CPU list ("0-3,8,10-11") as CPU numbers."""
    cpus = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def numa_nodes(root: str = "/sys/devices/system/node") -> list[list[int]]:
    """The CPUs of each NUMA node with CPUs ([all CPUs] without NUMA info)."""
    nodes = []
    if os.path.isdir(root):
        for entry in sorted(os.listdir(root)):
            if entry.startswith("node") and entry[4:].isdigit():
                cpus = parse_cpulist(read_text(os.path.join(root, entry, "cpulist")) or "")
                if cpus:
                    nodes.append(cpus)
    return nodes or [sorted(os.sched_getaffinity(0))]


def host_info(path: str = "/var/lib") -> HostInfo:
    usage = shutil.disk_usage(path if os.path.exists(path) else "/")
    return HostInfo(cores=os.cpu_count() or 1, mem_bytes=meminfo().get("MemTotal", 0),
                    disk_free_bytes=usage.free)
