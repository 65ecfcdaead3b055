"""`isobench compare`: one run against another, cell by cell
(results/compare.py, docs/statistics.md). Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from isobench.cli.common import STORE_OPTION, Finite, check_output, console, default_output, err_console
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import (
    document,
    emit,
    format_option,
    gate_exit,
    old_fail_on_regression,
    output_option,
    terminal_to,
    to_stdout,
)
from isobench.core.ids import printable


@click.command("compare")
@click.argument("run_a", metavar="RUN_ID_A")
@click.argument("run_b", metavar="RUN_ID_B")
@STORE_OPTION
@click.option(
    "--store-b",
    "store_b_path",
    type=click.Path(dir_okay=False, exists=True),
    help="Store holding RUN_ID_B (another host's results file); default: --store.",
)
@click.option(
    "--tolerance",
    type=Finite(min=0, max=99),
    default=None,
    metavar="PCT",
    help="Equivalence margin: a cell whose interval lies within ±PCT% is 'equivalent' "
    "(default: the study's tolerance_pct, else 5).",
)
@click.option(
    "--fail-on-change",
    "fail_pct",
    type=Finite(min=0),
    metavar="PCT",
    help="Exit 1 naming every primary cell of B (every cell, for runs stored before primaries) "
    "changed for the worse (significant after Benjamini-Hochberg correction, beyond the "
    "metric's noise floor) by more than PCT percent; with --overhead, every environment whose "
    "cost against the baseline got worse so.",
)
@old_fail_on_regression("compare")
@click.option(
    "--require-resolution",
    "resolution_pct",
    type=Finite(min=0, min_open=True),
    metavar="PCT",
    help="Exit 4 unless every primary cell was resolved (changed or equivalent) or its interval's "
    "half-width is at most PCT percent: a gate that could not have seen a PCT change fails "
    "instead of passing green; names the blind cells and the rounds, time and --budget that would do.",
)
@click.option(
    "--overhead",
    is_flag=True,
    help="Compare each environment's ratio to the study's baseline (within its run, paired by "
    "round) between the runs, instead of raw values: did what isolation costs change? A host "
    "faster or slower between the runs cancels.",
)
@click.option(
    "--between-runs/--no-between-runs",
    "between_runs",
    default=True,
    show_default=True,
    help="Add to each cell's interval how far a run's mean (with --overhead: its ratio to the "
    "baseline) moves between runs of A's configuration on this host class, estimated from the "
    "runs --store holds (at least 2 in an environment); without it a shift of the host between "
    "the two runs reads as a change.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write JUnit XML: one test case per compared cell, failed where "
    "--fail-on-change fails (and, with --require-resolution, where a cell is blind), "
    "skipped when inconclusive otherwise.",
)
@format_option(extra=" html: one offline file, default results/compare-RUN_ID_A-RUN_ID_B.html.")
@output_option(
    "Write to FILE instead of stdout (- for stdout; html without -o: results/compare-RUN_ID_A-RUN_ID_B.html)."
)
def compare_cmd(
    run_a: str,
    run_b: str,
    store_path: str,
    store_b_path: str | None,
    tolerance: float | None,
    fail_pct: float | None,
    old_fail_pct: float | None,
    resolution_pct: float | None,
    overhead: bool,
    between_runs: bool,
    junit_path: str | None,
    fmt: str,
    output: str | None,
) -> None:
    """Compare RUN_ID_B against RUN_ID_A (ids, unique prefixes or
    FLEET_ID/HOST), cell by cell: the ratio of B's geometric mean to A's
    with its interval (Welch's t on logs), Benjamini-Hochberg over all cells
    (over the primary cells and, apart, the descriptive ones when the runs
    store primaries), and a verdict per cell: changed, equivalent
    within ±tolerance, or inconclusive at this n (docs/statistics.md). With
    --overhead, each environment's ratio to the baseline in B against the
    same in A.

    \b
    Exit status (docs/output.md): 0 no regression (or no --fail-on-change)
    and not blind; 1 a regression beyond --fail-on-change (even when cells
    are blind too); 4 blind: a primary cell could not have seen a change of
    --require-resolution PCT; 2 usage error or nothing to compare.
    --fail-on-regression, the old name of --fail-on-change, works for one
    more release.
    \b
    Example (CI):
      isobench compare A B --fail-on-change 5 --require-resolution 5 \\
        --junit compare.xml
    """
    if old_fail_pct is not None and fail_pct is None:
        fail_pct = old_fail_pct
    from isobench.core.errors import IsobenchError
    from isobench.report import compare_render as cmp
    from isobench.results.compare import compare_overheads, compare_runs
    from isobench.store.db import StoreError

    store_a = _open_store(store_path, reader=True)
    store_b = _open_store(store_b_path, reader=True) if store_b_path else store_a
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

        stored = [
            store_a.load_run(r.run_id)
            for r in store_a.list_runs()
            if r.study_name == a.study_name and r.run_id not in (a.run_id, b.run_id)
        ]
        between = spreads(stored + [a], a, b, overhead=overhead)
    try:
        result = compare_overheads(a, b, tolerance, between) if overhead else compare_runs(a, b, tolerance, between)
    except IsobenchError as exc:
        _fail(str(exc))
    if not result.cells and overhead:
        _fail(
            f"--overhead: runs {a.run_id} and {b.run_id} have no cell (workload, case, metric, environment "
            f"other than {result.baseline}) measured with {result.baseline} in both; drop --overhead to "
            "compare raw values"
        )
    if not result.cells:
        _fail(f"runs {a.run_id} and {b.run_id} have no cell (workload, case, metric, environment) measured in both")
    if a.run_id == b.run_id and store_a.path == store_b.path:
        err_console.print(
            f"note: comparing run {a.run_id} with itself: every cell is unchanged by construction",
            markup=False,
            highlight=False,
        )
    regressions = result.regressions(fail_pct) if fail_pct is not None else []
    blind = result.blind(resolution_pct) if resolution_pct is not None else []
    pace = b if b.seconds_per_round() else a  # the run whose pace says the time that would resolve
    if fmt == "json":
        emit(document("compare", compare_json(result, fail_pct, regressions, resolution_pct, blind)), output)
    elif fmt == "terminal":
        terminal_to(output, lambda out: cmp.render_terminal(result, out, regressions), console)
    elif fmt == "md":
        emit(cmp.render_markdown(result, regressions), output)
    else:
        from isobench.report.html import render_compare_html

        if output is None:  # as report and history: a page is a file, results/compare-A-B.html
            output = str(default_output(f"compare-{a.run_id}-{b.run_id}", ".html"))
            Path(output).parent.mkdir(parents=True, exist_ok=True)
        emit(render_compare_html(result, regressions, fail_pct), output)
    if junit_path:
        from isobench.report.junit import write_junit

        suite = f"isobench compare {a.run_id} {b.run_id}" + (" --overhead" if overhead else "")
        check_output(junit_path, "--junit")
        try:
            write_junit(junit_path, suite, cmp.junit_cases(result, regressions, fail_pct, blind, resolution_pct))
        except IsobenchError as exc:
            _fail(str(exc))
    # Where the change comes from (counters), when both runs have them: raw
    # per-unit costs between the runs, which is not what --overhead asks.
    if fmt == "terminal" and to_stdout(output) and not overhead:
        from isobench.results.attribution import compare_section_lines

        for i, line in enumerate(compare_section_lines(a, b)):
            console.print(Text(("\n" if i == 0 else "") + line, style="bold" if i == 0 else ""))
    if result.study_line and not (fmt == "terminal" and to_stdout(output)):  # the terminal's says it first
        err_console.print(f"warning: {result.study_line}", style="bold red", markup=False, highlight=False)
    if output is not None and not to_stdout(output):
        err_console.print(f"comparison written to {printable(output)}", markup=False, highlight=False)
        err_console.print(result.form_line, markup=False, highlight=False)
        if result.between_line:
            err_console.print(result.between_line, markup=False, highlight=False)
        err_console.print(result.summary_line(), markup=False, highlight=False)
    if junit_path:
        err_console.print(f"JUnit XML written to {printable(junit_path)}", markup=False, highlight=False)
    if regressions:
        what = (
            f"environment {cells_word(len(regressions))} whose cost against {result.baseline} got worse than in "
            f"{a.run_id}"
            if overhead
            else f"{cells_word(len(regressions))} changed for the worse vs {a.run_id}"
        )
        err_console.print(
            f"regression: {len(regressions)} {what} by more than {fail_pct:g}%:",
            style="bold red",
            markup=False,
            highlight=False,
        )
        for c in regressions:
            err_console.print(f"  {cmp.regression_line(c)}", markup=False, highlight=False, soft_wrap=True)
    if blind:
        gated = sum(1 for c in result.cells if c.gated)
        err_console.print(
            f"blind: {len(blind)} of {gated} primary {cells_word(gated)} could not have seen a change "
            f"of {resolution_pct:g}% (neither resolved nor an interval within "
            f"\u00b1{resolution_pct:g}%):",
            style="bold red",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        for c in blind:
            err_console.print(f"  {cmp.blind_line(c, pace)}", markup=False, highlight=False, soft_wrap=True)
    gate_exit(bool(regressions), bool(blind))


def cells_word(n: int) -> str:
    return "cell" if n == 1 else "cells"


def compare_json(result, fail_pct, regressions, resolution_pct, blind) -> dict:
    """The compare as data (docs/output.md#compare)."""
    from isobench.results.numbers import beyond_cap, capped

    failing, unseen = {id(c) for c in regressions}, {id(c) for c in blind}
    cells = []
    for c in result.cells:
        v = c.verdict
        cells.append(
            {
                "name": c.name,
                "workload": c.key.workload,
                "case": c.key.case,
                "metric": c.key.metric,
                "unit": c.key.unit,
                "higher_is_better": c.key.higher_is_better,
                "env": c.env,
                "family": c.family or None,
                "gated": c.gated,
                "emulated": c.emulated,
                "verdict": v.verdict,
                "direction": v.direction or None,
                "pct": v.pct,
                "pct_low": v.pct_low if v.effect.tested else None,
                "pct_high": v.pct_high if v.effect.tested else None,
                "level": v.level,
                "half_width_pct": v.half_width_pct,
                "p_adjusted": v.p_adjusted,
                "rounds_needed": capped(v.rounds_needed),
                "rounds_needed_beyond_cap": beyond_cap(v.rounds_needed),
                "callable_pct": v.callable_pct,
                "regression": id(c) in failing,
                "blind": id(c) in unseen,
                "text": v.text,
            }
        )
    return {
        "run_a": result.run_a.run_id,
        "run_b": result.run_b.run_id,
        "form": result.form,
        "baseline": result.baseline or None,
        "tolerance_pct": result.tolerance_pct,
        "fail_on_change_pct": fail_pct,
        "require_resolution_pct": resolution_pct,
        "counts": {verdict: result.count(verdict) for verdict in ("changed", "equivalent", "inconclusive")},
        "summary": result.summary_line(),
        "study_changed": result.study_line or None,
        "cells": cells,
        "only_in_a": result.only_in_a,
        "only_in_b": result.only_in_b,
        "mismatched": result.mismatched,
        "facts_diff": [{"fact": k, "a": x, "b": y} for k, x, y in result.facts_diff],
        "regressions": [c.name for c in regressions],
        "blind": [c.name for c in blind],
    }
