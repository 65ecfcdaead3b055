"""`isobench store recover`: every run a damaged store still reads whole,
copied into a new store through the run import (store/transfer.py, which
checks every value again), and exactly what could not be read.

Each of a run's tables is listed first: which rows (rowids) each run has.
The table itself says so when it reads to its end; where it does not (a
damaged page), its index by run id does (read forward, then backward from
its end: a run before the first damage or after the last is listed whole).
A run is then read row by row, by rowid, from what the listing gave: a
damaged page loses only the runs with a row on it, and a run is copied only
when every row listed reads and is its own. Only isobench's own tables are
read (never a view or a trigger, whose SQL could run for ever), each row a
bounded number of times, so recover ends, and the new store grows only by
what was read. A store whose first page does not read is read from a copy
with isobench's own first page (store/mend.py). The damaged store is only
read and nothing is left beside it (readonly.connect_to_inspect); the new
store is made under a temporary name and put in place at the end, only when
a run was copied (or the store held none): a failed recover leaves nothing."""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from isobench.core.ids import shown
from isobench.store.health import declared, table_problems
from isobench.store.mend import mended
from isobench.store.readonly import connect_to_inspect
from isobench.store.transfer import FORMAT, TABLES, TransferError, import_run

BATCH = 500  # rows read by rowid at once


class RecoverError(RuntimeError):
    """str() is the one-line message."""


@dataclass
class Recovered:
    kept: list[str] = field(default_factory=list)
    lost: list[tuple[str, str]] = field(default_factory=list)  # (run id, what of it did not read)
    unread: list[str] = field(default_factory=list)  # rows that did not read, whose run cannot be told
    notes: list[str] = field(default_factory=list)  # how the store was read
    made: bool = False  # the new store was put in place

    @property
    def whole(self) -> bool:
        return not self.lost and not self.unread


@dataclass
class Listing:
    """The rowids of each run's rows in one table, as far as they read."""

    ids: dict[str, list[int]] = field(default_factory=dict)
    why: str = ""  # why the table did not read to its end ("" when it did)
    below: str | None = None  # when it did not: runs before this one in its index are listed whole
    above: str | None = None  # and runs after this one
    seen: set[str] = field(default_factory=set)  # runs it names, listed in part
    foreign: bool = False  # not isobench's table (a view ...): not read at all

    def whole_for(self, run_id: str) -> bool:
        if not self.why:
            return True
        return (self.below is not None and run_id < self.below) or (self.above is not None and run_id > self.above)


def recover_into(path: str, output: str) -> Recovered:
    """Copy every run of the store at PATH that reads whole into a new store
    made at OUTPUT (RecoverError when it cannot be)."""
    workdir = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(workdir):
        raise RecoverError(f"-o {output}: no directory {workdir}; make it, or give another path")
    partial = os.path.join(workdir, f".{os.path.basename(output)}.{secrets.token_hex(4)}.partial")
    try:
        os.close(os.open(partial, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # the umask applies
        with _source(path, workdir) as (db, notes):
            out = _copy_into(db, partial)
        out.notes = notes + out.notes
        if out.kept or out.whole:
            _place(partial, output)
            out.made = True
        return out
    except sqlite3.DatabaseError as exc:  # what each read does not catch: said, and nothing made
        raise RecoverError(f"{path}: recover stopped ({exc}); nothing was made") from None
    except OSError as exc:
        raise RecoverError(
            f"-o {output}: cannot make the new store there ({exc.strerror}); give another path"
        ) from None
    finally:
        for leftover in (partial, f"{partial}-wal", f"{partial}-shm", f"{partial}-journal"):
            try:
                os.remove(leftover)
            except FileNotFoundError:
                pass


def _copy_into(db: sqlite3.Connection, partial: str) -> Recovered:
    from isobench.store.db import Store, StoreError

    try:
        into = Store(partial, create=True)
    except StoreError as exc:
        raise RecoverError(str(exc)) from None
    try:
        return copy_runs(db, into)
    finally:
        into.close()


def _place(partial: str, output: str) -> None:
    """The new store at OUTPUT, never over a file made there meanwhile."""
    try:
        os.link(partial, output)
    except FileExistsError:
        raise RecoverError(f"-o {output}: exists (made while recover ran); recover into a new file") from None
    except OSError:  # a filesystem without hard links
        if os.path.exists(output):
            raise RecoverError(f"-o {output}: exists (made while recover ran); recover into a new file") from None
        os.rename(partial, output)


@contextmanager
def _source(path: str, workdir: str) -> Iterator[tuple[sqlite3.Connection, list[str]]]:
    """A connection reading the store, and how it reads: the store itself,
    or a mended copy when its first page does not read."""
    why = _first_page_problem(path)
    if not why:
        db = connect_to_inspect(path)
        db.execute("PRAGMA writable_schema=ON")  # a store cut short is read as far as it goes
        try:
            yield db, []
        finally:
            db.close()
        return
    with mended(path, workdir) as (copy, what):
        if not copy:
            raise RecoverError(
                f"{path}: nothing could be read: its first page, which holds its table list, does not read "
                f"({why}), nor with isobench's own in its place; every run it held is lost"
            )
        db = sqlite3.connect(copy)
        db.execute("PRAGMA writable_schema=ON")
        try:
            yield db, [f"the store's first page does not read ({why}); read with isobench's own {what} in its place"]
        finally:
            db.close()


def _first_page_problem(path: str) -> str:
    db = connect_to_inspect(path)
    try:
        db.execute("PRAGMA writable_schema=ON")
        db.execute("SELECT name FROM sqlite_master").fetchall()
        return ""
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        db.close()


def copy_runs(db: sqlite3.Connection, into) -> Recovered:
    """Each run of DB that reads whole, imported into the store INTO."""
    out = Recovered()
    if not db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
        return out  # an empty store (isobench makes its tables at its first write): nothing to copy
    listings = {table: list_table(db, table) for table in TABLES}
    runs = listings["runs"]
    if runs.why:
        out.unread.append(f"runs: {_unlisted(runs)}; a run no other table names is lost unnamed")
    named = sorted({r for ls in listings.values() for r in (*ls.ids, *ls.seen)}, key=lambda r: _first(runs, r))
    for run_id in named:
        try:
            doc = {"format": FORMAT, "run_id": run_id, **{t: read_rows(db, t, run_id, listings[t]) for t in TABLES}}
            if not doc["runs"]:
                raise _Unread("runs: no row, though other tables hold its rows")
            import_run(into, doc)
            out.kept.append(run_id)
        except _Unread as exc:
            out.lost.append((run_id, str(exc)))
        except TransferError as exc:
            out.lost.append((run_id, f"its rows read, but {str(exc)[:200]}"))
    return out


def _first(runs: Listing, run_id: str) -> tuple[int, str]:
    """Runs in the order they were stored, then those only other tables name."""
    ids = runs.ids.get(run_id)
    return (min(ids), run_id) if ids else (2**63, run_id)


def _unlisted(listing: Listing) -> str:
    """What of a table's listing did not read, and why."""
    if listing.foreign:
        return listing.why
    if listing.below is None and listing.above is None:
        return f"the table does not read whole, nor its index ({listing.why})"
    first = shown(listing.below) if listing.below is not None else "the first"
    last = shown(listing.above) if listing.above is not None else "the last"
    return f"neither the table nor its index reads whole from run {first} to run {last} ({listing.why})"


class _Unread(Exception):
    pass


def list_table(db: sqlite3.Connection, table: str) -> Listing:
    """Which rows each run has in TABLE, as far as the table or its index
    reads; where both read to their end, the rows either names (a damaged
    page can read as if sound: the run is then lost, not copied short)."""
    problems = _not_own(db, table)
    if problems:
        return Listing(why=problems, foreign=True)
    scanned, why = _scan(db, table)
    index = _run_index(db, table)
    forward, done, below = _walk(db, table, index, "ASC") if index else ({}, False, None)
    if not why:
        for run_id, rowids in forward.items() if done else ():
            scanned[run_id] = sorted({*scanned.get(run_id, ()), *rowids})
        return Listing(scanned)
    if done:  # the index reads whole
        return Listing(forward)
    backward, _, above = _walk(db, table, index, "DESC") if index else ({}, False, None)
    seen = {*scanned, *forward, *backward, below, above} - {None, ""}
    return Listing({**backward, **forward}, why, below, above, seen)


def _scan(db: sqlite3.Connection, table: str) -> tuple[dict[str, list[int]], str]:
    """Each run's rowids in the table as far as it reads, and why it stopped ("": at its end)."""
    ids: dict[str, list[int]] = {}
    why = ""
    try:
        for rowid, run_id in db.execute(f"SELECT rowid, run_id FROM {table} NOT INDEXED"):  # TABLES' fixed names
            ids.setdefault(_named(run_id), []).append(rowid)
    except sqlite3.DatabaseError as exc:
        why = str(exc)
    ids.pop("", None)
    return ids, why


def _not_own(db: sqlite3.Connection, table: str) -> str:
    """Why TABLE is not one isobench reads ("" when it is its own table)."""
    row = db.execute("SELECT type, sql FROM sqlite_master WHERE name=?", (table,)).fetchone()
    if row is None:
        return "no such table"
    if row[0] != "table":
        return f"a {row[0]}, not isobench's table (`isobench store check` says more); not read"
    problems = table_problems(db, table, row[1] or "", declared()[table][1])
    return f"{problems[0]}; not read" if problems else ""


def _run_index(db: sqlite3.Connection, table: str) -> str | None:
    """The name of TABLE's own index that starts with its run id (one
    isobench's schema makes, over every row: not a partial one)."""
    own = declared()
    try:
        for _, name, _, _, partial in db.execute(f"PRAGMA index_list({table})").fetchall():
            if partial or own.get(name, ("",))[0] != "index":
                continue
            first = db.execute(f"PRAGMA index_info({_quoted(name)})").fetchone()
            if first is not None and first[2] == "run_id":
                return name
    except sqlite3.DatabaseError:
        pass
    return None


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _walk(db: sqlite3.Connection, table: str, index: str, order: str) -> tuple[dict, bool, str | None]:
    """The index read in ORDER as far as it reads and keeps its order: the
    rows of each run it passed whole, whether it read to its end, and the
    run it stopped in (None: it stopped before any)."""
    runs: dict[str, list[int]] = {}
    last: str | None = None
    sql = f"SELECT run_id, rowid FROM {table} INDEXED BY {_quoted(index)} ORDER BY run_id {order}"
    try:
        for value, rowid in db.execute(sql):
            run_id = _named(value)
            if last is not None and (run_id < last if order == "ASC" else run_id > last):
                break  # out of order: a damaged page read as if sound
            runs.setdefault(run_id, []).append(rowid)
            last = run_id
        else:
            runs.pop("", None)
            return runs, True, None
    except sqlite3.DatabaseError:
        pass
    if last is not None:
        runs.pop(last)  # where it stopped: maybe in part
    runs.pop("", None)
    return runs, False, last


def _named(value) -> str:
    """A run id as read: text, or "" (no run's) for what a damaged row holds instead."""
    return value if isinstance(value, str) else ""


def read_rows(db: sqlite3.Connection, table: str, run_id: str, listing: Listing) -> list[dict]:
    """RUN_ID's rows of TABLE in stored order, exactly those its listing
    gives, each read whole (_Unread saying what did not); samples without
    their id, which the new store gives."""
    if not listing.whole_for(run_id):
        raise _Unread(f"{table}: {_unlisted(listing)}")
    want = sorted(listing.ids.get(run_id, []))
    rows: list[dict] = []
    bad, why = 0, ""
    for start in range(0, len(want), BATCH):
        chunk = want[start : start + BATCH]
        try:
            rows += _by_rowid(db, table, chunk)
        except sqlite3.DatabaseError as exc:  # row by row: how many do not read
            why = str(exc)
            for rowid in chunk:
                try:
                    rows += _by_rowid(db, table, [rowid])
                except sqlite3.DatabaseError:
                    bad += 1
    if bad:
        raise _Unread(f"{table}: {bad} of its {len(want)} rows do not read ({why})")
    strange = len(want) - sum(r["run_id"] == run_id for r in rows)
    if strange:  # a damaged page read as if sound, or a damaged index naming another's rows
        raise _Unread(f"{table}: {strange} of its {len(want)} rows do not read as its own (a damaged page)")
    for r in rows:
        r.pop("rowid_")
        if table == "samples":
            r.pop("id")
    return rows


def _by_rowid(db: sqlite3.Connection, table: str, rowids: list[int]) -> list[dict]:
    cur = db.execute(
        f"SELECT rowid AS rowid_, * FROM {table} WHERE rowid IN ({','.join('?' * len(rowids))}) ORDER BY rowid",
        rowids,
    )
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur]
