"""A QEMU guest (KVM where it can run the guest, else TCG), driven only
through the QEMU guest agent; with docker = true, the workloads run in a
container of the same image inside the guest (vm-docker).

Layout of one running VM (slug = <run id>-<environment name>)::

    DATA_ROOT/<slug>.vm/root.qcow2   copy-on-write overlay on the base disk
    DATA_ROOT/<slug>.vm/data.raw     the data disk (virtio-blk, /isobench/data)
    DATA_ROOT/<slug>.vm/serial.log   the guest's console (errors only)
    DATA_ROOT/<slug>.vm/qemu.log     QEMU's own stderr
    SOCKET_ROOT/<slug>/qga.sock      guest agent (virtio-serial)
    SOCKET_ROOT/<slug>/qmp.sock      QMP monitor

The qemu process is named ``isobench-<slug>`` (``-name``): clean.py finds
leftovers by that name and by these directories. stop() quits QEMU and
removes both directories; QEMU also dies with its parent (PDEATHSIG), so a
SIGKILLed ``isobench run`` leaves only files, which ``isobench clean``
removes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from isobench.envs.base import Environment, Paths
from isobench.errors import EnvironmentError_
from isobench.hostinfo import hugetlbfs_free_mb, thp_mode
from isobench.proc import KILL_GRACE_S, ExecResult, bounded
from isobench.envs.qemu_cmdline import MemoryBacking, Nic, QemuConfig, Topology, build_argv
from isobench.envs.qmp_sync import QmpCommandError, QmpTimeout, SyncQmp
from isobench.lifetime import die_with_parent
from isobench.workspace import DATA_ROOT, GUEST_DATA_DIR, GUEST_TMP_DIR, LABEL

SOCKET_ROOT = "/run/isobench"
DATA_DIR, TMP_DIR = GUEST_DATA_DIR, GUEST_TMP_DIR
READY_TIMEOUT_TCG_S = 240.0
READY_TIMEOUT_KVM_S = 120.0
WRITE_CHUNK = 4 * 1024 * 1024
# Docker Engine inside the guest: its own addresses in the benchmarking
# range, distinct from the host's 198.18.0.1/24 bridge
GUEST_DOCKER_BIP = "198.19.250.1/24"
GUEST_DOCKER_POOL = "base=198.19.252.0/22,size=24"
GUEST_DOCKER_SOCK = "unix:///run/docker.sock"
VHOST_NET = "/dev/vhost-net"
NET_STEP_TIMEOUT_S = 30
NET_READY_TIMEOUT_S = 30
# In the guest: load virtio_net, find the NIC by its MAC, give it the
# address on the client host's bridge. Prints the interface's name.
GUEST_NET_SCRIPT = r"""
modprobe virtio_net 2>/dev/null
dev=; i=0
while [ -z "$dev" ] && [ $i -lt 200 ]; do
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && dev="${d##*/}"
  done
  [ -n "$dev" ] || { sleep 0.05; i=$((i + 1)); }
done
[ -n "$dev" ] || { echo "no network interface with MAC $1" >&2; exit 1; }
ip link set "$dev" mtu 1500 up && ip addr add "$2" dev "$dev" && echo "$dev"
"""

_WARNED: list = []


def _warn(message: str) -> None:
    print(f"isobench: {message}", file=sys.stderr, flush=True)


@dataclass
class VmEnvironment(Environment):
    kind: str = "vm"
    run_id: str = "adhoc"
    host_cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    host_mem_bytes: int = 0
    # set by start()
    accel: str | None = None
    accel_note: str = ""
    _proc: subprocess.Popen | None = None
    _qmp: SyncQmp | None = None
    _ga: SyncQmp | None = None
    _argv: list = field(default_factory=list)
    _boot: dict = field(default_factory=dict)
    _memory_note: str = ""
    _pinning: dict = field(default_factory=dict)
    _image: str = ""
    _container: str | None = None
    ready_timeout_override: float | None = None  # the KVM probe's short deadline
    pin_offset: int = 0  # instance i of a group pins its vCPUs from host CPU i*vcpus on
    # the NIC on the client host's bridge (runs with server workloads)
    _tap: str | None = None
    _tap_index: int | None = None
    _nic_facts: dict = field(default_factory=dict)
    _published: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.options.get("docker"):
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
        return bool(self.options.get("docker"))

    @property
    def container_name(self) -> str:
        return f"isobench-{self.slug}"

    # -- start ------------------------------------------------------------

    def pre_start(self) -> None:
        """The one-off costs before a first boot (the VM disk, the KVM
        probe), so a group's density timing counts only the boot itself."""
        from isobench.envs.vmdisk import ensure_vm_disk
        try:
            ensure_vm_disk(log=_warn)
        except Exception as exc:  # noqa: BLE001 - one line for the runner
            raise EnvironmentError_(f"{self.name}: cannot make the VM disk: {exc}") from None
        if self.accel is None:
            from isobench.images import recipe_hash
            self._image = recipe_hash()
            self.accel = self._resolve_accel()

    def start(self) -> None:
        from isobench.envs.vmdisk import ensure_vm_disk
        from isobench.images import kernel_paths, recipe_hash

        try:
            base = ensure_vm_disk(log=_warn)
        except Exception as exc:  # noqa: BLE001 - one line for the runner
            raise EnvironmentError_(f"{self.name}: cannot make the VM disk: {exc}") from None
        kernel = kernel_paths()
        if kernel is None:
            raise EnvironmentError_(f"{self.name}: the image has no kernel (rebuild: isobench images build)")
        self._image = recipe_hash()
        if self.accel is None:
            self.accel = self._resolve_accel()
        try:
            if getattr(self, "_bench_addr", None) is not None:
                self._create_tap()
            self._boot_vm(base, kernel)
            if self._tap is not None:
                self._setup_guest_net()
            if self.docker:
                self._start_docker()
        except BaseException:
            self.stop()
            raise

    def _resolve_accel(self) -> str:
        wanted = self.options.get("accel", "auto")
        if wanted in ("kvm", "tcg"):
            self.accel_note = f"accel={wanted} as configured"
            return wanted
        from isobench.envs import kvm_probe
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
        probe = VmEnvironment(name="kvmprobe", options={**self.options, "docker": False, "pin": False,
                                                         "hugepages": "off", "vcpus": 1, "memory_mb": 512,
                                                         "data_disk_mb": 256},
                              run_id=f"{self.run_id}", host_cores=self.host_cores, accel="kvm")
        probe.ready_timeout_override = deadline_s
        try:
            probe.start()
            return True, f"guest agent answered {probe._boot.get('ready_s', 0):.1f} s after start"
        except EnvironmentError_ as exc:
            if "stayed silent" in str(exc):
                return False, (f"a guest booted with -accel kvm printed nothing and its agent did not answer "
                               f"within {deadline_s:.0f} s: it hangs before the kernel starts (e.g. /dev/kvm "
                               "of a paravirtual hypervisor such as PVM)")
            return False, str(exc).split(": ", 1)[-1]
        finally:
            probe.stop()

    def _config(self, base: str, kernel: tuple[str, str]) -> QemuConfig:
        o = self.options
        vcpus = int(o.get("vcpus", 2))
        cpu_model = {"default": "qemu64", "host": "host" if self.accel == "kvm" else "max"}[o.get("cpu_model", "default")]
        topo = o.get("topology", "none")
        topology = None
        if topo == "auto":
            topology = Topology(1, vcpus, 1)
        elif topo != "none":
            s, c, t = (int(x) for x in topo.split("x"))
            topology = Topology(s, c, t)
        memory = MemoryBacking("default")
        mem_mb = int(o.get("memory_mb", 2048))
        self._memory_note = f"default anonymous memory (host THP: {thp_mode()})"
        if o.get("hugepages") == "on":
            free_mb, path = hugetlbfs_free_mb()
            if path and free_mb >= mem_mb:
                memory = MemoryBacking("hugetlbfs", path)
                self._memory_note = f"hugetlbfs {path}, preallocated ({free_mb} MiB reserved and free)"
            else:
                memory = MemoryBacking("thp-prealloc")
                self._memory_note = (f"THP: anonymous memory, preallocated (no {mem_mb} MiB of reserved huge pages: "
                                     f"{free_mb} MiB free; host THP: {thp_mode()})")
        kargs = ()
        if o.get("tmpfs_mb"):
            kargs = (f"isobench.tmpfs_mb={int(o['tmpfs_mb'])}",)
        return QemuConfig(
            name=self.vm_name, accel=self.accel, vcpus=vcpus, memory_mb=mem_mb, cpu_model=cpu_model,
            kernel=kernel[0], initrd=kernel[1],
            root_disk=os.path.join(self.vm_dir, "root.qcow2"), data_disk=os.path.join(self.vm_dir, "data.raw"),
            qga_socket=os.path.join(self.sock_dir, "qga.sock"), qmp_socket=os.path.join(self.sock_dir, "qmp.sock"),
            serial_log=os.path.join(self.vm_dir, "serial.log"), pidfile=os.path.join(self.vm_dir, "qemu.pid"),
            topology=topology, memory=memory, disk_cache=o.get("disk_cache", "none"),
            disk_aio=o.get("disk_aio", "native"), root_bus=o.get("root_bus", "nvme"),
            guest_init=o.get("guest_init", "isobench"),
            extra_disks=(_rootfs_tar(),) if self.docker else (), kernel_args=kargs,
            nic=self._nic())

    def _boot_vm(self, base: str, kernel: tuple[str, str]) -> None:
        t0 = time.monotonic()
        for d in (self.vm_dir, self.sock_dir):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d, mode=0o700)
        cfg = self._config(base, kernel)
        if len(cfg.qga_socket) > 100:
            raise EnvironmentError_(f"{self.name}: socket path too long: {cfg.qga_socket}")
        _check_run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, cfg.root_disk], 60)
        from isobench.envs.vmdisk import docker_data_disk_path, make_data_disk, seed_data_disk
        size_mb = int(self.options.get("data_disk_mb", 4096))
        cached = docker_data_disk_path(self._image) if self.docker else None
        if cached and os.path.isfile(cached):
            # the image already imported by an earlier vm-docker run
            seed_data_disk(cached, cfg.data_disk, size_mb)
        else:
            make_data_disk(cfg.data_disk, size_mb)
        self._argv = build_argv(cfg)
        log = open(os.path.join(self.vm_dir, "qemu.log"), "wb")
        t_spawn = time.monotonic()
        try:
            self._proc = subprocess.Popen(self._argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                          start_new_session=True, preexec_fn=die_with_parent)
        except OSError as exc:
            raise EnvironmentError_(f"{self.name}: cannot start {self._argv[0]}: {exc}") from None
        finally:
            log.close()
        limit = self.ready_timeout_override or (READY_TIMEOUT_KVM_S if self.accel == "kvm" else READY_TIMEOUT_TCG_S)
        deadline = t_spawn + limit
        self._qmp = SyncQmp(cfg.qmp_socket, greeting=True, name="qmp")
        self._connect(self._qmp, cfg.qmp_socket, deadline)
        self._ga = SyncQmp(cfg.qga_socket, greeting=False, name="qga")
        self._connect(self._ga, cfg.qga_socket, deadline)
        self._wait_agent(deadline, limit)
        t_ready = time.monotonic()
        # ready: from starting QEMU to the agent's first answer; making the
        # overlay and data disk before that is reported apart
        self._boot = {"ready_s": round(t_ready - t_spawn, 3), "disk_prep_s": round(t_spawn - t0, 3)}
        self._boot.update(self._guest_boot_times())
        if self.options.get("pin"):
            self._pin_vcpus()

    def _connect(self, client: SyncQmp, path: str, deadline: float) -> None:
        while True:
            self._check_alive()
            if os.path.exists(path):
                try:
                    client.connect(timeout=5)
                    return
                except (OSError, QmpTimeout, Exception):  # noqa: BLE001 - retried until the deadline
                    pass
            if time.monotonic() > deadline:
                raise EnvironmentError_(f"{self.name}: QEMU did not open {path}")
            time.sleep(0.02)

    def _wait_agent(self, deadline: float, limit: float) -> None:
        """guest-sync until the agent answers. Requests sent before the guest
        listens wait in the channel and are answered late with ids nobody
        waits for any more; the library drops those."""
        n = 0
        while True:
            self._check_alive()
            n += 1
            try:
                token = int(time.time() * 1000) % (2**31) + n
                if self._ga.execute("guest-sync", {"id": token}, timeout=0.5) == token:
                    return
            except (QmpTimeout, QmpCommandError):
                pass
            if time.monotonic() > deadline:
                raise EnvironmentError_(f"{self.name}: no answer from the guest agent within {limit:.0f} s "
                                        f"(accel {self.accel}; {self._serial_summary()})")

    def _serial_summary(self) -> str:
        try:
            with open(os.path.join(self.vm_dir, "serial.log"), "rb") as fh:
                text = fh.read().decode(errors="replace")
        except OSError:
            text = ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "\x1b" not in ln]
        if not lines:
            return "the serial console stayed silent: the guest never reached the kernel's console"
        return f"last console line: {lines[-1][:120]!r}"

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            tail = ""
            with contextlib.suppress(OSError):
                with open(os.path.join(self.vm_dir, "qemu.log"), "rb") as fh:
                    tail = fh.read().decode(errors="replace").strip().splitlines()[-1:][0]
            raise EnvironmentError_(f"{self.name}: QEMU exited with {self._proc.returncode}: {tail}")

    def _guest_boot_times(self) -> dict:
        """The guest's own view: its uptime when init started (the kernel's
        boot time) and when the agent started, and now."""
        out: dict = {}
        if self.options.get("guest_init", "isobench") == "isobench":
            r = self._ga_exec(["cat", "/run/isobench-kernel-uptime", "/run/isobench-agent-uptime", "/proc/uptime"], 30)
            vals = r.stdout.split()
            if r.ok and len(vals) >= 3:
                out = {"guest_kernel_s": float(vals[0]), "guest_agent_start_s": float(vals[1]),
                       "guest_uptime_at_ready_s": float(vals[2])}
        else:
            r = self._ga_exec(["cat", "/proc/uptime"], 30)
            if r.ok and r.stdout.split():
                out["guest_uptime_at_ready_s"] = float(r.stdout.split()[0])
            r = self._ga_exec(["systemd-analyze"], 30)
            if r.ok:
                out["systemd_analyze"] = r.stdout.strip().splitlines()[0][:200]
        return out

    def _pin_vcpus(self) -> None:
        cpus = self._qmp.execute("query-cpus-fast", timeout=10)
        node = self.options.get("pin_cpus")  # pin = "node": vCPUs float within their node
        host = sorted(os.sched_getaffinity(0))
        mapping = {}
        for entry in cpus:
            idx, tid = int(entry["cpu-index"]), int(entry["thread-id"])
            target = set(node) if node else {host[(idx + self.pin_offset) % len(host)]}
            os.sched_setaffinity(tid, target)
            mapping[f"vcpu{idx}"] = {"thread": tid, "host_cpu": min(target) if len(target) == 1 else sorted(target)}
        self._pinning = mapping

    # -- the benchmark network ------------------------------------------------

    def _nic(self) -> Nic | None:
        if self._tap is None:
            return None
        from isobench.clienthost import guest_mac
        return Nic(tap=self._tap, mac=guest_mac(self.run_id, self._tap_index), vhost=os.path.exists(VHOST_NET))

    def _create_tap(self) -> None:
        """The first free ``ib-XXXX-tI`` of this run (a twin booted beside
        the measured guest takes the next one, and so the next address),
        joined to the client host's bridge and up."""
        from isobench.clienthost import MAX_GUESTS, link_names, tap_name
        bridge = link_names(self.run_id)[0]
        for index in range(MAX_GUESTS):
            name = tap_name(self.run_id, index)
            if _net(["ip", "link", "show", "dev", name]).returncode == 0:
                continue  # another guest of this run has it
            r = _net(["ip", "tuntap", "add", "dev", name, "mode", "tap"])
            if r.returncode != 0:
                if _net(["ip", "link", "show", "dev", name]).returncode == 0:
                    continue  # lost a race for the name
                raise EnvironmentError_(f"{self.name}: cannot create tap {name}: {r.stderr.strip()}")
            self._tap, self._tap_index = name, index
            for step in (["ip", "link", "set", "dev", name, "mtu", "1500"],
                         ["ip", "link", "set", "dev", name, "master", bridge],
                         ["ip", "link", "set", "dev", name, "up"]):
                r = _net(step)
                if r.returncode != 0:
                    raise EnvironmentError_(f"{self.name}: {' '.join(step)}: {r.stderr.strip()}")
            return
        raise EnvironmentError_(f"{self.name}: no free tap name for this run")

    def _delete_tap(self) -> None:
        if self._tap is not None:
            _net(["ip", "link", "del", "dev", self._tap])
            self._tap = None

    @property
    def guest_addr(self) -> str:
        """The guest's own address on the client host's bridge."""
        if self._tap_index is None:
            raise EnvironmentError_(f"{self.name}: the guest has no NIC (no client host attached)")
        from isobench.clienthost import guest_addr
        return str(guest_addr(self.bench_addr, self._tap_index).ip)

    def _setup_guest_net(self) -> None:
        """Address the NIC through the guest agent (virtio_net is a module of
        the cloud kernel, so the kernel's ip= cannot do it without an
        initramfs), then wait until the host reaches the guest."""
        from isobench.clienthost import guest_addr
        t0 = time.monotonic()
        iface = guest_addr(self.bench_addr, self._tap_index)
        mac = self._nic().mac
        r = self._ga_exec(["sh", "-c", GUEST_NET_SCRIPT, "sh", mac, str(iface)], NET_STEP_TIMEOUT_S)
        if not r.ok:
            raise EnvironmentError_(f"{self.name}: cannot configure the guest's NIC: {r.describe()}")
        deadline = time.monotonic() + NET_READY_TIMEOUT_S
        while not _reaches(str(iface.ip)):
            self._check_alive()
            if time.monotonic() > deadline:
                raise EnvironmentError_(f"{self.name}: the host cannot reach the guest at {iface.ip} "
                                        f"(tap {self._tap})")
            time.sleep(0.1)
        self._nic_facts = {"tap": self._tap, "bridge": _bridge_of(self.run_id), "mac": mac,
                           "model": "virtio-net-pci", "vhost": bool(self._nic().vhost),
                           "address": str(iface), "guest_interface": r.stdout.strip(),
                           "setup_s": round(time.monotonic() - t0, 3)}

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

    def _ga_exec(self, argv: list[str], timeout: float, input_data: bytes | None = None) -> ExecResult:
        """guest-exec argv as is, polling guest-exec-status until it exits or
        the deadline passes (then the guest process is killed)."""
        start = time.perf_counter()
        if self._ga is None:
            raise EnvironmentError_(f"{self.name}: not started")
        args: dict = {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}
        if input_data is not None:
            args["input-data"] = base64.b64encode(input_data).decode()
        try:
            pid = self._ga.execute("guest-exec", args, timeout=60)["pid"]
        except QmpCommandError as exc:
            return ExecResult(argv, 127, "", str(exc), time.perf_counter() - start)
        except QmpTimeout as exc:
            return ExecResult(argv, -9, "", f"guest agent: {exc}", time.perf_counter() - start, timed_out=True)
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                st = self._ga.execute("guest-exec-status", {"pid": pid}, timeout=60)
            except (QmpTimeout, QmpCommandError) as exc:
                return ExecResult(argv, -9, "", f"guest agent: {exc}", time.perf_counter() - start, timed_out=True)
            if st.get("exited"):
                break
            if time.monotonic() > deadline:
                self._kill_guest_pid(pid)
                return ExecResult(argv, -9, "", "killed at the deadline", time.perf_counter() - start,
                                  timed_out=True)
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        wall = time.perf_counter() - start
        stdout = base64.b64decode(st.get("out-data", "")).decode("utf-8", errors="replace")
        stderr = base64.b64decode(st.get("err-data", "")).decode("utf-8", errors="replace")
        if st.get("out-truncated") or st.get("err-truncated"):
            stderr += "\n[isobench: output truncated by the guest agent at 16 MiB]"
        code = st.get("exitcode")
        if code is None:
            code = 128 + int(st.get("signal", 0))
        return ExecResult(argv, int(code), stdout, stderr, wall)

    def _kill_guest_pid(self, pid: int) -> None:
        with contextlib.suppress(QmpTimeout, QmpCommandError):
            self._ga.execute("guest-exec", {"path": "kill", "arg": ["-KILL", str(pid)]}, timeout=10)

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        bound = bounded(argv, timeout)
        if self._container is not None:
            full = ["docker", "-H", GUEST_DOCKER_SOCK, "exec", *(["-w", cwd] if cwd else []), self._container, *bound]
        elif cwd:
            full = ["sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", cwd, *bound]
        else:
            full = bound
        r = self._ga_exec(full, timeout + KILL_GRACE_S + 15)
        timed_out = r.timed_out or (r.returncode in (124, 137) and r.wall_s >= timeout)
        return ExecResult(list(argv), r.returncode, r.stdout, r.stderr, r.wall_s, timed_out=timed_out)

    def write_file(self, path: str, content: bytes) -> None:
        if self._container is not None:
            staging = "/isobench/data/.isobench-xfer"
            self._guest_write(staging, content)
            r = self._ga_exec(["sh", "-c", 'docker -H "$4" exec -i "$1" sh -c \'mkdir -p "$(dirname "$1")" && cat > "$1"\' '
                               'sh "$2" < "$3"; rc=$?; rm -f "$3"; exit $rc', "sh", self._container, path, staging, GUEST_DOCKER_SOCK],
                              600)
            if not r.ok:
                raise EnvironmentError_(f"{self.name}: could not write {path}: {r.describe()}")
            return
        self._guest_write(path, content)

    def _guest_write(self, path: str, content: bytes) -> None:
        r = self._ga_exec(["mkdir", "-p", os.path.dirname(path) or "/"], 60)
        if not r.ok:
            raise EnvironmentError_(f"{self.name}: could not write {path}: {r.describe()}")
        try:
            handle = self._ga.execute("guest-file-open", {"path": path, "mode": "w"}, timeout=60)
            try:
                view = memoryview(content)
                for off in range(0, len(view), WRITE_CHUNK):
                    chunk = bytes(view[off:off + WRITE_CHUNK])
                    got = self._ga.execute("guest-file-write",
                                           {"handle": handle, "buf-b64": base64.b64encode(chunk).decode()},
                                           timeout=120)
                    if got.get("count") != len(chunk):
                        raise EnvironmentError_(f"{self.name}: short write to {path}: {got}")
            finally:
                self._ga.execute("guest-file-close", {"handle": handle}, timeout=60)
        except (QmpTimeout, QmpCommandError) as exc:
            raise EnvironmentError_(f"{self.name}: could not write {path}: {exc}") from None

    # -- Docker inside the guest -------------------------------------------

    def _docker_cmd(self, argv: list[str], timeout: float) -> ExecResult:
        return self._ga_exec(["docker", "-H", GUEST_DOCKER_SOCK, *argv], timeout)

    def _start_docker(self) -> None:
        t0 = time.monotonic()
        self._spawn_dockerd()
        self._wait_dockerd(time.monotonic() + 180)
        t_docker = time.monotonic()
        self._import_and_run(t0, t_docker)

    def _spawn_dockerd(self) -> None:
        r = self._ga_exec(["sh", "-c", 'setsid dockerd "$@" </dev/null >/run/dockerd.log 2>&1 &', "sh",
                           "--host", GUEST_DOCKER_SOCK, "--bip", GUEST_DOCKER_BIP,
                           "--default-address-pool", GUEST_DOCKER_POOL, "--pidfile", "/run/docker.pid",
                           "--data-root", "/isobench/data/docker", "--storage-driver", "overlay2"], 30)
        if not r.ok:
            raise EnvironmentError_(f"{self.name}: cannot start dockerd in the guest: {r.describe()}")

    def _wait_dockerd(self, deadline: float) -> None:
        while True:
            r = self._docker_cmd(["version", "--format", "{{.Server.Version}}"], 30)
            if r.ok:
                self._boot["guest_docker_version"] = r.stdout.strip()
                break
            if time.monotonic() > deadline:
                log = self._ga_exec(["tail", "-n", "3", "/run/dockerd.log"], 10).stdout.strip().replace("\n", " | ")
                raise EnvironmentError_(f"{self.name}: dockerd in the guest did not answer in 180 s: {log[:300]}")
            time.sleep(0.2)

    def _import_and_run(self, t0: float, t_docker: float) -> None:
        from isobench.images import DOCKER_CHANGES, image_tag
        tag = image_tag(self._image)
        have = self._docker_cmd(["image", "inspect", "--format", "{{.Id}}", tag], 60)
        if not have.ok:
            changes = [a for c in DOCKER_CHANGES for a in ("--change", c)]
            r = self._docker_cmd(["import", *changes, "/dev/isobench-ro0", tag], 1800)
            if not r.ok:
                raise EnvironmentError_(f"{self.name}: docker import in the guest failed: {r.describe()}")
            self._save_docker_disk()
        t_import = time.monotonic()
        tmpfs = f"{TMP_DIR}:size={int(self.options['tmpfs_mb'])}m" if self.options.get("tmpfs_mb") else TMP_DIR
        # NAT as on the host's docker-nat: each server port published on the
        # guest's bridge address only, the guest port chosen by dockerd
        publish = [a for port, proto in (getattr(self, "_bench_ports", None) or []) if self._tap is not None
                   for a in ("-p", f"{self.guest_addr}::{port}/{proto}")]
        r = self._docker_cmd(["run", "-d", "--name", self.container_name, "--label", f"{LABEL}=1",
                              "--label", f"{LABEL}.run={self.run_id}", "--tmpfs", tmpfs, "--shm-size", "1g",
                              *publish, tag, "sleep", "infinity"], 300)
        if not r.ok:
            raise EnvironmentError_(f"{self.name}: cannot start the container in the guest: {r.describe()}")
        self._container = self.container_name
        if publish:
            self._read_published()
        t_run = time.monotonic()
        self._boot.update({"guest_dockerd_s": round(t_docker - t0, 3), "guest_image_import_s": round(t_import - t_docker, 3),
                           "guest_container_start_s": round(t_run - t_import, 3)})
        # ready = VM ready + dockerd + container, without the one-off import
        self._boot["ready_s"] = round(self._boot["ready_s"] + (t_docker - t0) + (t_run - t_import), 3)

    def _read_published(self) -> None:
        r = self._docker_cmd(["inspect", "--format", "{{json .NetworkSettings.Ports}}", self.container_name], 60)
        try:
            ports = json.loads(r.stdout) if r.ok else None
            self._published = {k: int(v[0]["HostPort"]) for k, v in (ports or {}).items() if v}
        except (ValueError, KeyError, IndexError, TypeError):
            ports = None
        if not ports:
            raise EnvironmentError_(f"{self.name}: cannot read the ports dockerd published: {r.describe()}")
        self._nic_facts["published"] = dict(self._published)

    def _save_docker_disk(self) -> None:
        """Keep the data disk with the imported image for later vm-docker
        runs: dockerd stopped and the file system unmounted in the guest
        while the host copies the raw file, then both back."""
        from isobench.envs.vmdisk import docker_data_disk_path, save_data_disk
        stop = self._ga_exec(["sh", "-c", 'kill "$(cat /run/docker.pid)"; i=0; while [ -e /run/docker.pid ] && '
                              '[ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; pkill containerd; sleep 0.5; sync; '
                              'umount /isobench/data'], 120)
        if stop.ok:
            try:
                save_data_disk(os.path.join(self.vm_dir, "data.raw"), docker_data_disk_path(self._image))
            except Exception as exc:  # noqa: BLE001 - only a cache
                _warn(f"{self.name}: could not keep the guest's Docker disk: {exc}")
        r = self._ga_exec(["sh", "-c", 'for b in /sys/block/vd*; do [ "$(cat $b/serial)" = isobench-data ] && '
                           'mount -o noatime "/dev/${b##*/}" /isobench/data; done; mountpoint -q /isobench/data'], 60)
        if not r.ok:
            raise EnvironmentError_(f"{self.name}: could not remount the data disk: {r.describe()}")
        self._spawn_dockerd()
        self._wait_dockerd(time.monotonic() + 180)

    # -- startup measurement ------------------------------------------------

    def measure_startup(self) -> dict[str, float]:
        """Boot a fresh guest with this one's configuration, to ready, and
        stop it: the startup workload's sample."""
        twin = VmEnvironment(name=f"{self.name[:22]}-boot", options=dict(self.options), run_id=self.run_id,
                             host_cores=self.host_cores, host_mem_bytes=self.host_mem_bytes, accel=self.accel)
        if getattr(self, "_bench_addr", None) is not None:
            # the twin boots with a NIC too (same device set, comparable boot);
            # it takes the next free tap of the run, so the next address
            twin.expose(self._bench_addr, list(getattr(self, "_bench_ports", [])))
        try:
            twin.start()
            return {k: float(v) for k, v in twin._boot.items() if isinstance(v, (int, float))}
        finally:
            twin.stop()

    @property
    def vmm_pid(self) -> int | None:
        """QEMU's pid on the host (density reads its PSS)."""
        return self._proc.pid if self._proc is not None else None

    # -- stop and facts -------------------------------------------------------

    def stop(self) -> None:
        if self._qmp is not None and self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(Exception):
                self._qmp.execute("quit", timeout=5)
        if self._proc is not None:
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                self._proc.wait(10)
            self._proc = None
        for client in (self._ga, self._qmp):
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
        self._ga = self._qmp = None
        self._container = None
        self._delete_tap()  # QEMU is gone: nothing holds it any more
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        shutil.rmtree(self.vm_dir, ignore_errors=True)

    def facts(self) -> dict:
        from isobench.envs.kvm_probe import qemu_version
        facts = super().facts()
        facts.update({
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
        })
        if self._nic_facts:
            facts["nic"] = dict(self._nic_facts)
        if self.docker:
            facts["container"] = self.container_name
            facts["guest_docker_bip"] = GUEST_DOCKER_BIP
        return facts


def _bridge_of(run_id: str) -> str:
    from isobench.clienthost import link_names
    return link_names(run_id)[0]


def _net(argv: list[str]) -> subprocess.CompletedProcess:
    """An `ip` step on the host; never raises (the caller reads returncode)."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=NET_STEP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, -1, "", str(exc))


def _reaches(addr: str) -> bool:
    """A TCP connection attempt from the host to addr:9 is answered (RST or accept)."""
    import socket
    try:
        socket.create_connection((addr, 9), 0.5).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return True


def _arg_after(argv: list[str], flag: str) -> str | None:
    with contextlib.suppress(ValueError, IndexError):
        return argv[argv.index(flag) + 1]
    return None


def _check_run(argv: list[str], timeout: float) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EnvironmentError_(f"timed out: {' '.join(argv)}") from None
    if proc.returncode != 0:
        raise EnvironmentError_(f"exit {proc.returncode}: {' '.join(argv)}: {proc.stderr.decode(errors='replace').strip()}")


def _rootfs_tar() -> str:
    from isobench.images import rootfs_tar
    return rootfs_tar()

