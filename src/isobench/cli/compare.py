"""`isobench compare`: one run against another, cell by cell
(results/compare.py, docs/statistics.md). Parsing and printing only."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from isobench.cli.common import FORCE_OPTION, STORE_OPTION, Finite, check_output, console, err_console, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.core.ids import printable


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@STORE_OPTION
@FORCE_OPTION
@click.option("--store-b", "store_b_path", type=click.Path(dir_okay=False, exists=True),
              help="Store holding RUN_B (another host's results file); default: --store.")
@click.option("--tolerance", type=Finite(min=0, max=99), default=None, metavar="PCT",
              help="Equivalence margin: a cell whose interval lies within ±PCT% is 'equivalent' "
                   "(default: the study's tolerance_pct, else 5).")
@click.option("--fail-on-regression", "fail_pct", type=Finite(min=0), metavar="PCT",
              help="Exit 1 naming every primary cell of B (every cell, for runs stored before primaries) "
                   "changed for the worse (significant after Benjamini-Hochberg correction, beyond the "
                   "metric's noise floor) by more than PCT percent; with --overhead, every environment whose "
                   "cost against the baseline got worse so.")
@click.option("--overhead", is_flag=True,
              help="Compare each environment's ratio to the study's baseline (within its run, paired by "
                   "round) between the runs, instead of raw values: did what isolation costs change? A host "
                   "faster or slower between the runs cancels.")
@click.option("--between-runs/--no-between-runs", "between_runs", default=True, show_default=True,
              help="Add to each cell's interval how far a run's mean (with --overhead: its ratio to the "
                   "baseline) moves between runs of A's configuration on this host class, estimated from the "
                   "runs --store holds (at least 2 in an environment); without it a shift of the host between "
                   "the two runs reads as a change.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write JUnit XML: one test case per compared cell, failed where "
                   "--fail-on-regression fails, skipped when inconclusive.")
@click.option("--format", "fmt", type=click.Choice(["terminal", "md", "html"]), default="terminal",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
def compare_cmd(run_a: str, run_b: str, store_path: str, store_b_path: str | None, tolerance: float | None,
                fail_pct: float | None, overhead: bool, between_runs: bool, junit_path: str | None, fmt: str,
                output: str | None) -> None:
    """Compare RUN_B against RUN_A, cell by cell: the ratio of B's geometric
    mean to A's with its interval (Welch's t on logs), Benjamini-Hochberg over
    all cells (over the primary cells and, apart, the descriptive ones when
    the runs store primaries), and a verdict per cell: changed, equivalent
    within ±tolerance, or inconclusive at this n (docs/statistics.md). With
    --overhead, each environment's ratio to the baseline in B against the
    same in A.

    \b
    Exit status: 0 no regression (or no --fail-on-regression), 1 regression
    beyond --fail-on-regression, 2 usage error or nothing to compare.
    """
    from isobench.results.compare import compare_overheads, compare_runs
    from isobench.core.errors import IsobenchError
    from isobench.report import compare_render as cmp
    from isobench.store.db import StoreError
    store_a = _open_store(store_path)
    store_b = _open_store(store_b_path) if store_b_path else store_a
    from isobench.cli.fleet import resolve_host_run  # FLEET_ID/HOST names that host's run
    run_a, run_b = resolve_host_run(store_a, run_a), resolve_host_run(store_b, run_b)
    try:
        a = store_a.load_run(store_a.resolve(run_a))
        b = store_b.load_run(store_b.resolve(run_b))
    except StoreError as exc:
        _fail(str(exc))
    between = None
    if between_runs:
        from isobench.results.between import spreads
        stored = [store_a.load_run(r.run_id) for r in store_a.list_runs()
                  if r.study_name == a.study_name and r.run_id not in (a.run_id, b.run_id)]
        between = spreads(stored + [a], a, b, overhead=overhead)
    try:
        result = compare_overheads(a, b, tolerance, between) if overhead else compare_runs(a, b, tolerance, between)
    except IsobenchError as exc:
        _fail(str(exc))
    if not result.cells and overhead:
        _fail(f"--overhead: runs {a.run_id} and {b.run_id} have no cell (workload, case, metric, environment "
              f"other than {result.baseline}) measured with {result.baseline} in both; drop --overhead to "
              "compare raw values")
    if not result.cells:
        _fail(f"runs {a.run_id} and {b.run_id} have no cell (workload, case, metric, environment) "
              "measured in both")
    if a.run_id == b.run_id and store_a.path == store_b.path:
        err_console.print(f"note: comparing run {a.run_id} with itself: every cell is unchanged by "
                          "construction", markup=False, highlight=False)
    regressions = result.regressions(fail_pct) if fail_pct is not None else []
    if fmt == "terminal":
        if output:
            with writing(output), open(output, "w") as fh:
                cmp.render_terminal(result, Console(file=fh, width=200), regressions)
        else:
            cmp.render_terminal(result, console, regressions)
    else:
        if fmt == "md":
            text = cmp.render_markdown(result, regressions)
        else:
            from isobench.report.html import render_compare_html
            text = render_compare_html(result, regressions, fail_pct)
        if output:
            with writing(output):
                Path(output).write_text(text, encoding="utf-8")
        else:
            click.echo(text)
    if junit_path:
        from isobench.report.junit import write_junit
        suite = f"isobench compare {a.run_id} {b.run_id}" + (" --overhead" if overhead else "")
        check_output(junit_path, "--junit")
        try:
            write_junit(junit_path, suite, cmp.junit_cases(result, regressions, fail_pct))
        except IsobenchError as exc:
            _fail(str(exc))
    # Where the change comes from (counters), when both runs have them: raw
    # per-unit costs between the runs, which is not what --overhead asks.
    if fmt == "terminal" and not output and not overhead:
        from isobench.results.attribution import compare_section_lines
        for i, line in enumerate(compare_section_lines(a, b)):
            console.print(Text(("\n" if i == 0 else "") + line, style="bold" if i == 0 else ""))
    if output:
        err_console.print(f"comparison written to {printable(output)}", markup=False, highlight=False)
        err_console.print(result.form_line, markup=False, highlight=False)
        if result.between_line:
            err_console.print(result.between_line, markup=False, highlight=False)
        err_console.print(result.summary_line(), markup=False, highlight=False)
    if junit_path:
        err_console.print(f"JUnit XML written to {printable(junit_path)}", markup=False, highlight=False)
    if regressions:
        what = (f"environment cell(s) whose cost against {result.baseline} got worse than in {a.run_id}"
                if overhead else f"cell(s) changed for the worse vs {a.run_id}")
        err_console.print(f"regression: {len(regressions)} {what} by more than {fail_pct:g}%:",
                          style="bold red", markup=False, highlight=False)
        for c in regressions:
            err_console.print(f"  {cmp.regression_line(c)}", markup=False, highlight=False)
        sys.exit(1)
