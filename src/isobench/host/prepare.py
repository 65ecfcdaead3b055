"""What `isobench setup` changes on a host, and what `setup --check` finds
missing or different, read without changing anything. The changes
themselves are made by the shipped scripts setup.sh runs too
(install-host.sh, start-dockerd.sh: core/shipped.py), so the two paths
cannot drift; this module only reads the host and says it in lines."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from isobench.host import daemonconf, imagematch
from isobench.host.packages import tool_packages

DAEMON_JSON = "/etc/docker/daemon.json"
SERVICES = ("redis-server", "mariadb", "nutcracker")  # install-host.sh stops and disables them
UNIFIED = "/sys/fs/cgroup/unified"
NETWORK_RANGE = "198.18.0.0/15"  # RFC 2544's benchmarking range: docker0 198.18.0.1/24, pools 198.18.64.0/18


def _flag(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def infra_packages(script_text: str, read: Callable[[str], str | None] = _flag) -> list[str]:
    """install-host.sh's INFRA=(...) array: the one list of host infrastructure
    packages, with those its `if [ "$(cat FILE ...)" = "VALUE" ]` blocks add
    (`INFRA+=(...)`) where FILE says VALUE here (AppArmor on: apparmor; systemd
    as PID 1: dbus), so `setup --check` asks for what setup installs."""
    found = re.search(r"^INFRA=\((.*?)\)", script_text, re.S | re.M)
    names = found.group(1).split() if found else []
    for path, value, added in _ADDED.findall(script_text):
        if read(path) == value:
            names += added.split()
    return names


_ADDED = re.compile(r'^if \[ "\$\(cat (\S+) 2>/dev/null\)" = "(\w+)" \]; then\n\s*INFRA\+=\((.*?)\)', re.M)


def not_installed(names: list[str], run=subprocess.run) -> list[str]:
    """Those of NAMES dpkg does not hold as installed (all of them where dpkg cannot say)."""
    if not names:
        return []
    try:
        r = run(
            ["dpkg-query", "-W", "-f", "${Package} ${db:Status-Abbrev}\n", *names],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return list(names)
    installed = {ln.split()[0] for ln in r.stdout.splitlines() if len(ln.split()) > 1 and ln.split()[1] == "ii"}
    return [n for n in names if n not in installed]


def _systemd() -> bool:
    try:
        return Path("/proc/1/comm").read_text().strip() == "systemd"
    except OSError:
        return False


def running_services(run=subprocess.run) -> list[str]:
    """Those of SERVICES that are enabled or running (setup disables them)."""
    found = []
    for svc in SERVICES:
        if _systemd():
            argvs = [
                ["systemctl", "is-enabled", "--quiet", f"{svc}.service"],
                ["systemctl", "is-active", "--quiet", svc],
            ]
        elif os.access(f"/etc/init.d/{svc}", os.X_OK):
            argvs = [[f"/etc/init.d/{svc}", "status"]]
        else:
            continue
        for argv in argvs:
            try:
                if run(argv, capture_output=True, timeout=30).returncode == 0:
                    found.append(svc)
                    break
            except (OSError, subprocess.TimeoutExpired):
                continue
    return found


def daemon_json_changes(path: str = DAEMON_JSON) -> list[str]:
    """The keys of daemon.json setup would set, each as `key: now -> then` (other keys are kept)."""
    try:
        with open(path, encoding="utf-8") as fh:
            conf = json.load(fh)
    except FileNotFoundError:
        conf = {}
    except (OSError, ValueError):
        return []  # daemon_json_problem says it, and setup stops before it starts
    if daemon_json_problem(path):
        return []
    merged = daemonconf.merge(conf, daemonconf.runtime_entries())
    return [
        f"{k}: {json.dumps(conf[k]) if k in conf else '(unset)'} -> {json.dumps(merged[k])}"
        for k in merged
        if conf.get(k) != merged[k]
    ]


def daemon_json_problem(path: str = DAEMON_JSON) -> str:
    """Why setup cannot merge its keys into daemon.json ("" when it can):
    not JSON, not an object, or a "runtimes" that is not an object (merging
    would replace the runtimes it names)."""
    try:
        with open(path, encoding="utf-8") as fh:
            conf = json.load(fh)
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as exc:
        return f"{path} cannot be merged: not readable JSON ({str(exc).splitlines()[0]}); fix it, or move it away"
    if not isinstance(conf, dict):
        return f"{path} cannot be merged: a JSON {type(conf).__name__}, not an object; make it {{...}}, or move it away"
    if "runtimes" in conf and not isinstance(conf["runtimes"], dict):
        return (
            f'{path} cannot be merged: "runtimes" is a {type(conf["runtimes"]).__name__}, not an object of '
            'runtimes (dockerd refuses it too); make it {"name": {"path": ...}}'
        )
    return ""


def docker_unit_problem(run=subprocess.run) -> str:
    """A systemd host whose docker.service is masked: setup could install
    Docker but not start it ("" otherwise)."""
    if not _systemd():
        return ""
    try:
        state = run(
            ["systemctl", "is-enabled", "docker.service"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if state.startswith("masked"):
        return (
            f"docker.service is {state} (systemd): setup cannot start Docker Engine; "
            "`systemctl unmask docker.service`, then run setup again"
        )
    return ""


def refusals() -> list[str]:
    """What stops setup before it changes anything, one line each: the
    resource, and what would work."""
    return [p for p in (daemon_json_problem(), docker_unit_problem()) if p]


def cgroup_remounts(root: str = UNIFIED) -> list[str]:
    """The controllers start-dockerd.sh moves from cgroup2 to a v1 hierarchy of their own (crun needs it)."""
    try:
        controllers = Path(root, "cgroup.controllers").read_text().split()
        enabled = Path(root, "cgroup.subtree_control").read_text().split()
    except OSError:
        return []
    return [c for c in controllers if c not in enabled]


def docker_answers(run=subprocess.run) -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return run([docker, "info"], capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def image_present(tag: str, run=subprocess.run) -> bool:
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        return run([docker, "image", "inspect", tag], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def not_debian_12(os_release: str = "/etc/os-release") -> str:
    """Why this host is not Debian 12 (bookworm), or ""."""
    try:
        text = Path(os_release).read_text()
    except OSError:
        return f"no {os_release}: isobench setup is made for Debian 12 (bookworm)"
    fields = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', text, re.M))
    if fields.get("ID") == "debian" and fields.get("VERSION_CODENAME") == "bookworm":
        return ""
    return f"this is {fields.get('PRETTY_NAME', 'an unknown system')}; isobench setup is made for Debian 12 (bookworm)"


def wanted_packages(install_host_text: str) -> list[str]:
    return [*infra_packages(install_host_text), *tool_packages()]


def needed_packages() -> set[str]:
    """What isobench runs on and with on this host (Docker Engine, its
    runtimes, QEMU, the tools): what setup installs, which a study's
    packages may not remove or upgrade (host.aptplan.touched)."""
    from isobench.core.shipped import script

    return set(wanted_packages(script("install-host.sh").read_text(encoding="utf-8")))


@dataclass
class HostState:
    """The host as setup finds it, read once, changing nothing."""

    os_problem: str
    wanted: int  # packages setup installs
    missing: list[str]
    services: list[str]
    daemon: list[str]
    cgroups: list[str]
    docker: bool
    image: bool
    image_tag: str
    refused: list[str] = field(default_factory=list)  # what stops setup before anything starts
    # (package, host's version, image's) among the tools and their direct dependencies
    unlike_image: list[tuple[str, str, str]] = field(default_factory=list)


def read_state(install_host_text: str, image_tag: str, image_versions: dict[str, str] | None = None) -> HostState:
    """``image_versions``: the built image's packages (its packages.tsv), None when not built."""
    wanted = wanted_packages(install_host_text)
    docker = docker_answers()
    unlike = imagematch.differing(imagematch.relevant(tool_packages()), image_versions) if image_versions else []
    return HostState(
        os_problem=not_debian_12(),
        wanted=len(wanted),
        missing=not_installed(wanted),
        services=running_services(),
        daemon=daemon_json_changes(),
        cgroups=cgroup_remounts(),
        docker=docker,
        image=docker and image_present(image_tag),
        image_tag=image_tag,
        refused=refusals(),
        unlike_image=unlike,
    )


def change_lines(s: HostState) -> list[str]:
    """What `isobench setup` will change on this host, step by step, before it changes anything."""
    restart = any(not line.startswith("runtimes:") for line in s.daemon)
    return [
        "step 1, packages (apt-get update, then install without recommends; a temporary /usr/sbin/policy-rc.d "
        "keeps services from starting meanwhile): "
        + (
            f"installs {len(s.missing)} of {s.wanted}: {', '.join(s.missing)}"
            if s.missing
            else f"all {s.wanted} present"
        )
        + "; those present are upgraded where apt has a newer candidate",
        "step 1, services stopped and disabled (the workloads start their own): "
        + (", ".join(s.services) if s.services else f"{', '.join(SERVICES)} where present (none runs now)"),
        f"step 2, {DAEMON_JSON} rewritten, other keys kept: " + ("; ".join(s.daemon) if s.daemon else "unchanged"),
        "step 2, Docker Engine "
        + (
            "started"
            if not s.docker
            else "restarted (running containers stop)"
            if restart
            else "reloaded (SIGHUP: new runtimes)"
            if s.daemon
            else "left running as it is"
        ),
        "step 2, cgroup controllers moved from cgroup2 to v1 hierarchies of their own (crun needs them off cgroup2): "
        + (", ".join(s.cgroups) if s.cgroups else "none here"),
        f"step 2, networks: docker0 198.18.0.1/24 and Docker's address pools 198.18.64.0/18, inside {NETWORK_RANGE} "
        "(RFC 2544's benchmarking range): hosts of a network using it are unreachable from containers",
        f"step 3, the image {s.image_tag}: "
        + ("present" if s.image else "built (debootstrap and apt under /var/lib/isobench/images, then docker import)"),
    ]


def check_lines(s: HostState) -> list[str]:
    """What is missing or differs from what setup makes; [] for a ready host."""
    out = [s.os_problem] if s.os_problem else []
    out += s.refused
    if s.missing:
        out.append(f"packages missing ({len(s.missing)} of {s.wanted}): {', '.join(s.missing)}")
    if s.services:
        out.append(f"services running or enabled that setup disables: {', '.join(s.services)}")
    out += [f"{DAEMON_JSON} differs: {line}" for line in s.daemon]
    if s.cgroups:
        out.append(f"cgroup controllers still on cgroup2 (crun refuses them): {', '.join(s.cgroups)}")
    if s.unlike_image:
        out.append(
            f"{len(s.unlike_image)} packages the tools run on differ from the image's (a native side and a container "
            f"then run other programs, and `try` refuses them): {imagematch.describe(s.unlike_image)}; "
            "`isobench setup --match-image` brings the host's older ones to the image's versions"
        )
    if not s.docker:
        out.append("Docker Engine does not answer (`docker info`)")
    elif not s.image:
        out.append(f"the image {s.image_tag} is not built")
    return out
