"""`isobench studies`: the studies the package ships, each runnable by
name from any directory (`isobench run quick`). Parsing and printing only."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from isobench.cli.common import console
from isobench.cli.output import document, emit, output_option, table_format_option, terminal_to


def _description(path) -> str:
    """The study's own [study] description, its first sentence; "" when it has none."""
    import tomllib

    try:
        meta = tomllib.loads(path.read_text(encoding="utf-8")).get("study", {})
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    text = " ".join(str(meta.get("description", "")).split()) if isinstance(meta, dict) else ""
    return text.split(". ", 1)[0]


@click.command("studies")
@table_format_option("studies", json_alias=False)
@output_option()
def studies(fmt: str, output: str | None) -> None:
    """The shipped studies: each name works wherever a study file does
    (`isobench run quick`, validate, calibrate, fleet run), from any
    directory; a path to your own study file works as ever."""
    from isobench.core.shipped import shipped_studies

    rows = [{"name": n, "description": _description(p), "file": str(p)} for n, p in shipped_studies().items()]
    if fmt == "json":
        emit(document("studies", {"studies": rows}), output)
        return
    from isobench.core.shipped import STUDIES

    table = Table("name", "what it measures")
    for r in rows:
        table.add_row(escape(r["name"]), escape(r["description"]))
    # a path is copied, never cut: on a line of its own, not in a column
    where = f"the files: {STUDIES.resolve()}/NAME.toml (copy one to start your own)"
    terminal_to(
        output, lambda out: (out.print(table), out.print(where, markup=False, highlight=False, soft_wrap=True)), console
    )
