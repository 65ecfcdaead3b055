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


# Kernel and device filesystems: their "regular" files report a size of 0
# and may block or never end (/proc/self/pagemap), or act when read.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_PSEUDO_TYPES = frozenset(
    "proc sysfs devtmpfs devpts cgroup cgroup2 debugfs tracefs securityfs configfs pstore bpf "
    "efivarfs fusectl hugetlbfs mqueue binfmt_misc autofs rpc_pipefs nsfs".split()
)


def outside_reason(given: str) -> str | None:
    """Why a ``files`` entry names a path outside the study's directory by
    its spelling alone (absolute, or a ``..`` that climbs out), or None."""
    if posixpath.isabs(given):
        return "is an absolute path; files are read relative to the study file's directory: copy it beside the study"
    if posixpath.normpath(given).split("/")[0] == "..":
        return "leaves the study file's directory ('..'); copy it beside the study"
    return None


def pseudo_devices(mountinfo: str) -> frozenset[int]:
    """Pure: the st_dev of every kernel or device filesystem mounted, from
    /proc/self/mountinfo's text (field 3 major:minor, the type after ' - ')."""
    out = set()
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 3 or not right.split():
            continue
        if right.split()[0] in _PSEUDO_TYPES:
            major, _, minor = fields[2].partition(":")
            if major.isdigit() and minor.isdigit():
                out.add(os.makedev(int(major), int(minor)))
    return frozenset(out)


def _mounted_pseudo() -> frozenset[int]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            return pseudo_devices(fh.read(1 << 22))
    except OSError:
        return frozenset()


def _hash_bounded(path: str, room: int) -> tuple[int, str] | None:
    """The file's size and SHA-256 as read (not as reported), or None when it
    holds more than ``room`` bytes. Opened without following a link and
    without blocking, and refused unless it is a regular file once open."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        digest, size = hashlib.sha256(), 0
        while chunk := fh.read(min(_CHUNK, room - size + 1)):
            size += len(chunk)
            if size > room:
                return None
            digest.update(chunk)
    return size, digest.hexdigest()


def _refuse(path: str, why: str, field: str) -> WorkloadError:
    return WorkloadError(f"{field}: {path} {why}", field=field)


def manifest(files: tuple[str, ...], base: str = ".") -> list[Entry]:
    """Every regular file the ``files`` list names, relative to ``base`` (the
    study file's directory), directories walked, in a fixed order;
    WorkloadError (its field ``files[i]``) names the first entry that leaves
    ``base`` (by its spelling or through a link), is missing, is not a
    regular file or directory or lives on a kernel or device filesystem,
    holds a link or special file, or brings the total over MAX_FILES_BYTES
    (as read: a reported size may lie)."""
    root = os.path.realpath(base)
    pseudo = _mounted_pseudo()
    out: list[Entry] = []
    total = 0
    for i, given in enumerate(files):
        field = f"files[{i}]"
        why = outside_reason(given)
        if why:
            raise _refuse(given, why, field)
        top = os.path.realpath(os.path.join(root, given))
        if os.path.commonpath([root, top]) != root:
            raise _refuse(given, f"leads outside the study file's directory ({root}) through a link", field)
        try:
            st = os.lstat(top)
        except OSError:
            where = f"files are read relative to the study file's directory, {root}"
            raise _refuse(given, f"does not exist ({where})", field) from None
        if _is_pseudo(top, st, pseudo) or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise _refuse(given, "is not a regular file or a directory of them", field)
        base_name = os.path.basename(top.rstrip("/"))
        found = [(base_name, top)] if stat.S_ISREG(st.st_mode) else _walk(given, top, base_name, pseudo, field)
        for rel, source in found:
            shown = os.path.join(given, os.path.relpath(source, top)) if source != top else given
            if "\n" in rel or "\\" in rel:
                raise _refuse(shown, "has a newline or backslash in its name; rename it", field)
            try:
                read = _hash_bounded(source, MAX_FILES_BYTES - total)
            except OSError as exc:
                raise _refuse(shown, f"cannot be read ({exc.strerror or exc})", field) from None
            if read is None:
                raise _refuse(
                    given,
                    f"brings the copied files over {MAX_FILES_BYTES // 2**20} MiB; copy "
                    "less, or let setup fetch or build it inside the environment",
                    field,
                )
            total += read[0]
            out.append(Entry(rel, source, *read))
    return out


def _is_pseudo(path: str, st: os.stat_result, pseudo: frozenset[int]) -> bool:
    return st.st_dev in pseudo or any(path == r or path.startswith(r + "/") for r in _PSEUDO_ROOTS)


def _walk(given: str, top: str, base: str, pseudo: frozenset[int], field: str) -> list[tuple[str, str]]:
    found = []
    for root, dirs, names in os.walk(top):
        dirs.sort()
        for name in [*sorted(names), *dirs]:
            source = os.path.join(root, name)
            st = os.lstat(source)
            shown = os.path.join(given, os.path.relpath(source, top))
            if stat.S_ISDIR(st.st_mode) and not _is_pseudo(source, st, pseudo):
                continue  # walked in its turn
            if not stat.S_ISREG(st.st_mode) or _is_pseudo(source, st, pseudo):
                raise _refuse(shown, "is a link or a special file; only regular files are copied", field)
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
