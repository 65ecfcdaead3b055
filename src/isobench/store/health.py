"""A damaged store, told and recovered: SQLite's integrity check, read
only, and the copy of every run that still reads whole into a new store
(through the run export, store/transfer.py, which checks every value
again); a run any of whose rows cannot be read is counted as lost."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from types import SimpleNamespace

from isobench.store.readonly import connect_read_only
from isobench.store.transfer import TABLES, TransferError, export_run, import_run


def _read_only(path: str) -> sqlite3.Connection:
    return connect_read_only(path)  # also on a read-only filesystem


CHECK_LIMIT = 20  # integrity_check stops after this many problems
HEADER = re.compile(r"\*\*\* in database \S+ \*\*\*")  # which database the lines under it are of


def integrity(path: str, limit: int = CHECK_LIMIT) -> list[str]:
    """SQLite's integrity_check on the store, read only: its problems, one
    a line ([] when ok). SQLite returns one b-tree's problems as one row of
    lines under a "*** in database main ***" header: split, the header left
    out (issue 55: they printed joined by a literal \\x0a, counted as one)."""
    db = _read_only(path)
    try:
        rows = [r[0] for r in db.execute(f"PRAGMA integrity_check({int(limit)})")]
    except sqlite3.DatabaseError as exc:  # a page so damaged the check itself stops there
        rows = [f"integrity_check stopped: {exc}"]
    finally:
        db.close()
    lines = [line.strip() for row in rows for line in str(row).splitlines() if line.strip()]
    return [] if lines == ["ok"] else [line for line in lines if not HEADER.fullmatch(line)]


@dataclass
class Recovered:
    kept: list[str] = field(default_factory=list)
    lost: list[tuple[str, str]] = field(default_factory=list)  # (run id, why)


def _run_ids(db: sqlite3.Connection) -> list[str]:
    """Every run id the runs table still reads, then any only the samples name."""
    ids: list[str] = []
    for query in ("SELECT run_id FROM runs NOT INDEXED", "SELECT DISTINCT run_id FROM samples NOT INDEXED"):
        try:
            ids += [r[0] for r in db.execute(query) if r[0] not in ids]
        except sqlite3.DatabaseError:
            continue
    return ids


def recover(path: str, into) -> Recovered:
    """Copy every run of the damaged store at PATH that reads whole into the
    store INTO (opened by the caller); rows are read without the indexes,
    which a damaged page often hits."""
    db = _read_only(path)
    out = Recovered()
    try:
        source = SimpleNamespace(db=_Unindexed(db), path=path)
        for run_id in _run_ids(db):
            try:
                import_run(into, export_run(source, run_id))
                out.kept.append(run_id)
            except (sqlite3.DatabaseError, TransferError) as exc:
                out.lost.append((run_id, str(exc)[:200]))
    finally:
        db.close()
    return out


class _Unindexed:
    """A connection whose reads of the run's tables skip their indexes."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def execute(self, sql: str, params=()):
        for table in TABLES:
            sql = sql.replace(f"FROM {table} WHERE", f"FROM {table} NOT INDEXED WHERE")
        return self._db.execute(sql, params)
