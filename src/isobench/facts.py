"""The host's facts, recorded with every run: what the numbers were measured on."""

from __future__ import annotations

import os
import platform
import shutil

from isobench import __version__
from isobench.envs.base import Environment
from isobench.workloads.base import HostInfo


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _bracketed(value: str | None) -> str | None:
    """THP files read like 'always [madvise] never': the bracketed word is in force."""
    if value and "[" in value:
        return value[value.index("[") + 1:value.index("]")]
    return value


def cpu_model() -> str:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def meminfo() -> dict[str, int]:
    out = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    return out


def host_info(path: str = "/var/lib") -> HostInfo:
    mem = meminfo()
    usage = shutil.disk_usage(path if os.path.exists(path) else "/")
    return HostInfo(cores=os.cpu_count() or 1, mem_bytes=mem.get("MemTotal", 0),
                    disk_free_bytes=usage.free)


def host_facts() -> dict:
    mem = meminfo()
    os_release = dict(line.split("=", 1) for line in (_read("/etc/os-release") or "").splitlines() if "=" in line)
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "mem_bytes": mem.get("MemTotal"),
        "kernel": platform.release(),
        "os": os_release.get("PRETTY_NAME", "").strip('"'),
        "thp": _bracketed(_read("/sys/kernel/mm/transparent_hugepage/enabled")),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") or "unavailable",
        "hugepages_total": mem.get("HugePages_Total"),
        "loadavg": _read("/proc/loadavg"),
        "docker_version": docker_version(),
        "isobench_version": __version__,
        "python": platform.python_version(),
    }


def docker_version() -> str:
    try:
        import docker
        client = docker.from_env(timeout=5)
        return client.version().get("Version", "unknown")
    except Exception:  # noqa: BLE001 - a fact, not a requirement
        return "unavailable"


def tool_versions(env: Environment, packages: list[str]) -> dict[str, str]:
    """Versions of Debian packages as installed in the environment itself."""
    if not packages:
        return {}
    result = env.exec(["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\n", *packages], timeout=30)
    versions = {}
    for line in result.stdout.splitlines():
        name, _, version = line.partition("\t")
        if name and version:
            versions[name] = version
    for pkg in packages:
        versions.setdefault(pkg, "not installed")
    return versions
