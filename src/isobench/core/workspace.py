"""Where isobench keeps things on the host. Everything it creates lives under
these roots or carries the isobench label, so cleanup can find it.

The scratch roots are root's alone (issue 55): /dev/shm is anyone's to
write, and a root another user made first, or a symlink, would let them
swap a run's files, plant a pidfile that teardown signals, or point
`clean` at a directory not isobench's. A root is made 0700 by isobench, and
one that already exists is used only if it is a real directory of this
user's that nobody else may write."""

import os
import stat

from isobench.core.errors import IsobenchError

STATE_ROOT = os.environ.get("ISOBENCH_HOME", "/var/lib/isobench")
DATA_ROOT = os.path.join(STATE_ROOT, "scratch")  # workload files on the host disk
TMP_ROOT = "/dev/shm/isobench"  # RAM-backed inputs (tmpfs)
IMAGE_ROOT = os.path.join(STATE_ROOT, "images")
DEFAULT_STORE = os.path.join(STATE_ROOT, "results.sqlite")
LABEL = "isobench"  # Docker label key on every container, volume and network
SCRATCH_ROOTS = (DATA_ROOT, TMP_ROOT)  # a run's `<run id>-…` directories

# Inside a container or guest: the environment's own storage and its tmpfs.
GUEST_DATA_DIR = "/isobench/data"
GUEST_TMP_DIR = "/isobench/tmp"


class ForeignRoot(IsobenchError):
    """A scratch root isobench cannot trust: not its own directory."""


def of_run(entry: str, run_id: str) -> bool:
    """Is a scratch entry (named `<run id>-…`) the run's?"""
    return entry.startswith(f"{run_id}-")


def foreign(path: str) -> str | None:
    """Why `path` is not root's alone (a symlink, not a directory, another
    owner, writable by group or others); None when it is, or is not there
    yet. lstat: a symlink is never followed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"is a symlink (to {os.readlink(path)})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid not in (0, os.geteuid()):  # root's (a reader not root trusts it too) or one's own
        return f"belongs to uid {st.st_uid}, not to root"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def refuse_foreign(path: str) -> None:
    """One line naming the root and the fix, if it is not this user's alone."""
    why = foreign(path)
    if why:
        raise ForeignRoot(
            f"{path} {why}: isobench keeps its scratch files there and must own it alone; "
            f"see what it holds, remove it (rm -r {path}) and run again"
        )


def own_root(path: str, mode: int = 0o700) -> str:
    """`path`, made with `mode` if missing, else refused unless it is this
    user's alone (refuse_foreign). mkdir, not makedirs(exist_ok): one that
    exists is checked, never taken as found."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, mode)
    except FileExistsError:
        pass
    refuse_foreign(path)
    return path


def own_scratch_roots() -> None:
    """Every scratch root made, or refused in one line, before a run makes anything under them."""
    for root in SCRATCH_ROOTS:
        own_root(root)
