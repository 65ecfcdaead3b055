"""Host settings that bias results, each with how to fix it.

Readings are gathered in one place (read_host); the judgements are pure
functions of them, so they can be tested without the host."""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import asdict

from isobench.envs.kinds import kinds
from isobench.host.hostinfo import Finding, bracketed, meminfo, read_text

GiB = 2**30


def read_host() -> dict:
    """Everything doctor judges, read once."""
    governors = sorted({read_text(p) or "" for p in glob.glob("/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor")})
    no_turbo = read_text("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = read_text("/sys/devices/system/cpu/cpufreq/boost")
    swaps = (read_text("/proc/swaps") or "").splitlines()[1:]
    mem = meminfo()
    usage = shutil.disk_usage("/var/lib" if os.path.exists("/var/lib") else "/")
    return {
        "governors": [g for g in governors if g],
        "turbo": "off" if no_turbo == "1" or boost == "0" else ("on" if no_turbo == "0" or boost == "1" else None),
        "thp": bracketed(read_text("/sys/kernel/mm/transparent_hugepage/enabled")),
        "irqbalance": _process_running("irqbalance"),
        "swap_devices": len(swaps),
        "loadavg1": float((read_text("/proc/loadavg") or "0").split()[0]),
        "cores": os.cpu_count() or 1,
        "busy": _busy_processes(),
        "hugepages_total": mem.get("HugePages_Total", 0),
        "kinds": {name: kind.host_readings() for name, kind in kinds().items()},
        "mem_available": mem.get("MemAvailable", 0),
        "disk_free": usage.free,
    }


def judge(r: dict) -> list[Finding]:
    out = []
    gov = r["governors"]
    if not gov:
        out.append(
            Finding(
                "cpu governor",
                "info",
                "not exposed (virtual machine or no cpufreq driver)",
                "nothing to do here; on bare metal use the performance governor",
            )
        )
    elif gov != ["performance"]:
        out.append(
            Finding(
                "cpu governor",
                "warn",
                ",".join(gov),
                "cpupower frequency-set -g performance (the IBM study used performance)",
            )
        )
    else:
        out.append(Finding("cpu governor", "ok", "performance"))
    if r["turbo"] == "on":
        out.append(
            Finding(
                "turbo boost",
                "warn",
                "on",
                "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (or cpufreq/boost=0): "
                "turbo makes clock speed depend on temperature and load",
            )
        )
    else:
        out.append(Finding("turbo boost", "ok" if r["turbo"] == "off" else "info", r["turbo"] or "not exposed"))
    out.append(
        Finding(
            "transparent huge pages",
            "info",
            r["thp"] or "unknown",
            ""
            if r["thp"] != "always"
            else "THP=always can make memory results vary; "
            "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled to compare like with like",
        )
    )
    out.append(
        Finding(
            "irqbalance",
            "warn" if r["irqbalance"] else "ok",
            "running" if r["irqbalance"] else "not running",
            "stop irqbalance so interrupts stay where the run put them" if r["irqbalance"] else "",
        )
    )
    out.append(
        Finding(
            "swap",
            "warn" if r["swap_devices"] else "ok",
            f"{r['swap_devices']} device(s)",
            "swapoff -a so memory pressure shows as failure, not as slowness" if r["swap_devices"] else "",
        )
    )
    busy = r["loadavg1"] > 0.25 * r["cores"]
    procs = ", ".join(f"{name} ({pct:.0f}%)" for name, pct in r["busy"][:3])
    load = f"load average {r['loadavg1']:.2f} on {r['cores']} cores" + (f"; busiest: {procs}" if procs else "")
    out.append(
        Finding(
            "load",
            "warn" if busy else "ok",
            load,
            "stop other work before measuring; another process's cycles show up as overhead" if busy else "",
        )
    )
    out.append(
        Finding(
            "reserved huge pages",
            "info",
            str(r["hugepages_total"]),
            ""
            if r["hugepages_total"]
            else "vm-tuned falls back to THP; reserve with sysctl vm.nr_hugepages=N to back guests with hugetlbfs",
        )
    )
    for name, kind in kinds().items():  # each kind judges what it reads
        out += kind.host_findings(r.get("kinds", {}).get(name, {}))
    out.append(
        Finding(
            "free memory",
            "ok" if r["mem_available"] > 4 * GiB else "warn",
            f"{r['mem_available'] / GiB:.1f} GiB available",
            "" if r["mem_available"] > 4 * GiB else "free memory before running studies",
        )
    )
    out.append(
        Finding(
            "free disk",
            "ok" if r["disk_free"] > 20 * GiB else "warn",
            f"{r['disk_free'] / GiB:.1f} GiB free under /var/lib",
            "" if r["disk_free"] > 20 * GiB else "fio files, images and VM disks need room",
        )
    )
    return out


def findings_as_facts(findings: list[Finding]) -> list[dict]:
    return [asdict(f) for f in findings]


def _process_running(name: str) -> bool:
    for comm in glob.glob("/proc/[0-9]*/comm"):
        if (read_text(comm) or "") == name:
            return True
    return False


def _busy_processes() -> list[tuple[str, float]]:
    """Processes by CPU share since they started (cheap; no sampling delay)."""
    uptime = float((read_text("/proc/uptime") or "1").split()[0])
    hz = os.sysconf("SC_CLK_TCK")
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        text = read_text(stat)
        if not text:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / hz
        age = uptime - int(fields[19]) / hz
        if age > 5:
            out.append((name, 100 * cpu_s / age))
    return sorted((p for p in out if p[1] >= 10), key=lambda p: -p[1])
