"""A QEMU guest as an environment: KVM where it can run the guest, else
TCG; driven only through the QEMU guest agent; with docker = true, the
workloads run in a container of the same image inside the guest
(vm-docker). The layout of one running VM is in envs/vm/__init__.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from dataclasses import dataclass, field

from isobench.core import sink
from isobench.core.errors import EnvironmentError_
from isobench.core.proc import KILL_GRACE_S, ExecResult, bounded, bounded_timed_out, run_argv
from isobench.core.workspace import DATA_ROOT, GUEST_DATA_DIR, GUEST_TMP_DIR
from isobench.envs.base import Environment, Paths
from isobench.envs.vm import guestnet
from isobench.envs.vm.guestagent import GuestAgent
from isobench.envs.vm.guestdocker import GUEST_DOCKER_BIP, GuestDocker, exec_argv
from isobench.envs.vm.qemu import READY_TIMEOUT_KVM_S, READY_TIMEOUT_TCG_S, QemuProcess, qemu_config
from isobench.envs.vm.qemu_cmdline import Nic, build_argv
from isobench.envs.vm.spec import VmSpec
from isobench.host.counters import vmm_threads

SOCKET_ROOT = "/run/isobench"
DATA_DIR, TMP_DIR = GUEST_DATA_DIR, GUEST_TMP_DIR

_WARNED: list = []


def _warn(message: str) -> None:
    sink.say(f"isobench: {message}")


@dataclass
class VmEnvironment(Environment):
    spec: VmSpec = field(default_factory=VmSpec)
    kind: str = "vm"
    run_id: str = "adhoc"
    host_cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    host_mem_bytes: int = 0
    # set by start()
    accel: str | None = None
    accel_note: str = ""
    _qemu: QemuProcess | None = None
    _ga: GuestAgent | None = None
    _argv: list = field(default_factory=list)
    _boot: dict = field(default_factory=dict)
    _memory_note: str = ""
    _pinning: dict = field(default_factory=dict)
    _image: str = ""
    _container: str | None = None
    ready_timeout_override: float | None = None  # the KVM probe's short deadline
    pin_offset: int = 0  # instance i of a group pins its vCPUs from host CPU i*vcpus on
    pin_cpus: list[int] | None = None  # pin = "node": the node's host CPUs its vCPUs float on
    # the NIC on the client host's bridge (runs with server workloads)
    _tap: str | None = None
    _tap_index: int | None = None
    _nic_facts: dict = field(default_factory=dict)
    _published: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.spec.docker:
            self.kind = "vm-docker"

    # -- names and places -------------------------------------------------

    @property
    def slug(self) -> str:
        return f"{self.run_id}-{self.name}"

    @property
    def vm_name(self) -> str:
        return f"isobench-{self.slug}"

    @property
    def vm_dir(self) -> str:
        return os.path.join(DATA_ROOT, f"{self.slug}.vm")

    @property
    def sock_dir(self) -> str:
        return os.path.join(SOCKET_ROOT, self.slug)

    @property
    def paths(self) -> Paths:
        return Paths(data=DATA_DIR, tmp=TMP_DIR)

    @property
    def docker(self) -> bool:
        return self.spec.docker

    @property
    def container_name(self) -> str:
        return f"isobench-{self.slug}"

    # -- start ------------------------------------------------------------

    def pre_start(self) -> None:
        """The one-off costs before a first boot (the VM disk, the KVM
        probe), so a group's density timing counts only the boot itself."""
        self._ensure_disk()
        if self.accel is None:
            from isobench.images import recipe_hash

            self._image = recipe_hash()
            self.accel = self._resolve_accel()

    def _ensure_disk(self) -> str:
        from isobench.envs.vm.disk import ensure_vm_disk

        try:
            return ensure_vm_disk(log=_warn)
        except Exception as exc:  # noqa: BLE001 - one line for the runner
            raise EnvironmentError_(f"{self.name}: cannot make the VM disk: {exc}") from None

    def start(self) -> None:
        from isobench.images import kernel_paths, recipe_hash

        base = self._ensure_disk()
        kernel = kernel_paths()
        if kernel is None:
            raise EnvironmentError_(f"{self.name}: the image has no kernel (rebuild: isobench images build)")
        self._image = recipe_hash()
        if self.accel is None:
            self.accel = self._resolve_accel()
        try:
            if self.attached:
                self._tap, self._tap_index = guestnet.create_tap(self.run_id, self.name)
                guestnet.join_bridge(self.run_id, self._tap, self.name)
            self._boot_vm(base, kernel)
            if self._tap is not None:
                ga, nic, tap_index, qemu = self._ga, self._nic(), self._tap_index, self._qemu
                assert ga is not None and nic is not None and tap_index is not None and qemu is not None  # booted
                self._nic_facts = guestnet.configure_guest(
                    ga, self.run_id, nic, guestnet.guest_iface(self.bench_addr, tap_index), qemu.check_alive
                )
            if self.docker:
                self._start_docker()
        except BaseException:
            self.stop()
            raise

    def _resolve_accel(self) -> str:
        wanted = self.spec.accel
        if wanted in ("kvm", "tcg"):
            self.accel_note = f"accel={wanted} as configured"
            return wanted
        from isobench.envs.vm import kvm_probe

        v = kvm_probe.verdict(self._kvm_boot_probe, self._image)
        if v.usable:
            self.accel_note = "KVM: " + v.reason
            return "kvm"
        self.accel_note = f"TCG: {v.reason}"
        if not _WARNED:  # one line per process, not per environment
            _WARNED.append(True)
            _warn(f"KVM cannot run the guest ({v.reason}); VMs fall back to TCG (emulated, not comparable to KVM)")
        return "tcg"

    def _kvm_boot_probe(self, deadline_s: float) -> tuple[bool, str]:
        """Boot the real guest with accel=kvm and a short deadline."""
        # the smallest guest of this configuration (a copy as it is: nothing
        # here is validated again, as the study already was)
        smallest = dict(docker=False, pin=False, hugepages="off", vcpus=1, memory_mb=512, data_disk_mb=256)
        small = self.spec.model_copy(update=smallest)
        probe = VmEnvironment(
            name="kvmprobe",
            spec=small,
            run_id=f"{self.run_id}",
            host_cores=self.host_cores,
            accel="kvm",
            pin_cpus=self.pin_cpus,
        )
        probe.ready_timeout_override = deadline_s
        try:
            probe.start()
            return True, f"guest agent answered {probe._boot.get('ready_s', 0):.1f} s after start"
        except EnvironmentError_ as exc:
            if "stayed silent" in str(exc):
                return False, (
                    f"a guest booted with -accel kvm printed nothing and its agent did not answer "
                    f"within {deadline_s:.0f} s: it hangs before the kernel starts (e.g. /dev/kvm "
                    "of a paravirtual hypervisor such as PVM)"
                )
            return False, str(exc).split(": ", 1)[-1]
        finally:
            probe.stop()

    def _nic(self) -> Nic | None:
        if self._tap is None or self._tap_index is None:  # made together by create_tap
            return None
        return guestnet.nic(self.run_id, self._tap, self._tap_index)

    def _boot_vm(self, base: str, kernel: tuple[str, str]) -> None:
        t0 = time.monotonic()
        for d in (self.vm_dir, self.sock_dir):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d, mode=0o700)
        from isobench.images import rootfs_tar

        assert self.accel is not None  # resolved by start() before the boot
        cfg, self._memory_note = qemu_config(
            self.spec,
            accel=self.accel,
            name=self.vm_name,
            vm_dir=self.vm_dir,
            sock_dir=self.sock_dir,
            kernel=kernel,
            extra_disks=(rootfs_tar(),) if self.docker else (),
            nic=self._nic(),
        )
        if len(cfg.qga_socket) > 100:
            raise EnvironmentError_(f"{self.name}: socket path too long: {cfg.qga_socket}")
        _check_run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, cfg.root_disk], 60)
        from isobench.envs.vm.disk import docker_data_disk_path, make_data_disk, seed_data_disk

        size_mb = self.spec.data_disk_mb
        cached = docker_data_disk_path(self._image) if self.docker else None
        if cached and os.path.isfile(cached):
            # the image already imported by an earlier vm-docker run
            seed_data_disk(cached, cfg.data_disk, size_mb)
        else:
            make_data_disk(cfg.data_disk, size_mb)
        self._argv = build_argv(cfg)
        self._qemu = QemuProcess(self.name, self.vm_dir)
        t_spawn = time.monotonic()
        self._qemu.spawn(self._argv)
        limit = self.ready_timeout_override or (READY_TIMEOUT_KVM_S if self.accel == "kvm" else READY_TIMEOUT_TCG_S)
        deadline = t_spawn + limit
        self._ga = self._qemu.connect(cfg, deadline)
        self._qemu.wait_agent(self._ga, deadline, limit, self.accel)
        t_ready = time.monotonic()
        # ready: from starting QEMU to the agent's first answer; making the
        # overlay and data disk before that is reported apart
        self._boot = {"ready_s": round(t_ready - t_spawn, 3), "disk_prep_s": round(t_spawn - t0, 3)}
        self._boot.update(self._ga.boot_times(self.spec.guest_init))
        if self.spec.pin:
            # pin = "node": vCPUs float within their node's CPUs
            self._pinning = self._qemu.pin_vcpus(self.pin_cpus, self.pin_offset)

    def _start_docker(self) -> None:
        assert self._ga is not None  # the guest agent is up once the VM booted
        boot, startup_s, published = GuestDocker(self._ga).start(
            image=self._image,
            data_disk=os.path.join(self.vm_dir, "data.raw"),
            container=self.container_name,
            run_id=self.run_id,
            tmpfs_mb=self.spec.tmpfs_mb,
            publish_on=self.guest_addr if self._tap is not None else None,
            ports=self.bench_ports,
        )
        self._container = self.container_name
        if published is not None:
            self._published = published
            self._nic_facts["published"] = dict(published)
        self._boot.update(boot)
        # ready = VM ready + dockerd + container, without the one-off import
        self._boot["ready_s"] = round(self._boot["ready_s"] + startup_s, 3)

    # -- the benchmark network ------------------------------------------------

    @property
    def guest_addr(self) -> str:
        """The guest's own address on the client host's bridge."""
        if self._tap_index is None:
            raise EnvironmentError_(f"{self.name}: the guest has no NIC (no client host attached)")
        return str(guestnet.guest_iface(self.bench_addr, self._tap_index).ip)

    def server_bind_addr(self) -> str:
        # vm: the guest's own bridge address; vm-docker: everything inside
        # the container's namespace (its only address is on dockerd's bridge)
        return "0.0.0.0" if self.docker else self.guest_addr

    def endpoint(self, port: int, proto: str = "tcp") -> tuple[str, int]:
        if not self.docker:
            return self.guest_addr, port
        published = self._published.get(f"{port}/{proto}")
        if published is None:
            raise EnvironmentError_(f"{self.name}: port {port}/{proto} was not published in the guest")
        return self.guest_addr, published

    # -- exec -------------------------------------------------------------

    def _agent(self) -> GuestAgent:
        if self._ga is None:
            raise EnvironmentError_(f"{self.name}: not started")
        return self._ga

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        bound = bounded(argv, timeout)
        if self._container is not None:
            full = exec_argv(self._container, bound, cwd)
        elif cwd:
            full = ["sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", cwd, *bound]
        else:
            full = bound
        r = self._agent().exec(full, timeout + KILL_GRACE_S + 15)
        timed_out = r.timed_out or bounded_timed_out(r.returncode, r.wall_s, timeout)
        return ExecResult(list(argv), r.returncode, r.stdout, r.stderr, r.wall_s, timed_out=timed_out)

    def write_file(self, path: str, content: bytes) -> None:
        if self._container is not None:
            GuestDocker(self._agent()).write(self._container, path, content)
            return
        self._agent().write(path, content)

    # -- capabilities ---------------------------------------------------------

    def measure_startup(self, timeout: float) -> dict[str, float]:
        """Boot a fresh guest with this one's configuration, to ready, and
        stop it: the startup workload's sample."""
        twin = VmEnvironment(
            name=f"{self.name[:22]}-boot",
            spec=self.spec,
            run_id=self.run_id,
            host_cores=self.host_cores,
            host_mem_bytes=self.host_mem_bytes,
            accel=self.accel,
            pin_cpus=self.pin_cpus,
        )
        if self.attached:
            # the twin boots with a NIC too (same device set, comparable boot);
            # it takes the next free tap of the run, so the next address
            twin.expose(self.bench_addr, self.bench_ports)
        try:
            twin.start()
            return {k: float(v) for k, v in twin._boot.items() if isinstance(v, (int, float))}
        finally:
            twin.stop()

    def health(self, timeout: float = 10) -> str | None:
        """QEMU still runs and its guest agent answers a guest-sync (a few
        tries within `timeout`: a busy TCG guest can be slow to answer)."""
        if self._qemu is None or self._ga is None:
            return None
        try:
            self._qemu.check_alive()
        except EnvironmentError_ as exc:
            return f"{exc} (the guest is gone)"
        deadline = time.monotonic() + timeout
        n = 0
        while time.monotonic() < deadline:
            n += 1
            if self._ga.answers(n):
                return None
        try:
            self._qemu.check_alive()
        except EnvironmentError_ as exc:
            return f"{exc} (the guest is gone)"
        return f"{self.name}: the guest agent stopped answering (no reply within {timeout:.0f} s)"

    def place(self, cpus: tuple[int, ...] | None) -> None:
        # every QEMU thread (vCPUs, main loop, I/O): the guest's work and the
        # emulation that carries it stay on the side's CPUs
        pid = self.vmm_pid
        if pid is None:
            raise EnvironmentError_(f"{self.name}: not started")
        target = set(cpus) if cpus is not None else set(os.sched_getaffinity(0))
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                    os.sched_setaffinity(int(tid), target)
        except OSError as exc:
            raise EnvironmentError_(
                f"{self.name}: cannot move QEMU (pid {pid}) to CPUs {sorted(target)}: {exc}"
            ) from None
        if cpus is None and self.spec.pin and self._qemu is not None:  # started: vmm_pid above
            self._pinning = self._qemu.pin_vcpus(self.pin_cpus, self.pin_offset)

    @property
    def vmm_pid(self) -> int | None:
        """QEMU's pid on the host (density reads its PSS)."""
        return self._qemu.pid if self._qemu is not None else None

    def counters(self) -> dict[str, float]:
        """QEMU's CPU time by thread role (vCPU / main loop / I/O), from the
        debug-threads=on thread names."""
        pid = self.vmm_pid
        return vmm_threads(pid) if pid else {}

    # -- stop and facts -------------------------------------------------------

    def discards_contents(self) -> bool:
        return True  # stop() ends QEMU and removes its disks: the guest and all in it

    def stop(self) -> None:
        if self._qemu is not None:
            self._qemu.stop()
        if self._ga is not None:
            self._ga.close()
        self._ga = None
        self._container = None
        if self._tap is not None:  # QEMU is gone: nothing holds it any more
            guestnet.delete_tap(self._tap)
            self._tap = None
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        shutil.rmtree(self.vm_dir, ignore_errors=True)

    def recorded_options(self) -> dict:
        options = super().recorded_options()
        if self.pin_cpus is not None:
            options["pin_cpus"] = list(self.pin_cpus)
        return options

    def facts(self) -> dict:
        from isobench.envs.vm.kvm_probe import qemu_version

        facts = super().facts()
        facts.update(
            {
                "accel": self.accel,
                "emulated": self.accel == "tcg",
                "accel_reason": self.accel_note,
                "qemu_version": qemu_version(),
                "qemu_argv": list(self._argv),
                "cpu_model_used": _arg_after(self._argv, "-cpu"),
                "memory_backing": self._memory_note,
                "pinning": self._pinning or None,
                "boot": dict(self._boot),
                "image": self._image,
            }
        )
        if self._nic_facts:
            facts["nic"] = dict(self._nic_facts)
        if self.docker:
            facts["container"] = self.container_name
            facts["guest_docker_bip"] = GUEST_DOCKER_BIP
        return facts


def _arg_after(argv: list[str], flag: str) -> str | None:
    try:
        return argv[argv.index(flag) + 1]
    except (ValueError, IndexError):
        return None


def _check_run(argv: list[str], timeout: float) -> None:
    r = run_argv(argv, timeout)
    if r.timed_out:
        raise EnvironmentError_(f"timed out: {' '.join(argv)}")
    if r.returncode != 0:
        raise EnvironmentError_(f"exit {r.returncode}: {' '.join(argv)}: {r.stderr.strip()}")
