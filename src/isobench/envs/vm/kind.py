"""The vm kind as the registry sees it: the study-file model (VmSpec, in
spec.py), the presets (IBM's KVM configurations), the factory, the host
probe for `isobench envs`, the cleaner of leftover QEMU processes and the
guests' memory for preflight."""

from __future__ import annotations

import os
import shutil
import signal
import time
from functools import partial

from isobench.core.owner import Keeper
from isobench.envs.base import Environment
from isobench.envs.kinds import EnvKind, EnvProbe, Footprint, placed_duet_problems
from isobench.envs.pinning import placement
from isobench.envs.vm import kvm_probe
from isobench.envs.vm.environment import SOCKET_ROOT, VmEnvironment
from isobench.envs.vm.spec import VmSpec
from isobench.host.hostinfo import Finding, parse_cpulist


class VmKind(EnvKind):
    name = "vm"
    spec = VmSpec
    # IBM's KVM configurations: "stock" is a default OpenStack-like guest,
    # "tuned" passes the host CPU through, exposes a topology, pins vCPUs
    # and backs memory with huge pages.
    presets = {
        "vm-stock": {"cpu_model": "default", "topology": "none", "pin": False, "hugepages": "off"},
        "vm-tuned": {"cpu_model": "host", "topology": "auto", "pin": True, "hugepages": "on"},
        "vm-docker": {"docker": True},
    }
    # explain's settings: the presets' tuning, and Docker in the guest;
    # nearest the host: vm-tuned's (the host's CPU, one socket, pinned, huge pages)
    settings = {
        "cpu-model": ("cpu_model",),
        "topology": ("topology",),
        "pin": ("pin",),
        "hugepages": ("hugepages",),
        "docker": ("docker",),
    }
    host_side = "vm-tuned"
    rank = 20
    scratch_roots = (SOCKET_ROOT,)

    def duet_problems(self, spec, side_cpus: int) -> list[tuple[str, str]]:
        problems = placed_duet_problems(spec.instances, {"pin": spec.pin})
        if spec.vcpus > side_cpus:
            problems.append(
                (
                    "vcpus",
                    f"{spec.vcpus} vCPUs do not fit a duet side of {side_cpus} host "
                    f"CPU{'s' if side_cpus != 1 else ''}; use vcpus = {side_cpus} or "
                    'schedule = "sequential"',
                )
            )
        return problems

    def make(self, name, spec, *, run_id, host, image, index) -> Environment:
        # "node": the vCPUs float within the node's CPUs; "core": instance
        # i's vCPUs start where instance i-1's ended
        where = placement(spec.pin, index) if spec.pin == "node" else None  # "node" always places
        node_cpus = parse_cpulist(where) if where is not None else None
        return VmEnvironment(
            name=name,
            spec=spec,
            run_id=run_id,
            host_cores=host.cores,
            host_mem_bytes=host.mem_bytes,
            pin_offset=index * spec.vcpus,
            pin_cpus=node_cpus,
        )

    def footprint(self, spec: VmSpec) -> list[Footprint]:  # type: ignore[override]  # kind_of pairs kind and spec
        # guests' RAM, every instance at once (all environments are up together)
        return [Footprint("memory_mb", "memory", spec.memory_mb * 2**20 * spec.instances)]

    def probe(self) -> EnvProbe:
        """QEMU, whether KVM can run a guest (the cached verdict of the boot
        probe; none yet means the first vm run will probe), huge pages, vhost."""
        from isobench.host.hostinfo import hugetlbfs_free_mb, thp_mode
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
                kvm = f"KVM: {kvm_probe.NOT_PROBED} ({kvm_probe.when_probed()})"
            elif cached.usable:
                kvm = f"KVM: yes ({cached.reason})"
            else:
                kvm = (
                    f"KVM: cannot run a guest ({cached.reason}; probed {cached.probed_at}); "
                    "VMs run under TCG (emulated)"
                )
        free_mb, mount = hugetlbfs_free_mb()
        huge = (
            f"huge pages: {free_mb} MiB reserved free on {mount}"
            if mount and free_mb
            else f"huge pages: none reserved, THP {thp_mode()}"
        )
        vhost = "vhost-net: yes" if os.path.exists("/dev/vhost-net") else "vhost-net: no (/dev/vhost-net missing)"
        kernel = "guest kernel: built" if kernel_paths() else "guest kernel: not built yet (isobench images build)"
        return EnvProbe("vm", True, f"QEMU {qemu}; {kvm}; {huge}; {vhost}; {kernel}")

    def clean(self, run_id: str | None, keeper: Keeper) -> list[str]:
        return kill_leftover_vms(run_id, keeper)

    def host_readings(self) -> dict:
        from isobench.images import recipe_hash

        try:
            cached = kvm_probe.load(kvm_probe.host_key(recipe_hash()))
        except Exception:  # noqa: BLE001 - informative only
            cached = None
        return {
            "kvm_present": os.path.exists("/dev/kvm"),
            "kvm_verdict": None if cached is None else (cached.usable, cached.reason),
            "vhost_net": os.path.exists("/dev/vhost-net"),
        }

    def host_findings(self, r: dict) -> list[Finding]:
        out = []
        if not r.get("kvm_present"):
            out.append(
                Finding(
                    "kvm",
                    "warn",
                    "/dev/kvm missing",
                    "load kvm_intel/kvm_amd or enable virtualisation in firmware; VMs will run emulated (TCG)",
                )
            )
        elif r.get("kvm_verdict"):
            usable, why = r["kvm_verdict"]
            out.append(
                Finding(
                    "kvm",
                    "ok" if usable else "warn",
                    "guest boots" if usable else f"unusable: {why}",
                    "" if usable else "VM columns run under TCG and are marked emulated",
                )
            )
        else:
            out.append(Finding("kvm", "info", kvm_probe.NOT_PROBED, kvm_probe.when_probed()))
        vhost = r.get("vhost_net")
        out.append(
            Finding(
                "vhost-net",
                "ok" if vhost else "info",
                "available" if vhost else "missing",
                "" if vhost else "modprobe vhost_net; without it virtio-net runs in QEMU's thread",
            )
        )
        return out


def is_isobench_qemu(cmdline: list[str], run_id: str | None) -> bool:
    """Is this argv an isobench guest's QEMU (of run_id, if given)? Only a
    qemu-system binary whose -name is isobench-<run id>-... qualifies."""
    if not cmdline or not os.path.basename(cmdline[0]).startswith("qemu-system"):
        return False
    try:
        name = cmdline[cmdline.index("-name") + 1].split(",")[0]
    except (ValueError, IndexError):
        return False
    if name.startswith("guest="):
        name = name[len("guest=") :]
    prefix = f"isobench-{run_id}-" if run_id else "isobench-"
    return name.startswith(prefix)


def kill_leftover_vms(run_id: str | None, keeper: Keeper) -> list[str]:
    """SIGKILL isobench's QEMU processes (never another QEMU, nor a live run's)."""
    killed = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
        except OSError:
            continue
        if is_isobench_qemu(argv, run_id):
            if keeper.keeps_run(f"qemu process {pid}", partial(is_isobench_qemu, argv)):
                continue
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed.append(pid)
            except OSError:
                continue
    deadline = time.monotonic() + 10
    while killed and time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in killed):
        time.sleep(0.05)
    return [f"qemu process {p}" for p in killed]
