"""What the host is: memory, CPUs, NUMA nodes, huge pages, THP. Read-only
parsers of /proc and /sys, shared by facts, preflight, groups and VMs."""

from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One host setting that can bias results (isobench doctor)."""

    check: str
    status: str  # ok | warn | info
    value: str
    fix: str = ""


@dataclass(frozen=True)
class HostInfo:
    """The host figures parameters are derived from."""

    cores: int
    mem_bytes: int
    disk_free_bytes: int
    llc_bytes: int = 0  # all last-level caches together; 0 when unknown


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
        return value[value.index("[") + 1 : value.index("]")]
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
    cpus: list[int] = []
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


def parse_cache_size(text: str) -> int:
    """sysfs cache sizes read like "32768K" or "1M"."""
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * scale if digits.isdigit() else 0


def llc_bytes(root: str = "/sys/devices/system/cpu") -> int:
    """The total of the last-level caches: the highest cache level's size
    once per distinct set of CPUs sharing it (STREAM's rule sizes arrays
    against the sum of all last-level caches)."""
    level_of: dict[tuple[int, str], int] = {}  # (level, shared CPUs) -> size
    for cpu in (e for e in os.listdir(root) if e.startswith("cpu") and e[3:].isdigit()) if os.path.isdir(root) else ():
        cache = os.path.join(root, cpu, "cache")
        for index in os.listdir(cache) if os.path.isdir(cache) else ():
            d = os.path.join(cache, index)
            if (read_text(os.path.join(d, "type")) or "").strip() == "Instruction":
                continue
            level = (read_text(os.path.join(d, "level")) or "0").strip()
            shared = (read_text(os.path.join(d, "shared_cpu_list")) or cpu).strip()
            size = parse_cache_size(read_text(os.path.join(d, "size")) or "")
            if level.isdigit() and size:
                level_of[(int(level), shared)] = size
    if not level_of:
        return 0
    top = max(level for level, _ in level_of)
    return sum(size for (level, _), size in level_of.items() if level == top)


def host_info(path: str = "/var/lib") -> HostInfo:
    usage = shutil.disk_usage(path if os.path.exists(path) else "/")
    return HostInfo(
        cores=os.cpu_count() or 1,
        mem_bytes=meminfo().get("MemTotal", 0),
        disk_free_bytes=usage.free,
        llc_bytes=llc_bytes(),
    )
