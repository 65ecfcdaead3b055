"""`isobench store check` and `isobench store recover -o NEW`: what is
damaged in a store, and every run that still reads copied into a new one
(store/health.py)."""

from __future__ import annotations

import os

import click

from isobench.cli.common import STORE_OPTION, check_output, console, fail
from isobench.core import sink


@click.group("store")
def store_group() -> None:
    """Check a store, or recover what a damaged one still holds."""


@store_group.command("check")
@STORE_OPTION
def check_cmd(store_path: str) -> None:
    """SQLite's integrity check of the store and its tables against
    isobench's schema, read only. Exit 0 sound, 2 damaged."""
    from isobench.store.health import check
    from isobench.store.readonly import UnreadableStore

    if not os.path.isfile(store_path):
        fail(f"{store_path}: no such store; give it with --store")
    try:
        found = check(store_path)
    except UnreadableStore as exc:
        fail(str(exc))
    if not found.problems:
        shown = sink.terminal(store_path)
        console.print(f"{shown}: sound (integrity_check: ok; its tables are isobench's)", markup=False, highlight=False)
        return
    for line in found.problems:
        console.print(f"  {sink.terminal(line)}", markup=False, highlight=False, soft_wrap=True)
    count = f"{len(found.problems)} problem(s) above" + (
        ", and maybe more (integrity_check lists at most 20)" if found.more else ""
    )
    fail(
        f"{store_path}: damaged: {count}; "
        f"`isobench store recover -o NEW.sqlite --store {store_path}` copies every run that still reads"
    )


@store_group.command("recover")
@STORE_OPTION
@click.option("-o", "output", required=True, metavar="NEW", help="The new store to copy the readable runs into.")
def recover_cmd(store_path: str, output: str) -> None:
    """Copy every run of a damaged store that still reads whole into a new
    store NEW, and say what did not read; the damaged store is only read,
    and NEW is made only when a run was copied. Exit 0 everything read,
    2 anything lost."""
    from isobench.store.readonly import UnreadableStore
    from isobench.store.salvage import RecoverError, recover_into

    if not os.path.isfile(store_path):
        fail(f"{store_path}: no such store; give it with --store")
    check_output(output, "-o")
    if os.path.exists(output):
        fail(f"-o {output}: exists; recover into a new file")
    try:
        result = recover_into(store_path, output)
    except (UnreadableStore, RecoverError) as exc:
        fail(str(exc))
    _say(result, output)
    if not result.whole:
        raise SystemExit(2)


def _say(result, output: str) -> None:
    """What recover read, lost and made."""
    lines = [*result.notes, *(f"lost run {run_id}: {why}" for run_id, why in result.lost)]
    lines += [f"not read: {what}" for what in result.unread]
    for line in lines:
        console.print(f"  {sink.terminal(line)}", markup=False, highlight=False, soft_wrap=True)
    made = f"into {sink.terminal(output)}" if result.made else f"({sink.terminal(output)} not made)"
    lost = f"{len(result.lost)} lost" + (", and runs no table names may be lost too" if result.unread else "")
    console.print(f"{len(result.kept)} run(s) copied {made}, {lost}", markup=False, highlight=False, soft_wrap=True)
