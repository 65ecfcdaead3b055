"""The QEMU command line of an isobench guest, as a pure function of a
config: no I/O, so every variant (stock, tuned, KVM, TCG) is unit-tested
and documented from the same code that runs.

The guest boots Debian's cloud kernel directly (no firmware menu, no boot
loader). The root filesystem is on an emulated NVMe disk because the cloud
kernel has NVMe built in but virtio-blk as a module: with root on NVMe the
kernel mounts it itself and no initramfs has to run (about half the boot
time under TCG). ``root_bus="virtio"`` boots through Debian's initramfs
instead. The root disk is a throwaway qcow2 overlay and holds only the
system; workloads write to the data disk, which is virtio-blk on a raw file
with the configured cache and aio modes, as in the studies. PID 1 is
isobench's guest init (a short shell script, see envs/vm/disk.py) unless
``guest_init="systemd"``.

With a ``nic`` (runs that have a client host), the guest gets one
virtio-net device on a tap that isobench created and joined to the client
host's bridge (``-netdev tap,...,script=no,downscript=no``, ``vhost=on``
when the host has /dev/vhost-net); without one, ``-nic none``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GA_PORT = "org.qemu.guest_agent.0"
GUEST_INIT = "/usr/local/sbin/isobench-init"


@dataclass(frozen=True)
class Topology:
    sockets: int
    cores: int
    threads: int

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores * self.threads


@dataclass(frozen=True)
class MemoryBacking:
    """How guest RAM is backed. kind: "default" (anonymous memory: QEMU
    madvises it MADV_HUGEPAGE, so THP applies when the host's THP mode is
    madvise or always), "hugetlbfs" (reserved huge pages, preallocated) or
    "thp-prealloc" (anonymous memory, preallocated at start so the guest
    runs on huge pages from the first access)."""

    kind: str = "default"
    hugetlbfs_path: str = "/dev/hugepages"


@dataclass(frozen=True)
class Nic:
    """A virtio-net device on an existing tap (created by the caller)."""

    tap: str  # host link name, ≤ 15 characters
    mac: str  # 52:54:00:xx:xx:xx
    vhost: bool = False  # in-kernel virtio-net backend (/dev/vhost-net)


@dataclass(frozen=True)
class QemuConfig:
    name: str  # "isobench-<run>-<env>": clean.py finds leftovers by it
    accel: str  # kvm | tcg
    vcpus: int
    memory_mb: int
    cpu_model: str  # QEMU -cpu value: qemu64 (QEMU's default), host, max, ...
    kernel: str
    initrd: str | None
    root_disk: str  # qcow2 overlay
    data_disk: str  # raw
    qga_socket: str
    qmp_socket: str
    serial_log: str
    pidfile: str
    topology: Topology | None = None
    memory: MemoryBacking = field(default_factory=MemoryBacking)
    disk_cache: str = "none"
    disk_aio: str = "native"
    root_bus: str = "nvme"  # nvme (no initramfs) | virtio (Debian's initramfs)
    guest_init: str = "isobench"  # isobench | systemd
    machine: str = "q35"
    extra_disks: tuple[str, ...] = ()  # raw, read-only (vm-docker's image tarball)
    kernel_args: tuple[str, ...] = ()
    nic: Nic | None = None
    qemu: str = "qemu-system-x86_64"


def kernel_cmdline(cfg: QemuConfig) -> str:
    root = "/dev/nvme0n1" if cfg.root_bus == "nvme" else "/dev/vda"
    args = [
        f"root={root}",
        "rw",
        "rootfstype=ext4",
        # the serial console is slow to emulate: only errors go to it
        "console=ttyS0",
        "quiet",
        "loglevel=3",
        "panic=-1",  # with -no-reboot: a guest panic ends QEMU at once
        "8250.nr_uarts=1",
        "i8042.noaux",
        "i8042.nokbd",
    ]
    if cfg.guest_init == "isobench":
        args.append(f"init={GUEST_INIT}")
    else:
        args += ["systemd.show_status=0", "systemd.firstboot=no"]
    return " ".join(args + list(cfg.kernel_args))


def build_argv(cfg: QemuConfig) -> list[str]:
    """The full argv of the qemu process for cfg."""
    if cfg.accel not in ("kvm", "tcg"):
        raise ValueError(f"accel must be kvm or tcg, not {cfg.accel!r}")
    if cfg.root_bus == "virtio" and not cfg.initrd:
        raise ValueError("root_bus=virtio needs the initramfs (virtio-blk is a module)")
    argv = [
        cfg.qemu,
        "-name",
        f"{cfg.name},debug-threads=on",
        "-machine",
        _machine(cfg),
        "-cpu",
        cfg.cpu_model,
        "-smp",
        _smp(cfg),
        "-m",
        f"{cfg.memory_mb}M",
        "-nodefaults",
        "-no-user-config",
        "-no-reboot",
        "-display",
        "none",
        "-pidfile",
        cfg.pidfile,
    ]
    argv += _memory_args(cfg)
    argv += ["-kernel", cfg.kernel]
    if cfg.initrd and cfg.root_bus == "virtio":
        argv += ["-initrd", cfg.initrd]
    argv += ["-append", kernel_cmdline(cfg)]
    # root: the throwaway overlay; writeback cache, it holds no measured data
    argv += ["-drive", _drive("root", cfg.root_disk, "qcow2", "writeback", "threads")]
    if cfg.root_bus == "nvme":
        argv += ["-device", "nvme,drive=root,serial=isobench-root"]
    else:
        argv += ["-device", "virtio-blk-pci,drive=root"]
    # data: what workloads measure
    argv += [
        "-drive",
        _drive("data", cfg.data_disk, "raw", cfg.disk_cache, cfg.disk_aio),
        "-device",
        "virtio-blk-pci,drive=data,serial=isobench-data",
    ]
    for i, path in enumerate(cfg.extra_disks):
        argv += [
            "-drive",
            _drive(f"ro{i}", path, "raw", "writeback", "threads", read_only=True),
            "-device",
            f"virtio-blk-pci,drive=ro{i},serial=isobench-ro{i}",
        ]
    argv += [
        # the guest agent's channel
        "-chardev",
        f"socket,id=qga0,path={cfg.qga_socket},server=on,wait=off",
        "-device",
        "virtio-serial-pci,id=vser0",
        "-device",
        f"virtserialport,bus=vser0.0,chardev=qga0,name={GA_PORT}",
        # the control channel
        "-chardev",
        f"socket,id=mon0,path={cfg.qmp_socket},server=on,wait=off",
        "-mon",
        "chardev=mon0,mode=control",
        "-serial",
        f"file:{cfg.serial_log}",
    ]
    argv += _nic_args(cfg.nic)
    return argv


def _nic_args(nic: Nic | None) -> list[str]:
    if nic is None:
        return ["-nic", "none"]
    if not 0 < len(nic.tap) <= 15 or "," in nic.tap:
        raise ValueError(f"bad tap name {nic.tap!r}")
    netdev = f"tap,id=n0,ifname={nic.tap},script=no,downscript=no"
    if nic.vhost:
        netdev += ",vhost=on"
    return ["-netdev", netdev, "-device", f"virtio-net-pci,netdev=n0,mac={nic.mac}"]


def _smp(cfg: QemuConfig) -> str:
    if cfg.topology is None:
        return str(cfg.vcpus)
    t = cfg.topology
    return f"cpus={cfg.vcpus},sockets={t.sockets},cores={t.cores},threads={t.threads}"


def _memory_args(cfg: QemuConfig) -> list[str]:
    kind = cfg.memory.kind
    size = f"size={cfg.memory_mb}M"
    if kind == "default":
        return []
    if kind == "hugetlbfs":
        obj = f"memory-backend-file,id=ram0,{size},mem-path={cfg.memory.hugetlbfs_path},prealloc=on,share=off"
    elif kind == "thp-prealloc":
        obj = f"memory-backend-ram,id=ram0,{size},prealloc=on"
    else:
        raise ValueError(f"unknown memory backing {kind!r}")
    return ["-object", obj]


def _machine(cfg: QemuConfig) -> str:
    value = f"{cfg.machine},accel={cfg.accel}"
    if cfg.memory.kind != "default":
        value += ",memory-backend=ram0"
    return value


def _drive(node: str, path: str, fmt: str, cache: str, aio: str, read_only: bool = False) -> str:
    # cache=none: O_DIRECT on the host file, the guest sees a write-back
    # cache it must flush; aio=native needs O_DIRECT (cache none/directsync)
    if aio == "native" and cache not in ("none", "directsync"):
        raise ValueError(f"aio=native needs cache=none or directsync, not {cache}")
    parts = [
        f"file={path}",
        "if=none",
        f"id={node}",
        f"format={fmt}",
        f"cache={cache}",
        f"aio={aio}",
        "discard=unmap" if not read_only else "readonly=on",
    ]
    return ",".join(parts)
