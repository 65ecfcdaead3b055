"""The services new Debian packages would bring, read from the packages
themselves before anything is installed. apt's lists hold no file lists,
so each new package's .deb, at the version apt's simulation chose, is
fetched with ``apt-get download`` into a private temporary directory (not
apt's cache, no dpkg or apt lock, nothing installed; the directory is
removed whatever happens), listed with ``dpkg-deb -c``, and its systemd
units and init scripts named (``services_in``, pure).

A unit named here is one the package ships; whether it is enabled is the
package's choice (its postinst) and the host's (presets, the init system),
which a listing cannot tell."""

from __future__ import annotations

import functools
import os
import posixpath
import pwd
import re
import tempfile
import time

from isobench.core.proc import run_argv

DOWNLOAD_TIMEOUT_S = 60.0  # every step together; cron's two .debs (86 kB) took 2 s here
MOST_BYTES = 100 * 10**6  # texlive-full's 355 new .debs are 3.8 GB: not fetched to read their lists
UNIT_DIRS = ("lib/systemd/system/", "usr/lib/systemd/system/")
UNIT_KINDS = (".service", ".socket", ".timer")
INIT_DIR = "etc/init.d/"
# dpkg-deb -c (tar's verbose listing): "-rw-r--r-- root/root 316 2022-07-17 08:49 ./lib/systemd/system/cron.service",
# a symbolic link ends "-> TARGET"
_ENTRY = re.compile(r"^(?P<type>\S)\S*\s+\S+\s+\d+\s+\S+\s+\S+\s+\./(?P<path>.+?)(?: -> (?P<target>.*))?$")


class Unknown(RuntimeError):
    """The services could not be told (one line why): apt could not fetch
    a package (no network, an unknown version), a step took too long, or
    the packages are too big to fetch for their lists."""


def services_in(listing: str) -> tuple[str, ...]:
    """The services in one package's ``dpkg-deb -c`` listing, in its order:
    its system units (``.service``, ``.socket``, ``.timer``; not a template
    ``name@.service``, which starts only as an instance, nor an alias, a
    link to a unit), then its init scripts with no unit of their name
    (``/etc/init.d/NAME``; where ``NAME.service`` exists, that unit replaces
    the script under systemd)."""
    units: list[str] = []
    names: set[str] = set()  # units and their aliases
    scripts: list[str] = []
    for line in listing.splitlines():
        entry = _ENTRY.match(line)
        if not entry:
            continue
        kind, path = entry.group("type"), entry.group("path")
        folder, name = posixpath.split(path)
        if f"{folder}/" in UNIT_DIRS and name.endswith(UNIT_KINDS) and "@." not in name:
            names.add(name)
            if kind == "-" and name not in units:
                units.append(name)
        elif f"{folder}/" == INIT_DIR and kind == "-" and not name.startswith("."):
            scripts.append(name)
    return (*units, *(f"/{INIT_DIR}{s}" for s in scripts if f"{s}.service" not in names))


def download_bytes(print_uris: str) -> int:
    """The bytes ``apt-get download --print-uris`` would fetch: each line is
    "'URI' FILE SIZE HASH"."""
    return sum(int(parts[2]) for parts in (ln.split() for ln in print_uris.splitlines()) if len(parts) >= 3)


def services_of(packages: list[tuple[str, str]], timeout_s: float = DOWNLOAD_TIMEOUT_S) -> tuple[tuple[str, str], ...]:
    """(package, service) for ``packages`` as (name, version): their .debs
    fetched into a temporary directory and listed, then the directory
    removed. Raises Unknown (one line) where any step fails or the whole
    takes over ``timeout_s``."""
    if not packages:
        return ()
    deadline = time.monotonic() + timeout_s
    wanted = [f"{name}={version}" for name, version in packages]
    with tempfile.TemporaryDirectory(prefix="isobench-debs-") as folder:
        _let_apt_write(folder)
        step = functools.partial(_step, folder=folder, deadline=deadline, timeout_s=timeout_s)
        uris = step(["apt-get", "download", "-q", "--print-uris", *wanted], "apt-get download")
        if download_bytes(uris) > MOST_BYTES:
            raise Unknown(
                f"the {len(packages)} new packages are {download_bytes(uris) / 1e6:.0f} MB to download, "
                f"over the {MOST_BYTES / 1e6:.0f} MB isobench fetches to read them"
            )
        step(["apt-get", "download", "-q", *wanted], "apt-get download")
        found: list[tuple[str, str]] = []
        for deb in sorted(f for f in os.listdir(folder) if f.endswith(".deb")):
            listing = step(["dpkg-deb", "-c", deb], f"dpkg-deb -c {deb}")
            found += [(deb.split("_", 1)[0], unit) for unit in services_in(listing)]  # NAME_VERSION_ARCH.deb
        return tuple(found)


def _step(argv: list[str], label: str, folder: str, deadline: float, timeout_s: float) -> str:
    """One step run in ``folder`` until ``deadline`` (``timeout_s`` after
    the first began): its stdout, or Unknown naming ``label``. A session of its own, so that a timeout also ends
    apt's download methods (its children)."""
    left = deadline - time.monotonic()
    r = run_argv(argv, left, cwd=folder, env={**os.environ, "LC_ALL": "C"}, own_session=True) if left > 0 else None
    if r is None or r.timed_out:
        raise Unknown(f"reading the new packages took over {timeout_s:.0f} s (at {label})")
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr + "\n" + r.stdout).splitlines() if ln.strip()]
        why = next((ln for ln in lines if ln.startswith("E:")), lines[-1] if lines else f"exit {r.returncode}")
        raise Unknown(f"{label}: {' '.join(why.split())[:200]}")
    return r.stdout


def _let_apt_write(folder: str) -> None:
    """As root, the folder is given to apt's download user, so that apt
    keeps its sandbox (it fetches as root, with a warning, where _apt
    cannot write). Not root, or no such user: left as it is."""
    if os.geteuid() != 0:
        return
    try:
        os.chown(folder, pwd.getpwnam("_apt").pw_uid, -1)
    except (KeyError, OSError):
        pass
