"""The host's facts, recorded with every run: what the numbers were measured on."""

from __future__ import annotations

import os
import platform

from isobench import __version__
from isobench.host.counters import probe_pmu
from isobench.host.hostinfo import bracketed, cpu_model, meminfo, read_text


def host_facts() -> dict:
    mem = meminfo()
    os_release = dict(line.split("=", 1) for line in (read_text("/etc/os-release") or "").splitlines() if "=" in line)
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "mem_bytes": mem.get("MemTotal"),
        "kernel": platform.release(),
        "os": os_release.get("PRETTY_NAME", "").strip('"'),
        "thp": bracketed(read_text("/sys/kernel/mm/transparent_hugepage/enabled")),
        "governor": read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "unavailable",
        "hugepages_total": mem.get("HugePages_Total"),
        "loadavg": read_text("/proc/loadavg"),
        "docker_version": docker_version(),
        "isobench_version": __version__,
        "python": platform.python_version(),
        "hardware_events": probe_pmu(),  # perf stat -e instructions: a PMU or not (docs/attribution.md)
    }


def docker_version() -> str:
    from isobench.core.dockerclient import engine_or_none

    client = engine_or_none(timeout=5)
    if client is None:
        return "unavailable"
    try:
        return client.version().get("Version", "unknown")
    except Exception:  # noqa: BLE001 - a fact, not a requirement
        return "unavailable"
