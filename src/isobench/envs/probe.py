"""What this host can run, and if not, why: `isobench envs`."""

from __future__ import annotations

from dataclasses import dataclass

from isobench.envs.base import EnvironmentError_


@dataclass(frozen=True)
class EnvProbe:
    name: str
    available: bool
    details: str


def probe_native() -> EnvProbe:
    from isobench.facts import cpu_model, host_facts
    facts = host_facts()
    return EnvProbe("native", True, f"{cpu_model()}, {facts['cores']} cores, kernel {facts['kernel']}")


def probe_docker() -> EnvProbe:
    from isobench.envs.docker import engine
    try:
        client = engine(timeout=10)
    except EnvironmentError_ as exc:
        return EnvProbe("docker", False, str(exc))
    info = client.info()
    bridge = "?"
    try:
        bridge = client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Subnet"]
    except Exception:  # noqa: BLE001 - informative only
        pass
    from isobench.images import image_tag
    tag = image_tag()
    have = bool(client.images.list(name=tag))
    return EnvProbe("docker", True,
                    f"Docker {info.get('ServerVersion')}, storage {info.get('Driver')}, bridge {bridge}, "
                    f"image {tag} {'built' if have else 'not built yet (isobench images build)'}")


def probe_all() -> list[EnvProbe]:
    return [probe_native(), probe_docker()]
