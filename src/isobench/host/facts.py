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
        "hypervisor": hypervisor(),  # "none" on bare metal: what "native" means in the report
    }


def hypervisor() -> str:
    """The hypervisor this host runs under, or "none" (parse_hypervisor)."""
    from isobench.core.proc import run_argv

    cpuinfo = read_text("/proc/cpuinfo") or ""
    if not has_hypervisor_flag(cpuinfo):
        return "none"
    detected = run_argv(["systemd-detect-virt", "--vm"], timeout=5)
    vendor = read_text("/sys/class/dmi/id/sys_vendor") or read_text("/sys/hypervisor/type")
    return parse_hypervisor(cpuinfo, detected.stdout if detected.returncode == 0 else "", vendor)


def has_hypervisor_flag(cpuinfo: str) -> bool:
    """/proc/cpuinfo's "hypervisor" CPU flag: the CPU says it runs under one."""
    return any(
        line.split(":", 1)[0].strip() == "flags" and "hypervisor" in line.split(":", 1)[1].split()
        for line in cpuinfo.splitlines()
        if ":" in line
    )


def parse_hypervisor(cpuinfo: str, detect_virt: str, vendor: str | None) -> str:
    """ "none" without the CPU's hypervisor flag; else the hypervisor's name
    as systemd-detect-virt --vm says it (kvm, microsoft, vmware, xen,
    amazon...), else the DMI system vendor (or /sys/hypervisor/type), else
    "unnamed" (a VM whose hypervisor does not say which it is)."""
    if not has_hypervisor_flag(cpuinfo):
        return "none"
    for name in (detect_virt.strip(), (vendor or "").strip()):
        if name and name != "none":
            return name[:64]
    return "unnamed"


def docker_version() -> str:
    from isobench.core.dockerclient import engine_or_none

    client = engine_or_none(timeout=5)
    if client is None:
        return "unavailable"
    try:
        return client.version().get("Version", "unknown")
    except Exception:  # noqa: BLE001 - a fact, not a requirement
        return "unavailable"
