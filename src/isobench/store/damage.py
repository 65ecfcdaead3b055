"""A damaged store, in the words every command uses: the one line naming
it and what to run, whether a file is an SQLite database at all, and the
writer's bounded quick check (store/health.py checks, store/salvage.py recovers)."""

from __future__ import annotations

import os
import sqlite3
import time

SQLITE_MAGIC = b"SQLite format 3\x00"


# the writer's check at a run's start: seconds it may take before a large store is taken as it is
QUICK_CHECK_S = 2.0


def damaged_line(path: str, why: str) -> str:
    """The one line every command says of a damaged store."""
    return (
        f"{path}: the store is damaged ({why}); `isobench store check --store {path}` says where, and "
        f"`isobench store recover -o NEW.sqlite --store {path}` copies every run that still reads"
    )


def looks_like_sqlite(path: str) -> bool:
    """Whether the file starts as an SQLite database does (damaged or not)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def quick_check(db: sqlite3.Connection, budget_s: float = QUICK_CHECK_S) -> str:
    """SQLite's quick_check, stopped after budget_s (a large store is
    then taken as it is): its first problem, or "" when none was found."""
    deadline = time.monotonic() + budget_s
    db.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        first = db.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.OperationalError as exc:
        return "" if "interrupted" in str(exc) else str(exc)
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        db.set_progress_handler(None, 0)
    return "" if first is None or first[0] == "ok" else " ".join(str(first[0]).split())


def identity(path: str) -> tuple[int, int] | None:
    """The store file's (device, inode) as opened."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def still_there(path: str, opened: tuple[int, int] | None) -> str:
    """Why the store file is no longer the one opened ("" when it is): removed
    (SQLite goes on writing into the unlinked file) or replaced by another."""
    if opened is None:
        return ""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{path}: the store file was removed while the run wrote to it; the samples since are lost with it"
    except OSError:
        return ""
    if (st.st_dev, st.st_ino) != opened or st.st_nlink == 0:
        return f"{path}: the store file was replaced while the run wrote to it; the run wrote into the old one"
    return ""
