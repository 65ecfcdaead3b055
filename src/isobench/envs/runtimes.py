"""OCI runtimes under Docker Engine: which ones the docker kind offers, the
name each is registered under in daemon.json, and whether this host can
really start a container with it.

runc is Docker's own; crun (Red Hat's runtime in C) and runsc (gVisor, a
user-space kernel that intercepts the container's system calls) are
Debian's packages, registered by scripts/start-dockerd.sh
(isobench.host.daemonconf). "Installed" is not "works": crun refuses hosts whose
cgroup2 still holds controllers beside cgroup v1, gVisor's own network
stack refuses to start in some namespaces. So the probe starts a tiny
container with each runtime and keeps the verdict, keyed by everything it
depends on, under STATE_ROOT (like the KVM probe); delete the file to ask again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass

from isobench.core.owner import owner_labels
from isobench.core.workspace import LABEL, STATE_ROOT

RUNTIMES = ("runc", "crun", "runsc")
# gVisor's platform when an environment names none: ptrace runs anywhere
# (isobench.host.daemonconf registers runsc with it; that module imports nothing
# of isobench, tests/unit/test_env_specs.py checks the two agree)
GVISOR_DEFAULT_PLATFORM = "ptrace"
GVISOR_PLATFORMS = (GVISOR_DEFAULT_PLATFORM,)  # kvm hangs in create where /dev/kvm cannot run a guest
CACHE_FILE = os.path.join(STATE_ROOT, "runtime-probe.json")
# Workloads a runtime cannot run at all, by registered name: refused up
# front rather than failing cell by cell (docs/environments/runtimes.md).
UNSUPPORTED = {
    "runsc": {
        "netlat": "sockperf's server fails on its first recvfrom() with EINVAL (errno 22) under gVisor's "
        "host network passthrough (--network=host, the only network this runsc build starts "
        "here), so no round trip can be timed",
    },
}
PROBE_TIMEOUT_S = 60.0


def engine_name(runtime: str, gvisor_platform: str | None = None) -> str:
    """The name the runtime is registered under in daemon.json (what
    `docker run --runtime` takes): gVisor once per platform."""
    if runtime == "runsc" and (gvisor_platform or GVISOR_DEFAULT_PLATFORM) != GVISOR_DEFAULT_PLATFORM:
        return f"runsc-{gvisor_platform}"
    return runtime


def platform_used(runtime: str, gvisor_platform: str | None = None) -> str | None:
    """gVisor's platform a container runs on: the one given, else the default
    one under runsc; None under any other runtime."""
    return gvisor_platform or (GVISOR_DEFAULT_PLATFORM if runtime == "runsc" else None)


def version(entry: dict | None) -> str:
    """First line of `<runtime binary> --version` ("runc version 1.1.5")."""
    path = (entry or {}).get("path")
    if not path:
        return "unknown"
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out.strip() else "unknown"


@dataclass(frozen=True)
class Verdict:
    works: bool
    reason: str  # "" when it works; else the engine's error, one line
    key: str
    probed_at: str
    probe_s: float
    cached: bool = False

    def line(self) -> str:
        if self.works:
            return f"available (started a container in {self.probe_s:.1f} s{', cached' if self.cached else ''})"
        return f"not working: {self.reason}{' (cached)' if self.cached else ''}"


def one_line(error: str, limit: int = 240) -> str:
    """The engine's error, on one line, without Docker's request prefix and
    with the runtime's own message (the last "msg=" or ": " part) kept."""
    text = " ".join(str(error).split())
    for prefix in ("500 Server Error for http+docker://localhost", "400 Client Error for http+docker://localhost"):
        if text.startswith(prefix) and '("' in text:
            text = text.split('("', 1)[1].rstrip('")')
    return text if len(text) <= limit else text[: limit - 1] + "…"


def probe_key(name: str, entry: dict, docker_version: str, image: str) -> str:
    """What the verdict depends on: the kernel, the cgroup layout, Docker,
    the runtime's registration and version, the image."""
    try:
        with open("/sys/fs/cgroup/unified/cgroup.controllers", encoding="utf-8") as fh:
            unified = fh.read().strip()
    except OSError:
        unified = "-"
    raw = json.dumps([platform.release(), unified, docker_version, name, entry, version(entry), image], sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def load(key: str, path: str = CACHE_FILE) -> Verdict | None:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh).get(key)
        return Verdict(
            bool(data["works"]), str(data["reason"]), key, str(data["probed_at"]), float(data["probe_s"]), cached=True
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(verdict: Verdict, path: str = CACHE_FILE) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    record = asdict(verdict)
    record.pop("cached", None)
    data[verdict.key] = record
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
        os.replace(tmp, path)
    except OSError:
        pass  # a cache, not a record


def probe(client, name: str, image: str, use_cache: bool = True) -> Verdict:
    """Start (and remove) `true` in a bridge container of image under the
    engine runtime `name`; the verdict is cached per probe_key."""
    runtimes = client.info().get("Runtimes") or {}
    docker_version = client.info().get("ServerVersion", "?")
    entry = runtimes.get(name)
    key = probe_key(name, entry or {}, docker_version, image)
    if entry is None:
        return Verdict(False, "not registered in /etc/docker/daemon.json (run scripts/start-dockerd.sh)", key, "", 0.0)
    if use_cache and (cached := load(key)) is not None:
        return cached
    import docker
    import docker.errors
    from requests.exceptions import RequestException

    t0 = time.perf_counter()
    own = docker.from_env(timeout=PROBE_TIMEOUT_S)  # a slow start is not a failure
    try:
        own.containers.run(
            image,
            ["true"],
            runtime=name,
            remove=True,
            network_mode="bridge",
            labels={LABEL: "1", f"{LABEL}.probe": name, **owner_labels()},
        )
        works, reason = True, ""
    except docker.errors.DockerException as exc:
        works, reason = False, one_line(str(exc))
    except RequestException as exc:  # no verdict: the engine did not answer in time
        return Verdict(
            False,
            f"the engine did not answer within {PROBE_TIMEOUT_S:.0f} s ({exc})",
            key,
            "",
            time.perf_counter() - t0,
        )
    finally:
        # remove=True removes only a container that ran: one that failed to
        # start stays "Created" unless removed here (this process's own: another
        # process's probe of the same runtime may be running)
        mine = [f"{LABEL}.probe={name}", f"{LABEL}.pid={os.getpid()}"]
        try:
            for leftover in own.containers.list(all=True, filters={"label": mine}):
                leftover.remove(force=True)
        except (docker.errors.DockerException, RequestException):
            pass
        own.close()
    verdict = Verdict(works, reason, key, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), time.perf_counter() - t0)
    save(verdict)
    return verdict


def states(client, image: str | None) -> dict[str, str]:
    """Each runtime isobench offers, by its daemon.json name: "available",
    or the one-line reason it is not (found by starting a container)."""
    registered = client.info().get("Runtimes") or {}
    # runc is Docker's own, proven by the engine starting any container
    found: dict[str, str] = {}
    for runtime in RUNTIMES:
        for gvisor_platform in GVISOR_PLATFORMS if runtime == "runsc" else (None,):
            name = engine_name(runtime, gvisor_platform)
            if name not in registered:
                found[name] = "not registered in /etc/docker/daemon.json (install it, then scripts/start-dockerd.sh)"
            elif runtime == "runc":
                found[name] = "available (Docker's default)"
            elif image is None:
                found[name] = "registered, not probed (the image is not built yet)"
            else:
                v = probe(client, name, image)
                found[name] = f"available ({version(registered[name])})" if v.works else v.line()
    return found
