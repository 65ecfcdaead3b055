"""What this host can run, and if not, why: `isobench envs`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from isobench.errors import EnvironmentError_


@dataclass(frozen=True)
class EnvProbe:
    name: str
    available: bool
    details: str


def probe_native() -> EnvProbe:
    from isobench.facts import host_facts
    from isobench.hostinfo import cpu_model
    facts = host_facts()
    return EnvProbe("native", True, f"{cpu_model()}, {facts['cores']} cores, kernel {facts['kernel']}")


def probe_docker() -> EnvProbe:
    from isobench.dockerclient import engine
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


def probe_vm() -> EnvProbe:
    """QEMU, whether KVM can run a guest (the cached verdict of the boot
    probe; none yet means the first vm run will probe), huge pages, vhost."""
    import shutil

    from isobench.envs import kvm_probe
    from isobench.hostinfo import hugetlbfs_free_mb, thp_mode
    from isobench.images import kernel_paths, recipe_hash

    qemu = kvm_probe.qemu_version()
    if shutil.which("qemu-system-x86_64") is None:
        return EnvProbe("vm", False, "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)")
    problem = kvm_probe.kvm_device_problem()
    if problem is not None:
        kvm = f"KVM: no ({problem}); VMs run under TCG (emulated)"
    else:
        cached = kvm_probe.load(kvm_probe.host_key(recipe_hash()))
        if cached is None:
            kvm = "KVM: /dev/kvm present, not probed yet (the first vm run boots a guest to find out, <30 s)"
        elif cached.usable:
            kvm = f"KVM: yes ({cached.reason})"
        else:
            kvm = f"KVM: cannot run a guest ({cached.reason}; probed {cached.probed_at}); VMs run under TCG (emulated)"
    free_mb, mount = hugetlbfs_free_mb()
    huge = (f"huge pages: {free_mb} MiB reserved free on {mount}" if mount and free_mb
            else f"huge pages: none reserved, THP {thp_mode()}")
    vhost = "vhost-net: yes" if os.path.exists("/dev/vhost-net") else "vhost-net: no (/dev/vhost-net missing)"
    kernel = "guest kernel: built" if kernel_paths() else "guest kernel: not built yet (isobench images build)"
    return EnvProbe("vm", True, f"QEMU {qemu}; {kvm}; {huge}; {vhost}; {kernel}")


def probe_all() -> list[EnvProbe]:
    return [probe_native(), probe_docker(), probe_vm()]
