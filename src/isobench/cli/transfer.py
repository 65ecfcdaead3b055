"""`isobench archive` and `isobench import`: a whole run between stores
(hosts), through isobench/transfer.py, the fleet's own code path."""

from __future__ import annotations

import click
from rich.markup import escape

from isobench.cli.common import FORCE_OPTION, STORE_OPTION, console, default_output, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import deprecated, document, emit, table_format_option
from isobench.core import sink


def _archive_options(command):
    for option in reversed(
        (
            click.argument("run_id", required=False),
            STORE_OPTION,
            FORCE_OPTION,
            click.option(
                "--output",
                "-o",
                metavar="FILE",
                type=click.Path(dir_okay=False),
                help="The file to write (default results/RUN_ID.run.json).",
            ),
            table_format_option("archive", json_alias=False),
        )
    ):
        command = option(command)
    return command


@click.command("archive")
@_archive_options
def archive_cmd(run_id: str | None, store_path: str, output: str | None, fmt: str) -> None:
    """Write every stored row of RUN_ID to one file, for `isobench import`
    on another host or store (`isobench export` writes samples and cells for
    analysis instead)."""
    from isobench.store.db import StoreError
    from isobench.store.transfer import TransferError, write_export

    store = _open_store(store_path, reader=True)
    try:
        run_id = store.resolve(run_id)
        target = output or default_output(run_id, ".run.json")
        with writing(target):
            path = write_export(store, run_id, target)
    except (StoreError, TransferError) as exc:
        _fail(str(exc))
    if fmt == "json":
        emit(document("archive", {"run_id": run_id, "file": str(path)}), None)
    else:
        console.print(f"wrote {sink.markup(path)}", highlight=False)


@click.command("export-run", hidden=True)
@_archive_options
@click.pass_context
def export_run_cmd(ctx: click.Context, run_id: str | None, store_path: str, output: str | None, fmt: str) -> None:
    """The old name of `isobench archive`: works for one more release."""
    deprecated("export-run", "archive")(ctx, None, True)
    ctx.invoke(archive_cmd, run_id=run_id, store_path=store_path, output=output, fmt=fmt)


@click.command("import")
@click.argument("export_file", type=click.Path(dir_okay=False))
@STORE_OPTION
@click.option("--rename", metavar="RUN_ID", help="Import under this run id (when the original id is taken).")
@table_format_option("import", json_alias=False)
def import_cmd(export_file: str, store_path: str, rename: str | None, fmt: str) -> None:
    """Import a run written by `isobench archive` (on this or another host)."""
    from isobench.store.transfer import TransferError, import_run, read_export

    store = _open_store(store_path, create=True)
    try:
        run_id = import_run(store, read_export(export_file), rename=rename)
    except TransferError as exc:
        _fail(str(exc))
    if fmt == "json":
        emit(document("import", {"run_id": run_id, "file": export_file}), None)
    else:
        console.print(escape(f"imported run {run_id}"), highlight=False)
