"""`isobench runs`, `report` and `export`: what the store holds, one run's
report, its samples as files. Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

import click
from rich.measure import Measurement

from isobench.cli.common import STORE_OPTION, console, default_output, err_console, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import (
    STDOUT,
    deprecated,
    document,
    emit,
    format_option,
    output_option,
    table_format_option,
    terminal_to,
)
from isobench.core import sink
from isobench.core.numbers import plural


@click.command()
@STORE_OPTION
@table_format_option("runs")
@output_option()
def runs(store_path: str, fmt: str, output: str | None) -> None:
    """List stored runs, oldest first. Samples are the measured ones; the
    warm-ups, left out of every statistic, are counted apart.
    --json, the old spelling of --format json, works for one more release."""
    from isobench.core.lock import live_run_ids
    from isobench.report.runs_list import runs_rows, runs_table, statuses
    from isobench.store.links import explain_links

    store = _open_store(store_path, reader=True)
    rows = store.list_runs()
    status, links = statuses(rows, live_run_ids()), explain_links(store)
    if fmt == "json":
        emit(document("runs", {"runs": runs_rows(rows, status, links)}), output)
        return
    table = runs_table(rows, status, links)

    # a listing is never cut to fit (ids, statuses and counts are copied by
    # scripts and people): the environments wrap and the study folds first;
    # when that is not narrow enough, the line is longer instead
    def wide(out) -> None:
        need = Measurement.get(out, out.options.update_width(1000), table).minimum
        width, out.width = out.width, max(out.width, need)
        try:
            out.print(table)
        finally:
            out.width = width

    terminal_to(output, wide, console)
    if rows:
        err_console.print(
            "samples: measured ones; warm-ups are run first and left out of every statistic",
            markup=False,
            highlight=False,
            style="dim",
        )


@click.command()
@click.argument("run_id", required=False)
@STORE_OPTION
@format_option(extra=" html: one self-contained file with the figures, default results/RUN_ID.html.")
@output_option("Write to FILE instead of stdout (- for stdout; html without -o: results/RUN_ID.html).")
@click.option(
    "--figures",
    "figures_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Also write every figure to this directory, as SVG and PNG.",
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Terminal: also open the folded sections (every warning, every inconclusive cell); "
    "Markdown shows them whole, HTML folds them.",
)
def report(
    run_id: str | None, store_path: str, fmt: str, output: str | None, figures_dir: str | None, show_all: bool
) -> None:
    """Report RUN_ID (an id, a unique prefix, or the latest run when omitted),
    computed from the store alone. In a terminal the answer comes last (it
    stays on screen); Table I's cells there are short (mean, change, interval,
    marks) and in as many panels as the width needs. JSON: the run and
    Table I's cells (columns as in docs/export.md)."""
    from isobench.report.markdown import render_markdown
    from isobench.report.terminal import render_terminal
    from isobench.store.db import StoreError

    store = _open_store(store_path, reader=True)
    from isobench.cli.fleet import is_fleet_id

    if run_id is not None and is_fleet_id(store, run_id):
        if fmt == "json":
            _fail(
                f"report {run_id} --format json: a fleet's report has no JSON; "
                f"`isobench report {run_id}/HOST --format json` gives each host's run"
            )
        from isobench.cli.fleet import fleet_report

        fleet_report(store, run_id, fmt, output)
        return
    try:
        run = store.load_run(store.resolve(run_id))
    except StoreError as exc:
        _fail(str(exc))
    explained = explained_by(store, run)
    if fmt == "html" or figures_dir:
        from isobench.report.figures import build_figures, write_figures
        from isobench.results.table import build_table

        table = build_table(run)
        specs = build_figures(table, store.extras(run.run_id), run.env_facts)
        if figures_dir:
            with writing(figures_dir, "--figures"):
                write_figures(specs, figures_dir)
            err_console.print(
                f"{plural(len(specs), 'figure')} written to {sink.markup(figures_dir)} as SVG and PNG"
                + ("" if specs else ": the run has nothing to draw"),
                highlight=False,
            )
    if fmt == "html":
        from isobench.report.html import render_html

        html = render_html(run, specs=specs, table=table, explained_by=explained)
        if output == STDOUT:
            emit(html, output)
            return
        path = Path(output) if output else default_output(run.run_id, ".html")
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(html, encoding="utf-8")
        console.print(f"HTML report written to {sink.markup(path)}", highlight=False)
        return
    if fmt == "json":
        emit(report_document(run, explained), output)
        return
    if fmt == "md":
        emit(render_markdown(run, explained), output)
        return
    terminal_to(output, lambda out: render_terminal(run, out, show_all, explained), console)


def explained_by(store, run) -> tuple:
    """The explain runs of ``store`` that explain ``run``, oldest first."""
    from isobench.results.explain import explaining
    from isobench.store.links import explain_links

    ids = [e for e, of in explain_links(store).items() if of == run.run_id]
    return tuple(explaining(run, [store.load_run(e) for e in ids]))


def report_document(run, explained: tuple = ()) -> str:
    """The isobench.report document of RUN: `report --format json`, and
    `try --format json` of the run it made. ``explained``: its explain runs."""
    from isobench.results.attribution import attribution_json, build_rows, primary_changed_cells
    from isobench.results.explain import run_json
    from isobench.results.table import build_table
    from isobench.store.export import CELL_COLUMNS, cell_rows

    rows = build_rows(run)
    return document(
        "report",
        {
            "run": _run_fields(run),
            "host_facts": run.host_facts,
            "cell_columns": list(CELL_COLUMNS),
            "cells": cell_rows(run),
            "attribution": attribution_json(run, rows, primary_changed_cells(run, build_table(run))),
            "explain_runs": [run_json(e) for e in explained],
        },
    )


def _run_fields(run) -> dict:
    from isobench.store.export import run_fields

    fields = run_fields(run)
    return {"run_id": fields.pop("run_id"), "study": fields.pop("study_name"), **fields}


@click.command("export")
@click.argument("run_id", required=False)
@STORE_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "json"]),
    default="csv",
    show_default=True,
    help="csv: samples.csv, cells.csv and counters.csv in --dir; json: one document (-o FILE, - for stdout).",
)
@click.option(
    "--dir",
    "out_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="csv: the directory for samples.csv, cells.csv and counters.csv (default results/RUN_ID/).",
)
@output_option(
    "json: the file (default results/RUN_ID.json; - for stdout). With csv, -o DIR is the "
    "deprecated spelling of --dir DIR.",
    dir_okay=True,
)
def export_cmd(run_id: str | None, store_path: str, fmt: str, out_dir: str | None, output: str | None) -> None:
    """Export RUN_ID's raw samples and summarised cells (columns: docs/export.md)."""
    import json as _json

    from isobench.store import export as exp
    from isobench.store.db import StoreError

    store = _open_store(store_path, reader=True)
    try:
        run = store.load_run(store.resolve(run_id))
    except StoreError as exc:
        _fail(str(exc))
    samples = store.samples(run.run_id)
    if fmt == "csv":
        if output == STDOUT:
            _fail("export --format csv -o -: CSV is three files; give --dir DIR, or --format json -o - for stdout")
        if output:
            deprecated("export --format csv -o DIR", "--dir DIR")(None, None, output)
        target = out_dir or output or default_output(run.run_id, "")
        with writing(target, "--dir"):
            paths = exp.export_csv(run, samples, target)
        console.print(
            f"wrote {', '.join(sink.terminal(p) for p in paths[:-1])} and {sink.terminal(paths[-1])}",
            highlight=False,
            markup=False,
            soft_wrap=True,  # a path is never broken inside
        )
    elif out_dir:
        _fail("export --dir: only for --format csv; give -o FILE for json")
    elif output == STDOUT:
        click.echo(_json.dumps(exp.export_document(run, samples), indent=1, allow_nan=False, default=str))
    else:
        target = output or default_output(run.run_id, ".json")
        with writing(target):
            path = exp.export_json(run, samples, target)
        console.print(f"wrote {sink.terminal(path)}", highlight=False, markup=False)
