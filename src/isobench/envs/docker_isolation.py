"""A Docker container's isolation: what the spec asks the engine for (its
PID and IPC namespaces, its seccomp and AppArmor profiles), what the engine
says it gave (container inspect, read back after every start), and whether
this engine can give it at all (its info's SecurityOptions, before anything
starts). Pure but for the one engine read of ``engine_check``.

Docker's defaults are never passed: a spec that keeps them starts its
container exactly as before these options existed."""

from __future__ import annotations

from isobench.core.errors import EnvironmentError_
from isobench.envs.docker_spec import DockerSpec

PRIVATE, HOST = "private", "host"
DEFAULT, UNCONFINED = "default", "unconfined"
PROFILES = ("seccomp", "apparmor")  # spec fields passed as --security-opt NAME=unconfined
NAMESPACES = {"pid": "PidMode", "ipc": "IpcMode"}  # spec field -> its HostConfig key
# SecurityOptions names of engines that cannot share this host's own
# namespaces: a rootless engine's "host" is its own user namespace's; Docker's
# docs call userns-remap incompatible with sharing the host's PID namespace
NOT_THE_HOSTS = {"rootless": ("is rootless", ("pid", "ipc")), "userns": ("remaps users", ("pid",))}
# docker-placebo: every namespace the engine can share shared, both profiles
# off, the workload's files on a volume, no limit (DockerSpec.least_isolation)
PLACEBO = {
    "network": HOST,
    "pid": HOST,
    "ipc": HOST,
    "storage": "volume",
    "seccomp": UNCONFINED,
    "apparmor": UNCONFINED,
}
NO_APPARMOR = "none"  # what an engine on a host without AppArmor applies, asked or not


def asked(spec: DockerSpec) -> dict[str, str]:
    """What the engine must report back: the spec's isolation, in its words."""
    return {
        "network": spec.network,
        "pid": spec.pid,
        "ipc": spec.ipc,
        "seccomp": spec.seccomp,
        "apparmor": spec.apparmor,
        "storage": spec.storage,
    }


def shared(spec: DockerSpec) -> list[str]:
    """The namespaces (spec fields) the spec shares with the host."""
    return [field for field in NAMESPACES if asked(spec)[field] == HOST]


def run_options(spec: DockerSpec) -> dict:
    """The docker SDK's containers.run arguments for the spec's isolation."""
    out: dict = {f"{field}_mode": HOST for field in shared(spec)}
    unconfined = [f"{name}={UNCONFINED}" for name in PROFILES if asked(spec)[name] == UNCONFINED]
    if unconfined:
        out["security_opt"] = unconfined
    return out


def tmpfs_dirs(spec: DockerSpec, tmp_dir: str, data_dir: str) -> list[str]:
    """The container's RAM-backed directories: its scratch one always, its
    data one too with storage = "tmpfs"."""
    return [tmp_dir, data_dir] if spec.storage == "tmpfs" else [tmp_dir]


def _storage(attrs: dict, data_dir: str) -> str:
    """Where the engine put the data directory: a volume mount, a tmpfs
    (HostConfig.Tmpfs: `--tmpfs` mounts are not among Mounts), else the overlay."""
    mounts = attrs.get("Mounts") or []
    if any(m.get("Destination") == data_dir and m.get("Type") == "volume" for m in mounts):
        return "volume"
    return "tmpfs" if data_dir in ((attrs.get("HostConfig") or {}).get("Tmpfs") or {}) else "overlay"


def _profiles(security_opt: list[str]) -> dict[str, str]:
    """["seccomp=unconfined", "label=disable"] -> {"seccomp": "unconfined", ...}
    (Docker once wrote "seccomp:unconfined"; both are read)."""
    out = {}
    for entry in security_opt:
        sep = "=" if "=" in entry else ":"
        name, _, value = entry.partition(sep)
        out[name] = value
    return out


def read_back(attrs: dict, data_dir: str) -> dict[str, str]:
    """The container's isolation as the engine reports it (``docker inspect``),
    in the spec's words, and the AppArmor profile it applied."""
    host = attrs.get("HostConfig") or {}
    profiles = _profiles(host.get("SecurityOpt") or [])
    got = {"network": host.get("NetworkMode") or "?"}
    for field, key in NAMESPACES.items():
        mode = host.get(key) or ""
        # an own namespace reads "" (PID) or "private"/"shareable" (IPC: the daemon's default-ipc-mode)
        got[field] = PRIVATE if mode in ("", PRIVATE, "shareable") else mode
    for name in PROFILES:
        got[name] = UNCONFINED if profiles.get(name) == UNCONFINED else DEFAULT
    got["storage"] = _storage(attrs, data_dir)
    got["apparmor_applied"] = attrs.get("AppArmorProfile") or NO_APPARMOR
    return got


def mismatch(spec: DockerSpec, got: dict[str, str]) -> str | None:
    """Each option the engine did not give as asked, in one line; None when all were."""
    wrong = [f'{k} = "{v}" but the engine reports {got.get(k)!r}' for k, v in asked(spec).items() if got.get(k) != v]
    return "; ".join(wrong) or None


def verified(spec: DockerSpec, attrs: dict, data_dir: str) -> dict[str, str]:
    """read_back(), refused in one line where it is not what the spec asks."""
    got = read_back(attrs, data_dir)
    wrong = mismatch(spec, got)
    if wrong:
        raise EnvironmentError_(f"the engine did not give what was asked: {wrong}")
    return got


def option_names(security_options: list[str]) -> set[str]:
    """The names in `docker info`'s SecurityOptions ("name=seccomp,profile=builtin" -> "seccomp")."""
    names = set()
    for entry in security_options:
        for part in entry.split(","):
            key, _, value = part.partition("=")
            if key == "name":
                names.add(value)
    return names


def engine_problems(spec: DockerSpec, security_options: list[str]) -> list[tuple[str, str]]:
    """What an engine whose info says ``security_options`` cannot give the
    spec: (field, one line) pairs. Only a shared namespace can fail: every
    engine gives an unconfined profile (moby accepts seccomp=unconfined even
    built without seccomp, where a container has none anyway; on a host
    without AppArmor no profile applies, asked or not), so what one comes to
    is recorded with the run (read_back), not refused."""
    names = option_names(security_options)
    problems = []
    for field in shared(spec):
        why = [
            f"{reason} (SecurityOptions name={key})"
            for key, (reason, hit) in NOT_THE_HOSTS.items()
            if key in names and field in hit
        ]
        if why:
            line = (
                f'"host" would not be this host\'s own namespace: this Docker Engine {" and ".join(why)}; run a '
                f'rootful dockerd without userns-remap, or {field} = "{PRIVATE}"'
            )
            problems.append((field, line))
    return problems


def engine_check(spec: DockerSpec) -> list[tuple[str, str]]:
    """engine_problems() against the local engine, asked only when the spec
    shares a namespace; no engine: nothing to say here (its error comes at start)."""
    if not shared(spec):
        return []
    from isobench.core.dockerclient import engine_or_none

    client = engine_or_none()
    if client is None:
        return []
    try:
        return engine_problems(spec, client.info().get("SecurityOptions") or [])
    finally:
        client.close()


def facts(spec: DockerSpec, got: dict[str, str]) -> dict:
    """What a started container's facts add: its isolation as read back, and
    the placebo's marker (the spec asks for the least isolation; the report
    says its change is the harness's own bias, results/placebo.py)."""
    out: dict = {"isolation": got} if got else {}
    if spec.least_isolation:
        out["placebo"] = True
    return out
