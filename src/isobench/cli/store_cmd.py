"""`isobench store check` and `isobench store recover -o NEW`: what is
damaged in a store, and every run that still reads copied into a new one
(store/health.py)."""

from __future__ import annotations

import os
import sqlite3

import click

from isobench.cli.common import STORE_OPTION, check_output, console, fail
from isobench.core import sink


@click.group("store")
def store_group() -> None:
    """Check a store, or recover what a damaged one still holds."""


@store_group.command("check")
@STORE_OPTION
def check_cmd(store_path: str) -> None:
    """SQLite's integrity check of the store, read only. Exit 0 sound, 2 damaged."""
    from isobench.store.health import CHECK_LIMIT, integrity
    from isobench.store.readonly import UnreadableStore

    if not os.path.isfile(store_path):
        fail(f"{store_path}: no such store; give it with --store")
    try:
        problems = integrity(store_path)
    except UnreadableStore as exc:
        fail(str(exc))
    except sqlite3.DatabaseError as exc:  # not even its first page: not an SQLite file at all
        fail(f"{store_path}: not a store SQLite can open ({exc}); give another --store path")
    if not problems:
        console.print(f"{sink.terminal(store_path)}: sound (integrity_check: ok)", markup=False, highlight=False)
        return
    for line in problems:
        console.print(f"  {sink.terminal(line)}", markup=False, highlight=False, soft_wrap=True)
    most = " (SQLite's check stops there)" if len(problems) >= CHECK_LIMIT else ""
    fail(
        f"{store_path}: damaged: {len(problems)} problem(s) above{most}; "
        f"`isobench store recover -o NEW.sqlite --store {store_path}` copies every run that still reads"
    )


@store_group.command("recover")
@STORE_OPTION
@click.option("-o", "output", required=True, metavar="NEW", help="The new store to copy the readable runs into.")
def recover_cmd(store_path: str, output: str) -> None:
    """Copy every run of a damaged store that still reads whole into a new
    store NEW; the damaged store is only read. Exit 0 every run kept, 2 some lost."""
    from isobench.store.db import Store, StoreError
    from isobench.store.health import recover
    from isobench.store.readonly import UnreadableStore

    if not os.path.isfile(store_path):
        fail(f"{store_path}: no such store; give it with --store")
    check_output(output, "-o")
    if os.path.exists(output):
        fail(f"-o {output}: exists; recover into a new file")
    try:
        into = Store(output, create=True)
    except StoreError as exc:
        fail(str(exc))
    try:
        result = recover(store_path, into)
    except UnreadableStore as exc:
        fail(str(exc))
    except sqlite3.DatabaseError as exc:
        fail(f"{store_path}: the store is damaged beyond reading ({exc}); nothing could be copied")
    finally:
        into.close()
    for run_id, why in result.lost:
        console.print(f"  lost run {sink.terminal(run_id)}: {sink.terminal(why)}", markup=False, soft_wrap=True)
    console.print(
        f"{len(result.kept)} run(s) copied into {sink.terminal(output)}, {len(result.lost)} lost",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if result.lost:
        raise SystemExit(2)
