"""The files a command workload copies into every environment: read on the
controller (regular files and directories of them, each named by its base
name in the environment's scratch directory), their SHA-256 digests, one
tar archive that carries them with their modes and times, and the check of
what ``sha256sum`` reads back inside an environment; and the shared
libraries ``ldd`` lists for the command's executable, whose bytes are part
of the program as much as its own."""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import stat
import tarfile
from dataclasses import dataclass

from isobench.workloads.base import WorkloadError

# The archive is built in memory and every environment holds a copy.
MAX_FILES_BYTES = 512 * 2**20
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    rel: str  # path inside the scratch directory, "/"-separated
    source: str  # on the controller
    size: int
    sha256: str


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _refuse(path: str, why: str) -> WorkloadError:
    return WorkloadError(f"files: {path} {why}")


def manifest(files: tuple[str, ...]) -> list[Entry]:
    """Every regular file the ``files`` list names, directories walked, in a
    fixed order; WorkloadError names the first path that is missing, not a
    regular file or directory, a link or special file inside a directory,
    or that brings the total over MAX_FILES_BYTES."""
    out: list[Entry] = []
    total = 0
    for given in files:
        top = os.path.realpath(given)
        base = os.path.basename(top.rstrip("/"))
        try:
            st = os.stat(top)
        except OSError:
            raise _refuse(
                given, "does not exist (paths are read on the controller, relative to the directory isobench runs in)"
            ) from None
        if stat.S_ISREG(st.st_mode):
            found = [(base, top)]
        elif stat.S_ISDIR(st.st_mode):
            found = _walk(given, top, base)
        else:
            raise _refuse(given, "is not a regular file or a directory")
        for rel, source in found:
            if "\n" in rel or "\\" in rel:
                raise _refuse(source, "has a newline or backslash in its name; rename it")
            size = os.path.getsize(source)
            total += size
            if total > MAX_FILES_BYTES:
                raise _refuse(
                    given,
                    f"brings the copied files over {MAX_FILES_BYTES // 2**20} MiB; copy "
                    "less, or let setup fetch or build it inside the environment",
                )
            out.append(Entry(rel, source, size, _sha256(source)))
    return out


def _walk(given: str, top: str, base: str) -> list[tuple[str, str]]:
    found = []
    for root, dirs, names in os.walk(top):
        dirs.sort()
        for name in [*sorted(names), *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
            source = os.path.join(root, name)
            st = os.lstat(source)
            if not stat.S_ISREG(st.st_mode):
                raise _refuse(
                    os.path.join(given, os.path.relpath(source, top)),
                    "is a link or a special file; only regular files are copied",
                )
            found.append(("/".join([base, *os.path.relpath(source, top).split(os.sep)]), source))
    return found


def digests(entries: list[Entry]) -> dict[str, str]:
    """One digest per top-level name: a file's own SHA-256, a directory's
    SHA-256 over its files' relative paths and digests. Recorded with each sample."""
    tops: dict[str, list[Entry]] = {}
    for e in entries:
        tops.setdefault(e.rel.split("/", 1)[0], []).append(e)
    out = {}
    for top, group in tops.items():
        if len(group) == 1 and group[0].rel == top:
            out[top] = group[0].sha256
        else:
            lines = "".join(f"{e.rel}\0{e.sha256}\n" for e in group)
            out[top + "/"] = hashlib.sha256(lines.encode()).hexdigest()
    return out


def archive(entries: list[Entry]) -> bytes:
    """A tar of the entries under their relative paths: modes and times kept
    (a build's make reads them), owners not (root's in every environment)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for e in entries:
            info = tar.gettarinfo(e.source, arcname=e.rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(e.source, "rb") as fh:
                tar.addfile(info, fh)
    return buf.getvalue()


def check_copied(entries: list[Entry], sha256sum_out: str, env_name: str) -> None:
    """What ``sha256sum`` printed in the environment's scratch directory
    ("HASH  ./REL" lines) against the controller's digests: WorkloadError
    names the first file that differs or is missing, and both digests."""
    got = {}
    for line in sha256sum_out.splitlines():
        digest, _, rel = line.partition("  ")
        got[rel.removeprefix("./")] = digest
    for e in entries:
        if got.get(e.rel) != e.sha256:
            raise WorkloadError(
                f"files: {e.rel} in {env_name} is not the controller's copy: {got.get(e.rel, 'missing')} != {e.sha256}"
            )


def ldd_libraries(text: str) -> dict[str, str]:
    """The shared libraries ``ldd`` printed for an executable, as {soname:
    the path it resolved} ("not found" where it found none), the dynamic
    loader under its file's name. The vDSO (the kernel's, no file) is left
    out; a static executable or a script's ``not a dynamic executable``
    lists none."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        name, arrow, rest = line.partition(" => ")
        if arrow:
            out[name.strip()] = rest.rsplit(" (0x", 1)[0].strip()
        elif line.startswith("/"):
            path = line.rsplit(" (0x", 1)[0].strip()
            out[posixpath.basename(path)] = path
    return out
