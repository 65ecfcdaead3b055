"""The VM's base root disk, made once from the image's rootfs.tar.

``ensure_vm_disk()`` returns ``IMAGE_ROOT/<hash>/vm-root-<key>.raw``: an
ext4 filesystem (``mkfs.ext4 -d`` from the unpacked rootfs, no loop mount,
no libguestfs) holding the same files as the Docker image plus the guest's
boot glue: isobench's guest init and an fstab. ``<key>`` hashes that glue,
so changing it makes a new disk beside the old one without rebuilding the
rootfs. Runs never write to it: each VM boots a qcow2 overlay on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time

from isobench import images
from isobench.core.errors import EnvironmentError_

VM_DISK_VERSION = 1
ROOT_LABEL = "isobench-root"
DATA_LABEL = "isobench-data"

# PID 1 of the guest (kernel argument init=...). It does what the guest
# needs and nothing else: the kernel file systems, cgroup v2 (dockerd in
# vm-docker), the data disk on /isobench/data, a tmpfs on /isobench/tmp,
# then qemu-ga on its virtio-serial port. No systemd, udev or journald run,
# so no service adds noise to measurements and the guest is ready in a few
# seconds even under TCG. It records the guest's uptime when it starts
# (= the kernel's boot time) and when the agent starts. It stays PID 1,
# reaping orphans, and restarts the agent if it exits.
GUEST_INIT = r"""#!/bin/sh
# isobench guest init (PID 1; kernel argument init=/usr/local/sbin/isobench-init)
mount -t proc proc /proc
read -r up _ < /proc/uptime
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root
LANG=C.UTF-8
export PATH HOME LANG
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /tmp
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -o remount,rw,noatime /
echo "$up" > /run/isobench-kernel-uptime
modprobe -a virtio_pci virtio_console virtio_blk
hostname isobench
ip link set lo up
tmpfs_mb=
for arg in $(cat /proc/cmdline); do
  case "$arg" in isobench.tmpfs_mb=*) tmpfs_mb="${arg#*=}" ;; esac
done
mount -t tmpfs -o "mode=1777${tmpfs_mb:+,size=${tmpfs_mb}m}" tmpfs /isobench/tmp
ga=
i=0
while [ $i -lt 1000 ]; do
  for p in /sys/class/virtio-ports/*; do
    if [ -r "$p/name" ] && [ "$(cat "$p/name")" = org.qemu.guest_agent.0 ] && [ -e "/dev/${p##*/}" ]; then
      ga="/dev/${p##*/}"
    fi
  done
  [ -n "$ga" ] && break
  i=$((i + 1))
  sleep 0.01
done
echo "isobench-init: agent on ${ga:-nothing}"
read -r up _ < /proc/uptime
echo "$up" > /run/isobench-agent-uptime
qemu-ga -m virtio-serial -p "$ga" &
ga_pid=$!
# the data disk and read-only disks, found by the serial QEMU gives them
for b in /sys/block/vd*; do
  serial=$(cat "$b/serial" 2>/dev/null)
  case "$serial" in
    isobench-data) mount -o noatime "/dev/${b##*/}" /isobench/data && chmod 1777 /isobench/data ;;
    isobench-ro*) ln -sf "/dev/${b##*/}" "/dev/$serial" ;;
  esac
done
: > /run/isobench-ready
trap '' TERM INT HUP
while :; do
  wait
  if ! kill -0 "$ga_pid" 2>/dev/null; then
    qemu-ga -m virtio-serial -p "$ga" &
    ga_pid=$!
  fi
  sleep 1
done
"""

# Only used with guest_init = "systemd" (a full Debian boot).
FSTAB = f"""# isobench VM guest
LABEL={ROOT_LABEL} / ext4 rw,noatime 0 1
LABEL={DATA_LABEL} /isobench/data ext4 noatime,nofail,x-systemd.device-timeout=10s 0 2
tmpfs /isobench/tmp tmpfs mode=1777 0 0
"""


def disk_key() -> str:
    glue = json.dumps({"v": VM_DISK_VERSION, "init": GUEST_INIT, "fstab": FSTAB}, sort_keys=True)
    return hashlib.sha256(glue.encode()).hexdigest()[:8]


def vm_disk_path(h: str | None = None) -> str:
    return os.path.join(images.image_dir(h), f"vm-root-{disk_key()}.raw")


def ensure_vm_disk(log=print, timeout_s: float = 900) -> str:
    """The base root disk of the current recipe, built if missing."""
    images.ensure_rootfs(log=log)
    path = vm_disk_path()
    if os.path.isfile(path):
        return path
    with images.build_lock():  # one image build at a time per host
        if os.path.isfile(path):
            return path
        _build(path, log, timeout_s)
    return path


def _run(argv: list[str], deadline: float) -> None:
    remaining = deadline - time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=max(1.0, remaining), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EnvironmentError_(f"VM disk build timed out: {' '.join(argv)}") from None
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise EnvironmentError_(f"VM disk build: exit {proc.returncode}: {' '.join(argv)}: {tail[0]}")


def _build(path: str, log, timeout_s: float) -> None:
    started = time.monotonic()
    deadline = started + timeout_s
    d = os.path.dirname(path)
    staging = os.path.join(d, ".vm-root-staging")
    partial = path + ".partial"
    log(f"VM disk: unpacking rootfs.tar and making {os.path.basename(path)}")
    try:
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        _run(
            [
                "tar",
                "--numeric-owner",
                "--xattrs",
                "--xattrs-include=*",
                "-C",
                staging,
                "-xf",
                os.path.join(d, "rootfs.tar"),
            ],
            deadline,
        )
        init = os.path.join(staging, "usr/local/sbin/isobench-init")
        os.makedirs(os.path.dirname(init), exist_ok=True)
        with open(init, "w") as fh:
            fh.write(GUEST_INIT)
        os.chmod(init, 0o755)
        with open(os.path.join(staging, "etc/fstab"), "w") as fh:
            fh.write(FSTAB)
        size = _tree_size(staging)
        # room for what the guest writes to its root (logs, dockerd state)
        # without growing the base: the overlay takes the writes anyway
        size_mb = int(size * 1.25 / 2**20) + 1024
        if os.path.exists(partial):
            os.unlink(partial)
        _run(
            [
                "mkfs.ext4",
                "-q",
                "-F",
                "-L",
                ROOT_LABEL,
                "-d",
                staging,
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                partial,
                f"{size_mb}M",
            ],
            deadline,
        )
        os.rename(partial, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if os.path.exists(partial):
            os.unlink(partial)
    log(f"VM disk: {path} in {time.monotonic() - started:.0f} s")


def _tree_size(root: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def make_data_disk(path: str, size_mb: int, timeout: float = 120) -> None:
    """A sparse raw file with an empty ext4 on it (the guest mounts it on
    /isobench/data). Inode tables and journal are written now, not lazily
    by the guest kernel in the background while workloads measure."""
    with open(path, "wb") as fh:
        fh.truncate(size_mb * 2**20)
    _run(
        ["mkfs.ext4", "-q", "-F", "-L", DATA_LABEL, "-E", "lazy_itable_init=0,lazy_journal_init=0", "-m", "0", path],
        time.monotonic() + timeout,
    )


def docker_data_disk_path(h: str | None = None) -> str:
    """Where vm-docker keeps a data disk whose Docker data-root already
    holds the image (importing 1 GB in an emulated guest takes minutes)."""
    return os.path.join(images.image_dir(h), f"vm-docker-data-{disk_key()}.raw")


def save_data_disk(src: str, dest: str, timeout: float = 300) -> None:
    partial = dest + ".partial"
    _run(["cp", "--sparse=always", src, partial], time.monotonic() + timeout)
    os.rename(partial, dest)


def seed_data_disk(cached: str, dest: str, size_mb: int, timeout: float = 300) -> None:
    """A copy of the cached disk, grown to size_mb if that is larger."""
    deadline = time.monotonic() + timeout
    _run(["cp", "--sparse=always", cached, dest], deadline)
    if os.path.getsize(dest) < size_mb * 2**20:
        with open(dest, "r+b") as fh:
            fh.truncate(size_mb * 2**20)
        _run(["e2fsck", "-f", "-y", "-q", dest], deadline)
        _run(["resize2fs", "-f", dest], deadline)
