"""What every command module shares: the consoles, the --store option, the
one-line failure and opening a store. Command modules (cli.py,
transfer_cli.py, fleet/commands.py) import it; it imports no command."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.markup import escape

from isobench.workspace import DEFAULT_STORE

# Pipes and CI logs get a wide table rather than rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

STORE_OPTION = click.option(
    "--store", "store_path", envvar="ISOBENCH_STORE", default=DEFAULT_STORE, show_default=True,
    help="SQLite file holding every run (env: ISOBENCH_STORE).")


def fail(message: str) -> None:
    """One line and exit status 2. The message holds user text (paths,
    names, "[study]"): printed literally, never as console markup."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(2)


def open_store(path: str):
    from isobench.store import Store
    return Store(path)
