"""A store a reader may not write, opened only to be read (issue 47: a
store on a read-only filesystem refused even the readers); a writable one
is opened as every command opens it (a read-only connection would leave its
-wal and -shm files behind, which only a writer removes). SQLite's `mode=ro` first. Every store
is in WAL mode, and a WAL database is read through its `-shm` index, which
SQLite creates beside the file when it is missing
(https://www.sqlite.org/wal.html#readonly): on a read-only filesystem it
cannot. Then the store is opened `immutable=1` (no locks, no index), which is
honest only while nothing can change the file: its filesystem is read-only,
and no write-ahead log (`-wal`) holds commits not yet in the file (immutable
would skip them). A pending log there is refused in one line instead, and so
is a directory this user may not write on a writable filesystem (a writer
may come meanwhile: no immutable there). Immutable trusts that nobody writes
the file while it is read: a read-only bind mount of a store that a run
writes through another path is read safely only while that run has it open
(its -shm exists, and mode=ro reads through it)."""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

# mode=ro could not open or create the -shm index: a read-only filesystem,
# a directory this user may not write to
NO_INDEX = frozenset({"SQLITE_CANTOPEN", "SQLITE_READONLY_DIRECTORY"})


class UnreadableStore(Exception):
    """str() is the one-line message."""


def uri(path: str, **params: str) -> str:
    """The file: URI SQLite opens PATH by ('?', '#' and '%' in a name quoted)."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(os.path.abspath(path))}?{query}"


def writable(path: str) -> bool:
    """May this process write the store and make its -wal and -shm beside
    it? access(2) says no on a read-only filesystem, for an immutable file,
    and where the modes forbid this user."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def on_read_only_fs(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def pending_log(path: str) -> int:
    """Bytes of PATH's write-ahead log (0: none, or empty)."""
    try:
        return os.path.getsize(f"{path}-wal")
    except OSError:
        return 0


def open_way(read_only_fs: bool, log_bytes: int) -> str:
    """After mode=ro could not open the index: "immutable" when the file
    cannot change and holds every commit, "pending" when a log on a
    read-only filesystem holds commits the file lacks, "index" when the
    index could be made by someone who may write beside the store. Pure."""
    if not read_only_fs:
        return "index"
    return "pending" if log_bytes else "immutable"


def problem(path: str, way: str) -> str:
    """The one line for a store a reader cannot open (way: open_way's)."""
    if way == "pending":
        return (
            f"{path}: on a read-only filesystem with commits still in its write-ahead log ({path}-wal), "
            "which SQLite cannot read there; copy the store and its -wal file to a writable place and read the copy"
        )
    return (
        f"{path}: SQLite reads a store through an index it creates beside it ({path}-shm), "
        f"and {os.path.dirname(os.path.abspath(path))} is not writable here; read it as a user who may write "
        "there, or copy the store to a writable place"
    )


def connect_read_only(path: str, timeout: float = 30) -> sqlite3.Connection:
    """A connection that cannot write to PATH, or UnreadableStore."""
    db = sqlite3.connect(uri(path, mode="ro"), uri=True, timeout=timeout)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1")  # the index is opened at the first read
        return db
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "") not in NO_INDEX:
            return db  # damage: the caller's own reads meet it and say so
    db.close()
    if not os.access(path, os.R_OK):
        raise UnreadableStore(f"{path}: not readable by this user; read it as one who may, or give another --store")
    way = open_way(on_read_only_fs(path), pending_log(path))
    if way != "immutable":
        raise UnreadableStore(problem(path, way))
    return sqlite3.connect(uri(path, mode="ro", immutable="1"), uri=True, timeout=timeout)


def connect_to_inspect(path: str, timeout: float = 30) -> sqlite3.Connection:
    """A connection that reads PATH, writes nothing to it, and leaves nothing
    beside it (`store check`, `store recover`): a read-only connection
    leaves the -wal and -shm it made, so a store this process may write, with
    no commits pending in a log, is opened read-write with every write
    refused (query_only); its close, the last one, removes the empty log and
    the index, and writes nothing to the store (an empty log has nothing to
    copy). A store with commits in its log (the close would copy them into
    the file), or one this process may not write, is read read-only."""
    if not writable(path) or pending_log(path):
        return connect_read_only(path, timeout)
    db = sqlite3.connect(uri(path, mode="rw"), uri=True, timeout=timeout)
    db.execute("PRAGMA query_only=ON")
    return db


def empty_missing_tables(db: sqlite3.Connection, schema: str) -> None:
    """Each table the schema names that the store lacks (an older store has
    no fleet_hosts, an empty file none), as an empty TEMP table (a read-only
    connection can make those): readers query it as they would a newer store's."""
    have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    for statement in schema.split(";"):
        words = statement.split()
        if words[:5] == ["CREATE", "TABLE", "IF", "NOT", "EXISTS"] and words[5] not in have:
            db.execute(statement.replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))
