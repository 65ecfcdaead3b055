"""One QEMU process: its configuration from the guest's spec, spawned so it
dies with isobench, its QMP and guest-agent sockets connected, the agent
awaited, its vCPU threads pinned, and quit."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time

from isobench.core.errors import EnvironmentError_
from isobench.core.lifetime import die_with_parent
from isobench.envs.vm.guestagent import GuestAgent
from isobench.envs.vm.qemu_cmdline import MemoryBacking, Nic, QemuConfig, Topology
from isobench.envs.vm.qmp_sync import QmpTimeout, SyncQmp
from isobench.envs.vm.spec import VmSpec
from isobench.host.hostinfo import hugetlbfs_free_mb, thp_mode

READY_TIMEOUT_TCG_S = 240.0
READY_TIMEOUT_KVM_S = 120.0


def qemu_config(
    spec: VmSpec,
    *,
    accel: str,
    name: str,
    vm_dir: str,
    sock_dir: str,
    kernel: tuple[str, str],
    extra_disks: tuple[str, ...],
    nic: Nic | None,
) -> tuple[QemuConfig, str]:
    """The guest's QEMU configuration, and how its memory is backed (a
    fact: huge pages fall back to THP when too few are reserved)."""
    vcpus = spec.vcpus
    cpu_model = {"default": "qemu64", "host": "host" if accel == "kvm" else "max"}[spec.cpu_model]
    topology = None
    if spec.topology == "auto":
        topology = Topology(1, vcpus, 1)
    elif spec.topology != "none":
        s, c, t = (int(x) for x in spec.topology.split("x"))
        topology = Topology(s, c, t)
    memory = MemoryBacking("default")
    mem_mb = spec.memory_mb
    memory_note = f"default anonymous memory (host THP: {thp_mode()})"
    if spec.hugepages == "on":
        free_mb, path = hugetlbfs_free_mb()
        if path and free_mb >= mem_mb:
            memory = MemoryBacking("hugetlbfs", path)
            memory_note = f"hugetlbfs {path}, preallocated ({free_mb} MiB reserved and free)"
        else:
            memory = MemoryBacking("thp-prealloc")
            memory_note = (
                f"THP: anonymous memory, preallocated (no {mem_mb} MiB of reserved huge pages: "
                f"{free_mb} MiB free; host THP: {thp_mode()})"
            )
    kargs: tuple[str, ...] = ()
    if spec.tmpfs_mb:
        kargs = (f"isobench.tmpfs_mb={spec.tmpfs_mb}",)
    cfg = QemuConfig(
        name=name,
        accel=accel,
        vcpus=vcpus,
        memory_mb=mem_mb,
        cpu_model=cpu_model,
        kernel=kernel[0],
        initrd=kernel[1],
        root_disk=os.path.join(vm_dir, "root.qcow2"),
        data_disk=os.path.join(vm_dir, "data.raw"),
        qga_socket=os.path.join(sock_dir, "qga.sock"),
        qmp_socket=os.path.join(sock_dir, "qmp.sock"),
        serial_log=os.path.join(vm_dir, "serial.log"),
        pidfile=os.path.join(vm_dir, "qemu.pid"),
        topology=topology,
        memory=memory,
        disk_cache=spec.disk_cache,
        disk_aio=spec.disk_aio,
        root_bus=spec.root_bus,
        guest_init=spec.guest_init,
        extra_disks=extra_disks,
        kernel_args=kargs,
        nic=nic,
    )
    return cfg, memory_note


class QemuProcess:
    """The running QEMU of one guest; `owner` starts every error message."""

    def __init__(self, owner: str, vm_dir: str) -> None:
        self.owner = owner
        self.vm_dir = vm_dir
        self.proc: subprocess.Popen | None = None
        self.qmp: SyncQmp | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def spawn(self, argv: list[str]) -> None:
        log = open(os.path.join(self.vm_dir, "qemu.log"), "wb")
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        except OSError as exc:
            raise EnvironmentError_(f"{self.owner}: cannot start {argv[0]}: {exc}") from None
        finally:
            log.close()

    def connect(self, cfg: QemuConfig, deadline: float) -> GuestAgent:
        """QMP, then the guest agent's channel, once QEMU has opened them."""
        self.qmp = SyncQmp(cfg.qmp_socket, greeting=True, name="qmp")
        self._connect(self.qmp, cfg.qmp_socket, deadline)
        ga = SyncQmp(cfg.qga_socket, greeting=False, name="qga")
        self._connect(ga, cfg.qga_socket, deadline)
        return GuestAgent(ga, self.owner)

    def _connect(self, client: SyncQmp, path: str, deadline: float) -> None:
        while True:
            self.check_alive()
            if os.path.exists(path):
                try:
                    client.connect(timeout=5)
                    return
                except (OSError, QmpTimeout, Exception):  # noqa: BLE001 - retried until the deadline
                    pass
            if time.monotonic() > deadline:
                raise EnvironmentError_(f"{self.owner}: QEMU did not open {path}")
            time.sleep(0.02)

    def wait_agent(self, ga: GuestAgent, deadline: float, limit: float, accel: str | None) -> None:
        """guest-sync until the agent answers."""
        n = 0
        while True:
            self.check_alive()
            n += 1
            if ga.answers(n):
                return
            if time.monotonic() > deadline:
                raise EnvironmentError_(
                    f"{self.owner}: no answer from the guest agent within {limit:.0f} s "
                    f"(accel {accel}; {self.serial_summary()})"
                )

    def serial_summary(self) -> str:
        try:
            with open(os.path.join(self.vm_dir, "serial.log"), "rb") as fh:
                text = fh.read().decode(errors="replace")
        except OSError:
            text = ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "\x1b" not in ln]
        if not lines:
            return "the serial console stayed silent: the guest never reached the kernel's console"
        return f"last console line: {lines[-1][:120]!r}"

    def check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = ""
            with contextlib.suppress(OSError):
                with open(os.path.join(self.vm_dir, "qemu.log"), "rb") as fh:
                    tail = "".join(fh.read().decode(errors="replace").strip().splitlines()[-1:])
            code = self.proc.returncode
            how = f"was killed by signal {-code}" if code < 0 else f"exited with {code}"
            raise EnvironmentError_(f"{self.owner}: QEMU {how}" + (f": {tail}" if tail else ""))

    def pin_vcpus(self, node_cpus: list[int] | None, pin_offset: int) -> dict:
        """Each vCPU thread on its host CPU (vCPU i on allowed CPU i+offset,
        round robin), or all of them on a NUMA node's CPUs; the mapping."""
        assert self.qmp is not None, "pin_vcpus after start"
        cpus = self.qmp.execute("query-cpus-fast", timeout=10)
        host = sorted(os.sched_getaffinity(0))
        mapping = {}
        for entry in cpus:
            idx, tid = int(entry["cpu-index"]), int(entry["thread-id"])
            target = set(node_cpus) if node_cpus else {host[(idx + pin_offset) % len(host)]}
            os.sched_setaffinity(tid, target)
            mapping[f"vcpu{idx}"] = {"thread": tid, "host_cpu": min(target) if len(target) == 1 else sorted(target)}
        return mapping

    def stop(self) -> None:
        """quit over QMP, then wait (SIGKILL after 10 s); safe to call twice."""
        if self.qmp is not None and self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(Exception):
                self.qmp.execute("quit", timeout=5)
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                self.proc.wait(10)
            self.proc = None
        if self.qmp is not None:
            with contextlib.suppress(Exception):
                self.qmp.close()
        self.qmp = None
