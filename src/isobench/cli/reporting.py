"""`isobench runs`, `report` and `export`: what the store holds, one run's
report, its samples as files. Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from isobench.cli.common import FORCE_OPTION, STORE_OPTION, console, default_output, err_console, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.core import sink


@click.command()
@STORE_OPTION
def runs(store_path: str) -> None:
    """List stored runs, oldest first."""
    store = _open_store(store_path)
    # status: complete (every cell has an ok sample), incomplete (some failed or were skipped:
    # --resume), interrupted (Ctrl-C, SIGTERM, a full store), died (killed: nobody holds its lock)
    table = Table("run", "study", "started", "status", "environments", "samples", "failed")
    table.columns[0].no_wrap = True
    from isobench.core.lock import running_run_id
    live = running_run_id()
    for r in store.list_runs():
        # a run left "running" by a SIGKILLed isobench: nobody holds the lock for it
        status = "died" if r.status == "running" and live not in (r.run_id, "?") else r.status
        table.add_row(*map(sink.markup, (r.run_id, r.study_name, r.started_at, status, ", ".join(r.environments),
                                         r.samples_ok, r.samples_failed)))
    console.print(table)


@click.command()
@click.argument("run_id", required=False)
@STORE_OPTION
@FORCE_OPTION
@click.option("--format", "fmt", type=click.Choice(["terminal", "md", "html"]), default="terminal",
              show_default=True, help="html: one self-contained file with the figures (opens offline).")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write to this file instead of stdout (html: default results/RUN_ID.html).")
@click.option("--figures", "figures_dir", type=click.Path(file_okay=False),
              help="Also write every figure to this directory, as SVG and PNG.")
@click.option("--all", "show_all", is_flag=True,
              help="Terminal: also open the folded sections (every warning, every inconclusive cell); "
                   "Markdown shows them whole, HTML folds them.")
def report(run_id: str | None, store_path: str, fmt: str, output: str | None, figures_dir: str | None,
           show_all: bool) -> None:
    """Report RUN_ID (an id, a unique prefix, or the latest run when omitted),
    computed from the store alone. In a terminal the answer comes last (it
    stays on screen); Table I's cells there are short (mean, change, interval,
    marks) and in as many panels as the width needs."""
    from isobench.report.markdown import render_markdown
    from isobench.report.terminal import render_terminal
    from isobench.store.db import StoreError
    store = _open_store(store_path)
    from isobench.cli.fleet import is_fleet_id
    if is_fleet_id(store, run_id):
        from isobench.cli.fleet import fleet_report
        fleet_report(store, run_id, fmt, output)
        return
    try:
        run = store.load_run(store.resolve(run_id))
    except StoreError as exc:
        _fail(str(exc))
    if fmt == "html" or figures_dir:
        from isobench.report.figures import build_figures, write_figures
        from isobench.results.table import build_table
        table = build_table(run)
        specs = build_figures(table, store.extras(run.run_id), run.env_facts)
        if figures_dir:
            with writing(figures_dir, "--figures"):
                write_figures(specs, figures_dir)
            err_console.print(f"{len(specs)} figure(s) written to {escape(figures_dir)} as SVG and PNG"
                              + ("" if specs else ": the run has nothing to draw"), highlight=False)
    if fmt == "html":
        from isobench.report.html import render_html
        path = Path(output) if output else default_output(run.run_id, ".html")
        html = render_html(run, specs=specs, table=table)
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(html, encoding="utf-8")
        console.print(f"HTML report written to {escape(str(path))}", highlight=False)
        return
    if fmt == "md":
        text = render_markdown(run)
        if output:
            with writing(output):
                Path(output).write_text(text)
        else:
            click.echo(text)
        return
    if output:
        with writing(output), open(output, "w") as fh:
            render_terminal(run, Console(file=fh, width=200), show_all)
    else:
        render_terminal(run, console, show_all)


@click.command("export")
@click.argument("run_id", required=False)
@STORE_OPTION
@FORCE_OPTION
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("--output", "-o", type=click.Path(),
              help="csv: a directory for samples.csv and cells.csv (default results/RUN_ID/); "
                   "json: a file (default results/RUN_ID.json; - for stdout).")
def export_cmd(run_id: str | None, store_path: str, fmt: str, output: str | None) -> None:
    """Export RUN_ID's raw samples and summarised cells (columns: docs/export.md)."""
    import json as _json

    from isobench.store import export as exp
    from isobench.store.db import StoreError
    store = _open_store(store_path)
    try:
        run = store.load_run(store.resolve(run_id))
    except StoreError as exc:
        _fail(str(exc))
    samples = store.samples(run.run_id)
    if fmt == "csv":
        target = output or default_output(run.run_id, "")
        with writing(target):
            paths = exp.export_csv(run, samples, target)
        console.print(f"wrote {paths[0]} and {paths[1]}", highlight=False, markup=False)
    elif output == "-":
        click.echo(_json.dumps(exp.export_document(run, samples), indent=1, allow_nan=False, default=str))
    else:
        target = output or default_output(run.run_id, ".json")
        with writing(target):
            path = exp.export_json(run, samples, target)
        console.print(f"wrote {path}", highlight=False, markup=False)
