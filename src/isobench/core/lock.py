"""One study at a time per host: two runs would measure each other. The
lock lives at a fixed host path, whatever ISOBENCH_HOME says: two homes are
still one host (issue 47: runs under two homes measured at the same time,
and one home's `clean` removed the other's live run)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import TextIO

from isobench.core import owner

# /run: the host's runtime state (a tmpfs, empty after a boot, as a lock should be)
LOCK_PATH = "/run/isobench/run.lock"


class AlreadyRunning(RuntimeError):
    pass


class RunLock:
    """An flock on LOCK_PATH: the kernel drops it when the holder dies, even
    by SIGKILL, so a crash never leaves the host locked."""

    def __init__(self, path: str = LOCK_PATH):
        self.path = path
        self._fh: TextIO | None = None

    def acquire(self, study: str) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = _describe(fh.read())
            fh.close()
            raise AlreadyRunning(
                f"another isobench run is in progress ({holder}); one study at a time "
                "per host, since two would measure each other"
            ) from None
        self._fh = fh
        self._write({"pid": os.getpid(), "study": study, "started": time.strftime("%Y-%m-%d %H:%M:%S")})

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


def running_run_id(path: str = LOCK_PATH) -> str | None:
    """The run id of the study holding the lock now, or None when no study
    runs (a stored run still "running" then died without finishing)."""
    try:
        fh = open(path)
    except OSError:
        return None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(fh.read() or "{}").get("run_id") or "?"
            except ValueError:
                return "?"
        fcntl.flock(fh, fcntl.LOCK_UN)
        return None


def live_run_ids(path: str = LOCK_PATH, owners: str | None = None) -> frozenset[str]:
    """The runs a study measures now on this host: the lock holder's, and
    every run whose owner file names a live process (core/owner.py). A
    stored run still "running" that is neither died without finishing. The
    owner files answer even while the lock names no run yet, and for a run
    of another home (the lock then names that one)."""
    holder = running_run_id(path)
    named = {holder} if holder not in (None, "?") else set()
    return frozenset(owner.live_run_ids(owners or owner.OWNERS_DIR) | named)


def _describe(text: str) -> str:
    try:
        info = json.loads(text)
    except ValueError:
        return "holder unknown"
    run = f"run {info['run_id']}, " if info.get("run_id") else ""
    return f"{run}study {info.get('study', '?')}, pid {info.get('pid', '?')}, started {info.get('started', '?')}"
