"""One study at a time per host: two runs would measure each other. The
lock lives at a fixed host path, whatever ISOBENCH_HOME says: two homes are
still one host (issue 47: runs under two homes measured at the same time,
and one home's `clean` removed the other's live run).

The lock file is root's alone (0600, in a directory of root's that no one
else may write): a shared flock needs only read access, and `nobody`
holding one stopped root's runs (issue 55). A refusal names the holder only
while the process the file names still runs (pid, boot and start time, as
core/owner.py tells): a SIGKILLed run's words outlive it."""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from isobench.core import owner
from isobench.core.errors import IsobenchError
from isobench.core.numbers import fmt_duration
from isobench.core.workspace import own_root

# /run: the host's runtime state (a tmpfs, empty after a boot, as a lock should be)
LOCK_PATH = "/run/isobench/run.lock"
# A test suite's lane of its own (test.sh's side lane) takes its runs' lock
# here instead, so they do not wait for the main lane's: runs in two lanes
# measure each other, which a suite's functional tests stand and a result
# worth keeping does not. Never set outside a test suite.
LANE_ENV = "ISOBENCH_TEST_LANE"
LANES_DIR = "/run/isobench/lanes"
LANE_NAME = re.compile(r"[a-z][a-z0-9-]{0,31}")
WAIT_POLL_S = 1.0  # how often a run that waits for the lock asks again (a run lasts minutes)
# Held only while a client host picks a free /24 and puts its address on it:
# two starting at once (two test lanes, or `explain` beside a library user)
# would otherwise both take the same free one
SUBNET_LOCK_PATH = "/run/isobench/subnet.lock"
MOMENT_WAIT_S = 30.0


class AlreadyRunning(RuntimeError):
    pass


def lock_path() -> str:
    """The run lock of this process: the host's, or its test lane's."""
    lane = os.environ.get(LANE_ENV, "")
    if not lane:
        return LOCK_PATH
    if not LANE_NAME.fullmatch(lane):
        raise IsobenchError(
            f"{LANE_ENV}={lane[:40]!r}: a test lane is named with lowercase letters, digits and '-' "
            f"(up to 32, e.g. beside); unset it outside a test suite"
        )
    return os.path.join(LANES_DIR, f"{lane}.lock")


class RunLock:
    """An flock on lock_path() (the host's LOCK_PATH outside a test lane):
    the kernel drops it when the holder dies, even by SIGKILL, so a crash
    never leaves the host locked."""

    def __init__(self, path: str | None = None):
        self.path = path or lock_path()
        self._fh: TextIO | None = None

    def acquire(self, study: str, wait_s: float = 0.0, waiting: Callable[[str], None] | None = None) -> None:
        """Take the lock, waiting up to ``wait_s`` seconds for its holder to
        finish; ``waiting(holder)`` is told who holds it when the wait
        begins and each time another run takes it meanwhile. AlreadyRunning
        when it is still held."""
        fh = _open_private(self.path)
        deadline, told = time.monotonic() + wait_s, None
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                fh.seek(0)
                holder = _describe(fh.read(), self.path)
            left = deadline - time.monotonic()
            if left <= 0:
                fh.close()
                waited = f"; waited {fmt_duration(wait_s)} for it" if wait_s > 0 else ""
                raise AlreadyRunning(
                    f"another isobench run is in progress ({holder}){waited}; one study at a time "
                    "per host, since two would measure each other"
                ) from None
            if waiting is not None and holder != told:
                waiting(holder)
                told = holder
            time.sleep(min(WAIT_POLL_S, left))
        self._fh = fh
        me = owner.me()
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        self._write({"pid": me.pid, "boot": me.boot, "start": me.start, "study": study, "started": started})

    def set_run_id(self, run_id: str) -> None:
        if self._fh is not None:
            fh = self._fh
            fh.seek(0)
            info = json.loads(fh.read() or "{}")
            self._write({**info, "run_id": run_id})

    def _write(self, info: dict) -> None:
        fh = self._fh
        assert fh is not None  # written only while the lock is held
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps(info))
        fh.flush()

    def release(self) -> None:
        if self._fh is not None:
            self._fh.seek(0)
            self._fh.truncate()
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def moment(path: str, wait_s: float = MOMENT_WAIT_S) -> Iterator[None]:
    """An flock held for a few commands' time; TimeoutError naming the file
    when its holder keeps it past ``wait_s``."""
    fh = _open_private(path)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{path} held for more than {wait_s:g} s by another isobench process") from None
                time.sleep(0.05)
        yield
    finally:
        fh.close()


def _open_private(path: str) -> TextIO:
    """The lock file, root's alone: its directory root's and written by no
    one else (made 0755, so a reader may still stat the file), the file
    0600 (an older 0644 one narrowed), never through a symlink."""
    own_root(os.path.dirname(path), mode=0o755)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "r+")


def running_run_id(path: str | None = None) -> str | None:
    """The run id of the study holding the lock now ("?" when the holder
    names none, or is not the process it names, or the file is not ours to
    read), or None when no study runs (a stored run still "running" then
    died without finishing)."""
    path = path or lock_path()
    try:
        fh = open(path)
    except PermissionError:  # not root: the kernel's lock table still says whether it is held
        return "?" if held(path) else None
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _live_holder(fh.read())
            return (info or {}).get("run_id") or "?"
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None


def held(path: str) -> bool:
    """Does anyone hold a lock on the file at `path`? /proc/locks names
    each lock's file as MAJOR:MINOR:INODE (hex device numbers), and anyone may read it."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as fh:
            table = fh.read()
    except OSError:
        return False
    node = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(node in line.split() for line in table.splitlines())


def live_run_ids(path: str | None = None, owners: str | None = None) -> frozenset[str]:
    """The runs a study measures now on this host: the lock holder's, and
    every run whose owner file names a live process (core/owner.py). A
    stored run still "running" that is neither died without finishing. The
    owner files answer even while the lock names no run yet, and for a run
    of another home (the lock then names that one)."""
    holder = running_run_id(path)
    named = {holder} if holder not in (None, "?") else set()
    return frozenset(owner.live_run_ids(owners or owner.OWNERS_DIR) | named)


def _live_holder(text: str) -> dict | None:
    """What the lock file says of its holder, if the process it names
    still runs (same pid, boot and start time); None otherwise: a holder
    that wrote nothing, a dead run's words, or a file from before holders
    wrote their start time."""
    try:
        info = json.loads(text)
        named = owner.Owner(int(info["pid"]), str(info["boot"]), int(info["start"]))
    except (ValueError, KeyError, TypeError):
        return None
    return info if owner.is_live(named, owner.boot_id(), owner.started(named.pid)) else None


def _describe(text: str, path: str) -> str:
    info = _live_holder(text)
    if info is None:
        return f"{path} is held by a process that names no live isobench run; `fuser -v {path}` shows it"
    run = f"run {info['run_id']}, " if info.get("run_id") else ""
    return f"{run}study {info.get('study', '?')}, pid {info['pid']}, started {info.get('started', '?')}"
