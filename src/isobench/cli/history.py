"""`isobench history`: each environment's overhead across the stored runs of
a study, with change points and what changed at each (results/history.py,
docs/history.md). Parsing and printing only."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from isobench.cli.common import FORCE_OPTION, STORE_OPTION, Finite, check_output, console, err_console, own
from isobench.cli.common import writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store

DATE = click.DateTime(formats=["%Y-%m-%d"])


@click.command("history")
@click.argument("study", required=False)
@STORE_OPTION
@FORCE_OPTION
@click.option("--format", "fmt", type=click.Choice(["terminal", "md", "html"]), default="terminal",
              show_default=True, help="html: one offline file with a figure per workload.")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write to this file instead of stdout (html: default results/history-STUDY.html).")
@click.option("--by-host", is_flag=True, help="Also split series by host name (default: by host class: CPU "
              "model, cores, memory).")
@click.option("--env", "envs", multiple=True, metavar="NAME", help="Only this environment (repeatable).")
@click.option("--workload", "workloads", multiple=True, metavar="NAME", help="Only this workload (repeatable).")
@click.option("--since", type=DATE, metavar="YYYY-MM-DD", help="Only runs started on or after this day.")
@click.option("--until", type=DATE, metavar="YYYY-MM-DD", help="Only runs started on or before this day.")
@click.option("--host", metavar="NAME", help="Only runs of this host (its hostname, or a fleet's host name).")
@click.option("--fail-on-change", "fail_pct", type=Finite(min=0), metavar="PCT",
              help="Exit 1 when the newest run sits after a confirmed step for the worse of more than PCT "
                   "percent in any cell, naming the cell, the step and the facts that changed.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False),
              help="Also write JUnit XML: one test case per primary cell of the newest run's host class.")
def history(study: str | None, store_path: str, fmt: str, output: str | None, by_host: bool,
            envs: tuple[str, ...], workloads: tuple[str, ...], since, until, host: str | None,
            fail_pct: float | None, junit_path: str | None) -> None:
    """Each environment's overhead over the stored runs of STUDY (a study
    name; default: the latest run's study), per host class, with the steps
    found in it and the facts that differ across each.

    \b
    Exit status: 0 no step for the worse beyond --fail-on-change (or no
    --fail-on-change), 1 the newest run sits after one, 2 usage error.
    \b
    Example (CI, after `isobench run studies/quick.toml`):
      isobench history quick --fail-on-change 5 --junit history.xml
    """
    from isobench.analysis import changepoints as cp
    from isobench.report.history import history_page
    from isobench.results.history import build_history, select

    store = _open_store(store_path)
    rows = store.list_runs()
    if not rows:
        _fail(f"{store_path}: no runs stored yet; start one with `isobench run STUDY`")
    if study is None:
        study = next(r.study_name for r in rows if r.run_id == store.latest_run_id())
    names = sorted({r.study_name for r in rows})
    if study not in names:
        _fail(f"study {study!r}: no stored run of it in {store_path}; stored studies: {', '.join(names)} "
              "(`isobench runs` lists the runs)")
    runs = [store.load_run(r.run_id) for r in rows if r.study_name == study]
    _check_names("--env", envs, {e for r in runs for e in r.environments if e != r.baseline}, study)
    _check_names("--workload", workloads, {k.workload for r in runs for k in r.metrics}, study)
    kept, left_out = select(runs, since.date() if since else None, until.date() if until else None, host)
    if not kept:
        why = "; ".join(left_out)
        _fail(f"study {study!r}: none of its {len(runs)} run(s) can be used ({why})")
    h = build_history(study, kept, by_host=by_host, envs=set(envs) or None, workloads=set(workloads) or None,
                      left_out=left_out)
    if not h.series():
        first = next((x for x in h.left_out if "primary metric" in x),
                     "no usable run has a tested primary cell against its baseline (`isobench report RUN` shows why)")
        _fail(f"study {study!r}: no series to show: {first}")
    longest = max(len(s.points) for s in h.series())
    if longest < cp.MIN_RUNS:
        err_console.print(f"note: the longest series of {study} has {longest} comparable run(s); a step needs at "
                          f"least {cp.MIN_RUNS} ({cp.MIN_SEGMENT} on each side): run the study "
                          f"{cp.MIN_RUNS - longest} more time(s) on this host class", markup=False, highlight=False,
                          soft_wrap=True)

    page = history_page(h, fail_pct, figures=fmt == "html")
    _show(page, fmt, output, study)
    if junit_path:
        from isobench.report.junit import write_junit
        check_output(junit_path, "--junit")
        write_junit(junit_path, f"isobench history {study}", _cases(h, study, fail_pct))
    failing = h.gate(fail_pct) if fail_pct is not None else []
    if failing:
        newest = h.newest
        assert newest is not None  # the gate judges the newest run
        err_console.print(f"change: {len(failing)} cell(s) of the newest run {newest.run_id} sit after a step for "
                          f"the worse beyond {fail_pct:g}%:", style="bold red", markup=False, highlight=False,
                          soft_wrap=True)
        for c in failing:
            err_console.print(f"  {gate_line(c)}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(1)


def gate_line(c) -> str:
    return (f"{c.cell.name}: worse by {c.worse_pct:.1f}% (step {c.step_pct:+.1f}% "
            f"[{c.low_pct:+.1f}%, {c.high_pct:+.1f}%]) {c.where}; changed: {'; '.join(c.fact_lines())}")


def _check_names(option: str, given: tuple[str, ...], known: set[str], study: str) -> None:
    unknown = [g for g in given if g not in known]
    if unknown:
        _fail(f"{option} {unknown[0]}: no run of study {study!r} has it; it has {', '.join(sorted(known)) or 'none'}")


def _show(page, fmt: str, output: str | None, study: str) -> None:
    from isobench.report import history_render as render
    if fmt == "html":
        from isobench.core.ids import BadIdentifier, under
        try:
            path = Path(output) if output else own(under("results", f"history-{study}.html"))
        except BadIdentifier as exc:
            _fail(f"{exc}; give -o PATH")
        text = render.render_html(page)
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        console.print(Text(f"history written to {path}"))  # a path is user text: never markup
        return
    if fmt == "md":
        text = render.render_markdown(page)
        if output:
            with writing(output):
                Path(output).write_text(text, encoding="utf-8")
        else:
            click.echo(text)
        return
    if output:
        with writing(output), open(output, "w", encoding="utf-8") as fh:
            render.render_terminal(page, Console(file=fh, width=200))
    else:
        render.render_terminal(page, console)


def _cases(h, study: str, fail_pct: float | None):
    """One JUnit case per primary cell of the newest run's host class:
    failed where the gate fails (at PCT 0 without --fail-on-change: any
    step for the worse the newest run sits after), skipped when too short."""
    from isobench.report.junit import Case
    newest = h.newest
    group = next((g for g in h.groups if newest is not None and any(r.run_id == newest.run_id for r in g.runs)),
                 None)
    failing = {id(c) for c in h.gate(fail_pct or 0.0)}
    cases = []
    for s in group.series if group else []:
        last = s.points[-1]
        output = f"{len(s.points)} run(s); newest {last.run_id}: {last.text} vs {s.cell.baseline}"
        if s.changes:
            output += f"; last step: {s.changes[-1].summary}; changed: {'; '.join(s.changes[-1].fact_lines())}"
        c = s.changes[-1] if s.changes else None
        cases.append(Case(s.cell.name, f"isobench.history.{study}",
                          failure=gate_line(c) if c is not None and id(c) in failing else None,
                          skipped=s.shortfall if s.too_short else None, output=output))
    return cases
