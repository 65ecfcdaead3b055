"""The one Debian root filesystem every environment runs its tools from.

A recipe (suite, mirrors, package lists, the setup script run in the chroot)
defines the rootfs; the first 12 hex digits of the SHA-256 of its canonical
JSON name it. ``build_rootfs`` turns the recipe into files under
``IMAGE_ROOT/<hash>/``::

    rootfs.tar      the root filesystem (becomes the Docker image, later the VM disk)
    vmlinuz         Debian's cloud kernel, copied out of /boot for direct boot
    initrd.img      its initramfs
    packages.tsv    every installed package and version (dpkg-query in the chroot)
    image.json      recipe, hash, build time, sizes, kernel version, tool versions
    build.log       full output of debootstrap and apt

``ensure_image`` imports rootfs.tar into Docker Engine as
``isobench/debian:<hash>``. Both steps are cached by the hash: a recipe change
means a new hash, a new build and a new tag; nothing else triggers a rebuild
unless asked (``force=True``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from isobench.errors import EnvironmentError_
from isobench.workspace import IMAGE_ROOT, LABEL

# Bump when build_rootfs changes what it produces in a way the recipe dict
# below does not already capture.
RECIPE_VERSION = 1

IMAGE_REPO = "isobench/debian"
SUITE = "bookworm"
ARCH = "amd64"
VARIANT = "minbase"
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"

DATA_DIR = Path(__file__).resolve().parent / "data"
PACKAGES_FILE = DATA_DIR / "packages.txt"
IMAGE_ONLY_PACKAGES_FILE = DATA_DIR / "image-only-packages.txt"

# Inside the image: where workloads write (the container's overlay, or a
# volume mounted over it) and a directory for tmpfs mounts.
IMAGE_DATA_DIR = "/isobench/data"
IMAGE_TMP_DIR = "/isobench/tmp"
IMAGE_STAMP = "/etc/isobench-image"

DEFAULT_BUILD_TIMEOUT_S = 3600.0

# Units that must not start by themselves when the rootfs boots as a VM guest:
# workloads start their servers, vm+docker starts dockerd, and periodic jobs
# would be noise in the measurements. (A container has no init at all.)
DISABLED_UNITS = [
    "redis-server.service",
    "mariadb.service",
    "nutcracker.service",
    "docker.service",
    "docker.socket",
    "containerd.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
]

# Run in the chroot by /bin/sh with ISOBENCH_PACKAGES and ISOBENCH_UNITS set.
# It is part of the recipe: editing it changes the hash.
CHROOT_SETUP = r"""
set -eu
export DEBIAN_FRONTEND=noninteractive
apt_opts="-y -q -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-confdef"
apt-get update -q
apt-get $apt_opts dist-upgrade
apt-get $apt_opts install --no-install-recommends $ISOBENCH_PACKAGES
for unit in $ISOBENCH_UNITS; do
    if [ -e "/lib/systemd/system/$unit" ]; then systemctl disable "$unit"; fi
done
# mariadb's postinst initialised a system datadir (~110 MB of redo log and
# tablespaces); workloads initialise their own under /isobench/data
rm -rf /var/lib/mysql/*
mkdir -p /isobench/data /isobench/tmp
chmod 1777 /isobench/data /isobench/tmp
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
rm -rf /tmp/* /var/tmp/* /var/log/apt/* /var/cache/debconf/*-old
rm -f /var/log/dpkg.log /var/log/alternatives.log /var/log/bootstrap.log
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id
echo isobench > /etc/hostname
printf '127.0.0.1\tlocalhost\n127.0.1.1\tisobench\n::1\tlocalhost ip6-localhost ip6-loopback\n' > /etc/hosts
"""

# Applied by `docker import`.
DOCKER_CHANGES = [
    f"LABEL {LABEL}=1",
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["sleep", "infinity"]',
]

Log = Callable[[str], None]


class ImageBuildError(EnvironmentError_):
    """The rootfs could not be built or imported (the CLI prints it)."""


# --------------------------------------------------------------------------
# recipe

def read_package_list(path: str | os.PathLike) -> list[str]:
    """Package names from a list file: one per line, '#' starts a comment,
    blank lines ignored, duplicates dropped, order kept."""
    names: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            name = line.split("#", 1)[0].strip()
            if name and name not in names:
                names.append(name)
    return names


def tool_packages() -> list[str]:
    """The workload tools (packages.txt), installed on the host and in the image."""
    return read_package_list(PACKAGES_FILE)


def image_only_packages() -> list[str]:
    """Kernel, init and Docker Engine for the VM guest (image-only-packages.txt)."""
    return read_package_list(IMAGE_ONLY_PACKAGES_FILE)


def apt_sources(mirror: str = MIRROR, security_mirror: str = SECURITY_MIRROR) -> list[str]:
    """sources.list lines of the image: the release plus its updates and
    security fixes, the same suites a Debian 12 host installs from."""
    return [
        f"deb {mirror} {SUITE} main",
        f"deb {mirror} {SUITE}-updates main",
        f"deb {security_mirror} {SUITE}-security main",
    ]


def recipe() -> dict:
    """Everything that defines the rootfs. Package lists are sorted: their
    order in the files does not change what gets installed."""
    return {
        "recipe_version": RECIPE_VERSION,
        "suite": SUITE,
        "arch": ARCH,
        "variant": VARIANT,
        "mirror": MIRROR,
        "apt_sources": apt_sources(),
        "install_recommends": False,
        "packages": sorted(tool_packages()),
        "image_only_packages": sorted(image_only_packages()),
        "disabled_units": sorted(DISABLED_UNITS),
        "chroot_setup": CHROOT_SETUP,
        "dirs": [IMAGE_DATA_DIR, IMAGE_TMP_DIR],
        "docker_changes": DOCKER_CHANGES,
    }


def recipe_hash(r: dict | None = None) -> str:
    """First 12 hex digits of the SHA-256 of the recipe's canonical JSON."""
    text = json.dumps(recipe() if r is None else r, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def image_tag(h: str | None = None) -> str:
    return f"{IMAGE_REPO}:{h or recipe_hash()}"


def image_dir(h: str | None = None) -> str:
    """IMAGE_ROOT/<hash>: the built files of one recipe."""
    return os.path.join(IMAGE_ROOT, h or recipe_hash())


def rootfs_tar(h: str | None = None) -> str:
    return os.path.join(image_dir(h), "rootfs.tar")


def kernel_paths(h: str | None = None) -> tuple[str, str] | None:
    """(vmlinuz, initrd.img) of a built rootfs, or None if it has no kernel."""
    d = image_dir(h)
    kernel, initrd = os.path.join(d, "vmlinuz"), os.path.join(d, "initrd.img")
    if os.path.isfile(kernel) and os.path.isfile(initrd):
        return kernel, initrd
    return None


def _read_packages_tsv(path: str) -> dict[str, str]:
    versions: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0] != "package":
                versions[parts[0]] = parts[1]
    return versions


def tool_versions(h: str | None = None) -> dict[str, str | None]:
    """Versions of the tool packages in the built image (from packages.tsv,
    no container needed); None for a package that is not installed."""
    try:
        installed = _read_packages_tsv(os.path.join(image_dir(h), "packages.tsv"))
    except FileNotFoundError:  # not built on this host
        installed = {}
    return {name: installed.get(name) for name in tool_packages()}


def host_tool_versions() -> dict[str, str | None]:
    """Versions of the tool packages installed on this host (native runs)."""
    names = tool_packages()
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n", *names],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    found: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].startswith("ii"):
            found[parts[0]] = parts[1]
    return {name: found.get(name) for name in names}


# --------------------------------------------------------------------------
# build

_lock_depth = 0


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
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


def _mounts_under(root: str) -> list[str]:
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
        points = _mounts_under(root)
        if not points:
            return
        for point in points:
            if subprocess.run(["umount", point], capture_output=True, timeout=60).returncode:
                subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)
    left = _mounts_under(root)
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


def _remove_tree(path: str) -> None:
    """Remove a build directory: stop what runs in it, unmount what is
    mounted in it, then delete without crossing into another filesystem."""
    if not os.path.lexists(path):
        return
    _kill_chrooted(path)
    _unmount_all(path)
    subprocess.run(["rm", "-rf", "--one-file-system", path], capture_output=True, timeout=600)
    if os.path.lexists(path):
        raise ImageBuildError(f"could not remove {path}")


def _run(argv: list[str], deadline: float, logfh, *, env: dict | None = None,
         capture: bool = False) -> str:
    """Run argv with the time left before deadline; output goes to the build
    log (or is returned if capture). On timeout, error or interrupt the whole
    process group is killed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ImageBuildError(f"build timed out before: {' '.join(argv)}")
    logfh.write(f"$ {' '.join(argv)}\n")
    logfh.flush()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE if capture else logfh,
                            stderr=logfh, env=env, start_new_session=True)
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


def build_rootfs(dest: str | None = None, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S,
                 log: Log = print) -> dict:
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
    packages = r["packages"] + r["image_only_packages"]

    with _build_lock(), _sigterm_interrupts():
        # Left over by a build that was killed outright: nobody else can be
        # using them while we hold the lock.
        for name in os.listdir(IMAGE_ROOT):
            if name.startswith(".staging-"):
                _remove_tree(os.path.join(IMAGE_ROOT, name))
        _remove_tree(partial)
        os.makedirs(partial)
        log_path = os.path.join(partial, "build.log")
        try:
            with open(log_path, "w", encoding="utf-8") as logfh:
                log(f"image {h}: debootstrap --variant={VARIANT} {SUITE} ({MIRROR})")
                _run(["debootstrap", f"--variant={VARIANT}", f"--arch={ARCH}",
                      "--components=main", SUITE, staging, MIRROR], deadline, logfh)

                # apt configuration and the no-service policy
                _write(os.path.join(staging, "etc/apt/sources.list"), "\n".join(r["apt_sources"]) + "\n")
                _write(os.path.join(staging, "etc/apt/apt.conf.d/90isobench"),
                       'APT::Install-Recommends "false";\nAcquire::Languages "none";\n')
                policy = os.path.join(staging, "usr/sbin/policy-rc.d")
                _write(policy, "#!/bin/sh\n# isobench build: start no service\nexit 101\n", 0o755)

                for fstype, target, opts in [
                    ("proc", "proc", []),
                    ("sysfs", "sys", ["-o", "ro"]),
                    ("devpts", "dev/pts", ["-o", "newinstance,ptmxmode=0666,mode=620,gid=5"]),
                ]:
                    os.makedirs(os.path.join(staging, target), exist_ok=True)
                    _run(["mount", "-t", fstype, *opts, fstype, os.path.join(staging, target)],
                         deadline, logfh)

                log(f"image {h}: apt install {len(packages)} packages (with {SUITE}-updates, -security)")
                env = {
                    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "LC_ALL": "C.UTF-8", "HOME": "/root", "DEBIAN_FRONTEND": "noninteractive",
                    "ISOBENCH_PACKAGES": " ".join(packages),
                    "ISOBENCH_UNITS": " ".join(r["disabled_units"]),
                }
                _run(["chroot", staging, "/bin/sh", "-c", CHROOT_SETUP], deadline, logfh, env=env)
                tsv = _run(["chroot", staging, "dpkg-query", "-W", "-f",
                            "${Package}\t${Version}\t${Architecture}\n"],
                           deadline, logfh, env=env, capture=True)
                _kill_chrooted(staging)
                _unmount_all(staging)

                os.unlink(policy)
                # debootstrap copied the build host's DNS settings in; the
                # container engine or the VM environment provides its own
                _write(os.path.join(staging, "etc/resolv.conf"), "")
                _write(os.path.join(staging, IMAGE_STAMP.lstrip("/")),
                       f"ISOBENCH_RECIPE={h}\nISOBENCH_RECIPE_VERSION={RECIPE_VERSION}\n"
                       f"DEBIAN_SUITE={SUITE}\n")
                for d in r["dirs"]:
                    os.makedirs(os.path.join(staging, d.lstrip("/")), exist_ok=True)

                rows = sorted(line for line in tsv.splitlines() if line.strip())
                _write(os.path.join(partial, "packages.tsv"),
                       "package\tversion\tarch\n" + "\n".join(rows) + "\n")

                kernel = _copy_kernel(staging, partial)
                log(f"image {h}: kernel {kernel or 'not found'}")

                rootfs_bytes = _tree_bytes(staging)
                log(f"image {h}: packing rootfs.tar ({rootfs_bytes / 2**20:.0f} MiB)")
                _run(["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*",
                      "--sort=name", "--one-file-system", "-C", staging,
                      "-cf", os.path.join(partial, "rootfs.tar"), "."], deadline, logfh)

            info = {
                "hash": h,
                "tag": image_tag(h),
                "recipe": r,
                "built_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "build_s": round(time.monotonic() - started, 1),
                "rootfs_bytes": rootfs_bytes,
                "tar_bytes": os.path.getsize(os.path.join(partial, "rootfs.tar")),
                "kernel_version": kernel,
                "tool_versions": {n: _read_packages_tsv(os.path.join(partial, "packages.tsv")).get(n)
                                  for n in r["packages"]},
            }
            _write(os.path.join(partial, "image.json"), json.dumps(info, indent=2, sort_keys=True) + "\n")
            _remove_tree(staging)
            _remove_tree(dest)
            os.rename(partial, dest)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                shutil.copyfile(log_path, failed_log)
            try:
                _remove_tree(staging)
            finally:
                _remove_tree(partial)
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
        version = name[len("vmlinuz-"):]
        initrd = os.path.join(boot, f"initrd.img-{version}")
        if os.path.isfile(initrd):
            shutil.copyfile(os.path.join(boot, name), os.path.join(out, "vmlinuz"))
            shutil.copyfile(initrd, os.path.join(out, "initrd.img"))
            return version
    return None


# --------------------------------------------------------------------------
# Docker

def _find_image(client, tag: str):
    import docker.errors

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None


def ensure_rootfs(force: bool = False, log: Log = print,
                  timeout_s: float = DEFAULT_BUILD_TIMEOUT_S) -> str:
    """Return IMAGE_ROOT/<hash> of the current recipe with rootfs.tar (and
    kernel, initrd, packages.tsv) in it, building it only if missing or
    forced. For users of the files that do not need Docker (the VM)."""
    h = recipe_hash()
    with _build_lock():
        if force or not os.path.isfile(rootfs_tar(h)):
            build_rootfs(image_dir(h), timeout_s=timeout_s, log=log)
    return image_dir(h)


def ensure_image(client, force: bool = False, log: Log = print,
                 timeout_s: float = DEFAULT_BUILD_TIMEOUT_S) -> str:
    """Return the tag of the current recipe's image in Docker Engine,
    building the rootfs and importing it only if needed. force rebuilds the
    rootfs (fresh package updates) and re-imports it."""
    h = recipe_hash()
    tag = image_tag(h)
    if not force and _find_image(client, tag) is not None:
        return tag
    with _build_lock():
        if not force and _find_image(client, tag) is not None:  # built meanwhile
            return tag
        ensure_rootfs(force=force, log=log, timeout_s=timeout_s)
        old = _find_image(client, tag)
        info = _read_image_json(h)
        tools = " ".join(f"{n}={v}" for n, v in sorted((info.get("tool_versions") or {}).items()) if v)
        changes = DOCKER_CHANGES + [f'LABEL {LABEL}.recipe="{h}"', f'LABEL {LABEL}.tools="{tools}"']
        log(f"image {h}: importing rootfs.tar as {tag}")
        started = time.monotonic()
        result = client.api.import_image_from_file(rootfs_tar(h), repository=IMAGE_REPO,
                                                   tag=h, changes=changes)
        _raise_on_stream_error(result)
        new = _find_image(client, tag)
        if new is None:
            raise ImageBuildError(f"docker import reported success but {tag} is missing: {result!r}")
        if old is not None and old.id != new.id:
            _remove_quietly(client, old.id)
        log(f"image {h}: imported in {time.monotonic() - started:.0f} s")
    return tag


def _raise_on_stream_error(result) -> None:
    """docker import answers 200 with a JSON stream that may carry an error."""
    text = result if isinstance(result, str) else json.dumps(result)
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            msg = json.loads(line)
            if isinstance(msg, dict) and msg.get("error"):
                raise ImageBuildError(f"docker import: {msg['error']}")


def _remove_quietly(client, image_id: str) -> bool:
    import docker.errors

    try:
        client.images.remove(image_id, noprune=False)
        return True
    except docker.errors.APIError:  # still used by a container, or gone
        return False


def _read_image_json(h: str | None = None) -> dict:
    try:
        with open(os.path.join(image_dir(h), "image.json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def image_info(client=None) -> dict:
    """Facts about the current recipe's image, for `isobench images` and for
    the store: tag, hash, files, sizes, kernel, tool versions, and (given a
    client) the Docker image's id, size and creation time."""
    h = recipe_hash()
    built = _read_image_json(h)
    kernel = kernel_paths(h)
    info = {
        "tag": image_tag(h),
        "hash": h,
        "dir": image_dir(h),
        "rootfs_tar": rootfs_tar(h) if os.path.isfile(rootfs_tar(h)) else None,
        "rootfs_bytes": built.get("rootfs_bytes"),
        "tar_bytes": built.get("tar_bytes"),
        "built_at": built.get("built_at"),
        "build_s": built.get("build_s"),
        "kernel": kernel[0] if kernel else None,
        "initrd": kernel[1] if kernel else None,
        "kernel_version": built.get("kernel_version"),
        "tool_versions": built.get("tool_versions") or {},
        "docker_image_id": None,
        "docker_size_bytes": None,
        "docker_created": None,
    }
    if client is not None:
        img = _find_image(client, info["tag"])
        if img is not None:
            info["docker_image_id"] = img.id
            info["docker_size_bytes"] = img.attrs.get("Size")
            info["docker_created"] = img.attrs.get("Created")
    return info


def remove_old_images(client, files: bool = False) -> list[str]:
    """Remove isobench images of other recipes (those still used by a
    container are kept) and, if files, their IMAGE_ROOT/<hash> directories.
    Returns what was removed."""
    current = recipe_hash()
    removed: list[str] = []
    for img in client.images.list(name=IMAGE_REPO):
        tags = [t for t in img.tags if t.startswith(IMAGE_REPO + ":")]
        if any(t == image_tag(current) for t in tags):
            continue
        if _remove_quietly(client, img.id):
            removed.extend(tags or [img.id])
    if files and os.path.isdir(IMAGE_ROOT):
        with _build_lock():
            for name in os.listdir(IMAGE_ROOT):
                path = os.path.join(IMAGE_ROOT, name)
                if name != current and len(name) == 12 and os.path.isdir(path):
                    _remove_tree(path)
                    removed.append(path)
    return removed
