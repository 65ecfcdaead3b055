"""Building the recipe's root filesystem into ``IMAGE_ROOT/<hash>/``::

    rootfs.tar      the root filesystem (becomes the Docker image and the VM disk)
    vmlinuz         Debian's cloud kernel, copied out of /boot for direct boot
    initrd.img      its initramfs
    packages.tsv    every installed package and version (dpkg-query in the chroot)
    image.json      recipe, hash, build time, sizes, kernel version, tool versions
    build.log       full output of debootstrap and apt

Cached by the recipe hash: ``ensure_rootfs`` builds only when the files are
missing or a rebuild is forced. One build at a time per host (``build_lock``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

from isobench.core.errors import EnvironmentError_
from isobench.core.proc import run_argv
from isobench.core.workspace import IMAGE_ROOT
from isobench.images.definition import (
    ARCH,
    CHROOT_SETUP,
    IMAGE_STAMP,
    MIRROR,
    RECIPE_VERSION,
    SUITE,
    VARIANT,
    image_dir,
    image_tag,
    recipe,
    recipe_hash,
    rootfs_tar,
)
from isobench.images.versions import read_packages_tsv

DEFAULT_BUILD_TIMEOUT_S = 3600.0

Log = Callable[[str], None]


class ImageBuildError(EnvironmentError_):
    """The rootfs could not be built or imported (the CLI prints it)."""


_lock_depth = 0


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """One build at a time on this host (another isobench process waits).
    Re-entrant within a process: ensure_image holds it around build_rootfs."""
    global _lock_depth
    if _lock_depth:
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
        return
    os.makedirs(IMAGE_ROOT, exist_ok=True)
    with open(os.path.join(IMAGE_ROOT, ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        _lock_depth = 1
        try:
            yield
        finally:
            _lock_depth = 0
            fcntl.flock(fh, fcntl.LOCK_UN)


def mounts_under(root: str) -> list[str]:
    """Mount points at or below root, deepest first."""
    root = os.path.realpath(root)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            point = line.split()[4]
            # mountinfo escapes space, tab, newline and backslash as \ooo
            point = point.encode().decode("unicode_escape")
            if point == root or point.startswith(root + "/"):
                found.append(point)
    return sorted(set(found), key=len, reverse=True)


def _unmount_all(root: str) -> None:
    for _ in range(3):
        points = mounts_under(root)
        if not points:
            return
        for point in points:
            if not run_argv(["umount", point], timeout=60).ok:
                run_argv(["umount", "-l", point], timeout=60)
    left = mounts_under(root)
    if left:
        raise ImageBuildError(f"could not unmount {', '.join(left)}")


def _kill_chrooted(root: str) -> None:
    """SIGKILL processes left running inside the build chroot."""
    root = os.path.realpath(root)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            proc_root = os.readlink(f"/proc/{pid}/root")
        except OSError:
            continue
        if proc_root == root or proc_root.startswith(root + "/"):
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def remove_tree(path: str) -> None:
    """Remove a build directory: stop what runs in it, unmount what is
    mounted in it, then delete without crossing into another filesystem."""
    if not os.path.lexists(path):
        return
    _kill_chrooted(path)
    _unmount_all(path)
    run_argv(["rm", "-rf", "--one-file-system", path], timeout=600)
    if os.path.lexists(path):
        raise ImageBuildError(f"could not remove {path}")


def _run(argv: list[str], deadline: float, logfh, *, env: dict | None = None, capture: bool = False) -> str:
    """Run argv with the time left before deadline; output goes to the build
    log (or is returned if capture). On timeout, error or interrupt the whole
    process group is killed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ImageBuildError(f"build timed out before: {' '.join(argv)}")
    logfh.write(f"$ {' '.join(argv)}\n")
    logfh.flush()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else logfh,
        stderr=logfh,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=remaining)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise ImageBuildError(f"timed out after {remaining:.0f} s: {' '.join(argv)}") from None
        raise
    if proc.returncode != 0:
        raise ImageBuildError(f"exit {proc.returncode}: {' '.join(argv)}")
    return out.decode("utf-8", errors="replace") if capture else ""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """During a build, SIGTERM raises KeyboardInterrupt (as Ctrl-C does) so
    that the cleanup runs instead of leaving mounts and a half-built tree."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


def _tree_bytes(root: str) -> int:
    """Apparent size of the files under root (hard links counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def _write(path: str, text: str, mode: int = 0o644) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(path, mode)


def build_rootfs(dest: str | None = None, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S, log: Log = print) -> dict:
    """Build the rootfs of the current recipe into dest (default
    IMAGE_ROOT/<hash>) and return its image.json facts.

    debootstrap (minbase) in a staging directory under IMAGE_ROOT, then apt in
    a chroot installs the packages from the release, its updates and its
    security fixes (debootstrap alone would only see the release, and the
    host's native tools come from all three). No service starts during the
    build (policy-rc.d). The result is packed into rootfs.tar; the kernel and
    initramfs are copied out. On any failure, timeout or interrupt the
    staging and partial files are removed and nothing stays mounted.
    """
    r = recipe()
    h = recipe_hash(r)
    dest = os.path.abspath(dest or image_dir(h))
    os.makedirs(IMAGE_ROOT, exist_ok=True)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    staging = os.path.join(IMAGE_ROOT, f".staging-{h}")
    partial = f"{dest}.partial"
    failed_log = os.path.join(IMAGE_ROOT, f"build-{h}.failed.log")
    deadline = time.monotonic() + timeout_s
    started = time.monotonic()
    added = r.get("study_packages", [])
    packages = r["packages"] + r["image_only_packages"] + added

    with build_lock(), _sigterm_interrupts():
        # Left over by a build that was killed outright: nobody else can be
        # using them while we hold the lock.
        for name in os.listdir(IMAGE_ROOT):
            if name.startswith(".staging-"):
                remove_tree(os.path.join(IMAGE_ROOT, name))
        remove_tree(partial)
        os.makedirs(partial)
        log_path = os.path.join(partial, "build.log")
        try:
            with open(log_path, "w", encoding="utf-8") as logfh:
                log(f"image {h}: debootstrap --variant={VARIANT} {SUITE} ({MIRROR})")
                _run(
                    [
                        "debootstrap",
                        f"--variant={VARIANT}",
                        f"--arch={ARCH}",
                        "--components=main",
                        SUITE,
                        staging,
                        MIRROR,
                    ],
                    deadline,
                    logfh,
                )

                # apt configuration and the no-service policy
                _write(os.path.join(staging, "etc/apt/sources.list"), "\n".join(r["apt_sources"]) + "\n")
                _write(
                    os.path.join(staging, "etc/apt/apt.conf.d/90isobench"),
                    'APT::Install-Recommends "false";\nAcquire::Languages "none";\n',
                )
                policy = os.path.join(staging, "usr/sbin/policy-rc.d")
                _write(policy, "#!/bin/sh\n# isobench build: start no service\nexit 101\n", 0o755)

                for fstype, target, opts in [
                    ("proc", "proc", []),
                    ("sysfs", "sys", ["-o", "ro"]),
                    ("devpts", "dev/pts", ["-o", "newinstance,ptmxmode=0666,mode=620,gid=5"]),
                ]:
                    os.makedirs(os.path.join(staging, target), exist_ok=True)
                    _run(["mount", "-t", fstype, *opts, fstype, os.path.join(staging, target)], deadline, logfh)

                log(
                    f"image {h}: apt install {len(packages)} packages (with {SUITE}-updates, -security)"
                    + (f", the study's {' '.join(added)} among them" if added else "")
                )
                env = {
                    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "LC_ALL": "C.UTF-8",
                    "HOME": "/root",
                    "DEBIAN_FRONTEND": "noninteractive",
                    "ISOBENCH_PACKAGES": " ".join(packages),
                    "ISOBENCH_UNITS": " ".join(r["disabled_units"]),
                }
                _run(["chroot", staging, "/bin/sh", "-c", CHROOT_SETUP], deadline, logfh, env=env)
                tsv = _run(
                    ["chroot", staging, "dpkg-query", "-W", "-f", "${Package}\t${Version}\t${Architecture}\n"],
                    deadline,
                    logfh,
                    env=env,
                    capture=True,
                )
                _kill_chrooted(staging)
                _unmount_all(staging)

                os.unlink(policy)
                # debootstrap copied the build host's DNS settings in; the
                # container engine or the VM environment provides its own
                _write(os.path.join(staging, "etc/resolv.conf"), "")
                _write(
                    os.path.join(staging, IMAGE_STAMP.lstrip("/")),
                    f"ISOBENCH_RECIPE={h}\nISOBENCH_RECIPE_VERSION={RECIPE_VERSION}\nDEBIAN_SUITE={SUITE}\n",
                )
                for d in r["dirs"]:
                    os.makedirs(os.path.join(staging, d.lstrip("/")), exist_ok=True)

                rows = sorted(line for line in tsv.splitlines() if line.strip())
                _write(os.path.join(partial, "packages.tsv"), "package\tversion\tarch\n" + "\n".join(rows) + "\n")

                kernel = _copy_kernel(staging, partial)
                log(f"image {h}: kernel {kernel or 'not found'}")

                rootfs_bytes = _tree_bytes(staging)
                log(f"image {h}: packing rootfs.tar ({rootfs_bytes / 2**20:.0f} MiB)")
                _run(
                    [
                        "tar",
                        "--numeric-owner",
                        "--xattrs",
                        "--xattrs-include=*",
                        "--sort=name",
                        "--one-file-system",
                        "-C",
                        staging,
                        "-cf",
                        os.path.join(partial, "rootfs.tar"),
                        ".",
                    ],
                    deadline,
                    logfh,
                )

            info = {
                "hash": h,
                "tag": image_tag(h),
                "recipe": r,
                "built_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "build_s": round(time.monotonic() - started, 1),
                "rootfs_bytes": rootfs_bytes,
                "tar_bytes": os.path.getsize(os.path.join(partial, "rootfs.tar")),
                "kernel_version": kernel,
                "tool_versions": {
                    n: read_packages_tsv(os.path.join(partial, "packages.tsv")).get(n) for n in r["packages"] + added
                },
            }
            _write(os.path.join(partial, "image.json"), json.dumps(info, indent=2, sort_keys=True) + "\n")
            remove_tree(staging)
            remove_tree(dest)
            os.rename(partial, dest)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                shutil.copyfile(log_path, failed_log)
            try:
                remove_tree(staging)
            finally:
                remove_tree(partial)
            if isinstance(exc, ImageBuildError):
                raise ImageBuildError(f"{exc}\n(full log: {failed_log})\n{_tail(failed_log)}") from None
            raise
    with contextlib.suppress(OSError):
        os.unlink(failed_log)
    log(f"image {h}: rootfs built in {info['build_s']:.0f} s -> {dest}")
    return info


def _copy_kernel(staging: str, out: str) -> str | None:
    """Copy /boot/vmlinuz-* and its initrd.img-* out of the rootfs; returns
    the kernel version, or None when the rootfs has no kernel."""
    boot = os.path.join(staging, "boot")
    kernels = sorted(n for n in os.listdir(boot) if n.startswith("vmlinuz-")) if os.path.isdir(boot) else []
    for name in reversed(kernels):  # newest version last in name order
        version = name[len("vmlinuz-") :]
        initrd = os.path.join(boot, f"initrd.img-{version}")
        if os.path.isfile(initrd):
            shutil.copyfile(os.path.join(boot, name), os.path.join(out, "vmlinuz"))
            shutil.copyfile(initrd, os.path.join(out, "initrd.img"))
            return version
    return None


def ensure_rootfs(force: bool = False, log: Log = print, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S) -> str:
    """Return IMAGE_ROOT/<hash> of the current recipe with rootfs.tar (and
    kernel, initrd, packages.tsv) in it, building it only if missing or
    forced. For users of the files that do not need Docker (the VM)."""
    h = recipe_hash()
    with build_lock():
        if force or not os.path.isfile(rootfs_tar(h)):
            build_rootfs(image_dir(h), timeout_s=timeout_s, log=log)
    return image_dir(h)
