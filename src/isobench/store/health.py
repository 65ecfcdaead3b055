"""`isobench store check`: what is damaged in a store, read only and
leaving nothing beside it. SQLite's integrity check, each of its lines one
problem (SQLite joins one tree's lines in one row); a file shorter than its
header says; and the schema's objects against isobench's own, since the
integrity check never looks inside a view or a trigger (a `runs` that is a
view recursing for ever is sound to it). store/salvage.py recovers."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from functools import cache

from isobench.core.ids import shown
from isobench.store.damage import SQLITE_MAGIC
from isobench.store.readonly import connect_to_inspect
from isobench.store.schema import ADDED_COLUMNS, SCHEMA

# The tables every isobench store has had from its first schema; the others
# (fleet_hosts) an older store may lack, and readers read as empty.
FIRST_TABLES = ("runs", "env_facts", "metric_defs", "samples")
TRANSIENT = frozenset({"isobench_probe"})  # Store.check_writable's, made and dropped in one transaction


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    more: bool = False  # the integrity check stopped at its limit: there may be more


def check(path: str, limit: int = 20) -> Checked:
    """Every problem of the store at PATH, read only ([] when sound)."""
    db = connect_to_inspect(path)
    out = Checked(problems=shorter_than_said(path))
    try:
        db.execute("PRAGMA writable_schema=ON")  # a store cut short is checked as far as it goes
        lines = integrity(db, limit)
        out.more = len(lines) >= limit
        out.problems += lines
        try:
            out.problems += schema_problems(db)
        except sqlite3.DatabaseError:
            pass  # its table list does not read: the integrity check said so
    finally:
        db.close()
    return out


def integrity(db: sqlite3.Connection, limit: int) -> list[str]:
    """SQLite's integrity_check, one problem a line ([] when ok)."""
    try:
        rows = [r[0] for r in db.execute(f"PRAGMA integrity_check({int(limit)})")]
    except sqlite3.DatabaseError as exc:  # a page so damaged the check itself stops there
        return [f"integrity_check stopped: {exc}", *_per_table(db)]
    lines = [line for row in rows for line in str(row).splitlines() if line and not line.startswith("*** ")]
    return [] if lines == ["ok"] else lines[:limit]


def _per_table(db: sqlite3.Connection) -> list[str]:
    """Where the whole check stopped: each of isobench's tables checked alone."""
    try:
        have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError:
        return []  # not even its table list: the line before says why
    out = []
    for table in (t for t in FIRST_TABLES if t in have):
        try:
            first = db.execute(f"PRAGMA integrity_check({table})").fetchone()  # the fixed names above
        except sqlite3.DatabaseError as exc:
            out.append(f"table {table}: {exc}")
            continue
        if first is not None and first[0] != "ok":
            out.append(f"table {table}: {str(first[0]).splitlines()[-1]}")
    return out


def shorter_than_said(path: str) -> list[str]:
    """A file shorter than the page count its header gives (SQLite then
    refuses the whole store): cut short."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(100)
            size = fh.seek(0, 2)
    except OSError:
        return []  # SQLite read it: its own lines say what is wrong
    if not size:
        return []  # an empty store: isobench makes its tables at its first write
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return ["its first page does not start as an SQLite database's: its header (maybe its table list) is damaged"]
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    said = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96]  # SQLite trusts the count only then
    if valid and page >= 512 and said > size // page:
        return [f"the file holds {size // page} pages of {page} bytes, its header says {said}: it was cut short"]
    return []


@cache
def declared() -> dict[str, tuple[str, frozenset[str]]]:
    """isobench's schema objects: {name: (type, columns of a table)}."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        objects = db.execute("SELECT type, name FROM sqlite_master").fetchall()
        return {name: (kind, frozenset(c for c, _ in _columns(db, name))) for kind, name in objects}
    finally:
        db.close()


def _columns(db: sqlite3.Connection, table: str) -> list[tuple[str, int]]:
    """(name, hidden) of each column: hidden is a generated or virtual table's column."""
    quoted = '"' + table.replace('"', '""') + '"'
    return [(r[1], r[6]) for r in db.execute(f"PRAGMA table_xinfo({quoted})")]


def schema_problems(db: sqlite3.Connection) -> list[str]:
    """Each schema object isobench's schema does not declare as it is (a
    view, a trigger, a table not its own, a column it never made), and each
    of its first tables missing; [] for an empty file."""
    objects = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    if not objects:
        return []
    want, out = declared(), []
    for kind, name, sql in objects:
        if name in TRANSIENT:
            continue
        own = want.get(name)
        if own is None or own[0] != kind:
            theirs = f" (isobench's {name} is a {own[0]})" if own else ""
            out.append(f"{kind} {shown(name)}: not in isobench's schema{theirs}")
        elif kind == "table":
            out += table_problems(db, name, sql or "", own[1])
    names = {name for _, name, _ in objects}
    return out + [f"table {t}: missing" for t in FIRST_TABLES if t not in names]


def table_problems(db: sqlite3.Connection, name: str, sql: str, want: frozenset[str]) -> list[str]:
    """What makes table NAME not the one isobench made (WANT: its columns)."""
    if not sql.upper().startswith("CREATE TABLE"):
        return [f"table {name}: not an ordinary table ({shown(sql[:60])})"]
    have = _columns(db, name)
    added = {column for table, column, _ in ADDED_COLUMNS if table == name}
    out = [f"table {name}: column {shown(c)} is computed, not stored" for c, hidden in have if hidden]
    names = {c for c, _ in have}
    out += [f"table {name}: column {shown(c)} is not isobench's" for c in sorted(names - want)]
    return out + [f"table {name}: column {c} missing" for c in sorted(want - added - names)]
