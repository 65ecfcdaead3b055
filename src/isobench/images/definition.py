"""The image's recipe: everything that defines the Debian root filesystem
(suite, mirrors, package lists, the setup script run in the chroot), its
name (the first 12 hex digits of the SHA-256 of the recipe's canonical
JSON) and where the files built from it live (``IMAGE_ROOT/<hash>/``).

A recipe change means a new hash, a new build and a new tag; nothing else
triggers a rebuild unless asked. A study whose command workloads name
Debian packages isobench does not install (``study_packages``) has a recipe
of its own while it runs: the same one plus those packages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator

from isobench.core.workspace import GUEST_DATA_DIR, GUEST_TMP_DIR, IMAGE_ROOT, LABEL
from isobench.host import packages

# Bump when the build changes what it produces in a way the recipe dict
# below does not already capture.
RECIPE_VERSION = 1

IMAGE_REPO = "isobench/debian"
SUITE = "bookworm"
ARCH = "amd64"
VARIANT = "minbase"
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
IMAGE_STAMP = "/etc/isobench-image"

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
CHROOT_SETUP = rf"""
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
# tablespaces); workloads initialise their own under {GUEST_DATA_DIR}
rm -rf /var/lib/mysql/*
mkdir -p {GUEST_DATA_DIR} {GUEST_TMP_DIR}
chmod 1777 {GUEST_DATA_DIR} {GUEST_TMP_DIR}
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


# The Debian packages the running study adds to isobench's own (its command
# workloads' `packages`): part of the recipe while it runs, so every
# environment that runs the image (Docker's and the VM's) has them, in an
# image of their own hash. A process runs one study at a time; a module
# value, not a ContextVar, because the runner's threads must see it too.
_study_packages: tuple[str, ...] = ()


def beyond_own(names: Iterable[str]) -> tuple[str, ...]:
    """Those of ``names`` not in isobench's own lists, sorted: what a study adds."""
    own = {*packages.tool_packages(), *packages.image_only_packages()}
    return tuple(sorted(set(names) - own))


@contextlib.contextmanager
def study_packages(names: Iterable[str]) -> Iterator[tuple[str, ...]]:
    """While the block runs, the recipe also installs ``names`` (those not
    already in isobench's own lists); yields the ones added, sorted."""
    global _study_packages
    added = beyond_own(names)
    previous, _study_packages = _study_packages, added
    try:
        yield added
    finally:
        _study_packages = previous


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
    order does not change what gets installed. ``study_packages`` only when
    a study adds some: isobench's own recipe keeps its hash."""
    r = {
        "recipe_version": RECIPE_VERSION,
        "suite": SUITE,
        "arch": ARCH,
        "variant": VARIANT,
        "mirror": MIRROR,
        "apt_sources": apt_sources(),
        "install_recommends": False,
        "packages": sorted(packages.tool_packages()),
        "image_only_packages": sorted(packages.image_only_packages()),
        "disabled_units": sorted(DISABLED_UNITS),
        "chroot_setup": CHROOT_SETUP,
        "dirs": [GUEST_DATA_DIR, GUEST_TMP_DIR],
        "docker_changes": DOCKER_CHANGES,
    }
    if _study_packages:
        r["study_packages"] = list(_study_packages)
    return r


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
