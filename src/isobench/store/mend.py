"""A store whose first page does not read (a zeroed page, a random header),
read from a copy with isobench's own first page in its place: the page holds
the file's header and its table list, which for every isobench store are the
ones its schema makes (tables created in the same order, at the same root
pages, SQLite's default page size, which isobench never changes). The copy
is made in a directory the caller names, and removed after; whatever it then
reads still passes every check of the run import."""

from __future__ import annotations

import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from isobench.store.readonly import pending_log
from isobench.store.schema import SCHEMA

PAGE = 4096  # SQLite's default page size
HEADER = 100  # the file header, at the start of the first page


def own_first_page(pages: int, wal: bool) -> bytes:
    """The first page of a store made by isobench's schema, saying PAGES
    pages, in WAL mode when a write-ahead log comes with it."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        page = bytearray(db.serialize()[:PAGE])
    finally:
        db.close()
    page[18:20] = b"\x02\x02" if wal else b"\x01\x01"  # WAL, or the rollback journal (reads need no -shm)
    page[28:32] = pages.to_bytes(4, "big")  # trusted: the change counter and its copy agree
    return bytes(page)


def candidates(first: bytes, pages: int, wal: bool) -> list[tuple[str, bytes]]:
    """First pages to try, closest to the store's own first: its table list
    under isobench's header, then isobench's whole first page. Pure."""
    own = own_first_page(pages, wal)
    return [("header", own[:HEADER] + first[HEADER:].ljust(PAGE - HEADER, b"\0")), ("first page", own)]


def _tried(fh, page: bytes, copy: str) -> bool:
    """Whether the copy reads with PAGE as its first."""
    fh.seek(0)
    fh.write(page)
    fh.flush()
    return _readable(copy)


def _readable(path: str) -> bool:
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA writable_schema=ON")
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return "runs" in names
    except sqlite3.DatabaseError:
        return False
    finally:
        db.close()


@contextmanager
def mended(path: str, workdir: str) -> Iterator[tuple[str, str]]:
    """(the copy's path, what of it is isobench's: "header" or "first page"),
    or ("", "") when no first page makes its table list read."""
    copy = os.path.join(workdir, f".{os.path.basename(path)}.{secrets.token_hex(4)}.mend")
    try:
        shutil.copyfile(path, copy)
        wal = pending_log(path) > 0
        if wal:  # commits not yet in the file: read with it
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        with open(copy, "r+b") as fh:
            first = fh.read(PAGE)
            pages = max(1, (fh.seek(0, 2) + PAGE - 1) // PAGE)
            what = next((what for what, page in candidates(first, pages, wal) if _tried(fh, page, copy)), "")
        yield (copy if what else "", what)
    finally:
        for leftover in (copy, f"{copy}-wal", f"{copy}-shm", f"{copy}-journal"):
            try:
                os.remove(leftover)
            except FileNotFoundError:
                pass
