"""`isobench history`: each environment's overhead across the stored runs of
a study, with change points and what changed at each (results/history.py,
docs/history.md). Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from isobench.cli.common import STORE_OPTION, Finite, check_output, console, err_console, own, results_dir, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import (
    STDOUT,
    document,
    emit,
    format_option,
    gate_exit,
    old_fail_on_regression,
    output_option,
    terminal_to,
)

DATE = click.DateTime(formats=["%Y-%m-%d"])


@click.command("history")
@click.argument("study", required=False)
@STORE_OPTION
@format_option(extra=" html: one offline file with a figure per workload, default results/history-STUDY.html.")
@output_option("Write to FILE instead of stdout (- for stdout; html without -o: results/history-STUDY.html).")
@click.option(
    "--by-host", is_flag=True, help="Also split series by host name (default: by host class: CPU model, cores, memory)."
)
@click.option("--env", "envs", multiple=True, metavar="NAME", help="Only this environment (repeatable).")
@click.option("--workload", "workloads", multiple=True, metavar="NAME", help="Only this workload (repeatable).")
@click.option("--since", type=DATE, metavar="YYYY-MM-DD", help="Only runs started on or after this day.")
@click.option("--until", type=DATE, metavar="YYYY-MM-DD", help="Only runs started on or before this day.")
@click.option("--host", metavar="NAME", help="Only runs of this host (its hostname, or a fleet's host name).")
@click.option(
    "--fail-on-change",
    "fail_pct",
    type=Finite(min=0),
    metavar="PCT",
    help="Exit 1 when the newest run sits after a confirmed step for the worse of more than PCT "
    "percent in any cell, naming the cell, the step and the facts that changed.",
)
@old_fail_on_regression("history")
@click.option(
    "--require-resolution",
    "resolution_pct",
    type=Finite(min=0, min_open=True),
    metavar="PCT",
    help="Exit 4 unless every primary cell of the newest run could have shown a step of PCT percent: "
    "its series has enough runs for a step and the newest run's interval is within \u00b1PCT; "
    "names the blind cells and what would resolve them.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write JUnit XML: one test case per primary cell of the newest run's host class "
    "(failed where the gate fails, and where --require-resolution finds it blind).",
)
def history(
    study: str | None,
    store_path: str,
    fmt: str,
    output: str | None,
    by_host: bool,
    envs: tuple[str, ...],
    workloads: tuple[str, ...],
    since,
    until,
    host: str | None,
    fail_pct: float | None,
    old_fail_pct: float | None,
    resolution_pct: float | None,
    junit_path: str | None,
) -> None:
    """Each environment's overhead over the stored runs of STUDY (a study
    name or a study file; default: the latest run's study), per host class,
    with the steps found in it and the facts that differ across each.

    \b
    Exit status (docs/output.md): 0 no step for the worse beyond
    --fail-on-change (or no --fail-on-change) and not blind; 1 the newest
    run sits after one (even when cells are blind too); 4 blind: a cell of
    the newest run could not have shown a step of --require-resolution PCT;
    2 usage error. --fail-on-regression is taken as --fail-on-change for one
    release.
    \b
    Example (CI, after `isobench run studies/quick.toml`):
      isobench history quick --fail-on-change 5 --require-resolution 5 \\
        --junit history.xml
    """
    if old_fail_pct is not None and fail_pct is None:
        fail_pct = old_fail_pct
    from isobench.analysis import changepoints as cp
    from isobench.report.history import history_page
    from isobench.results.history import build_history, select

    store = _open_store(store_path, reader=True)
    rows = store.list_runs()
    if not rows:
        _fail(f"{store_path}: no runs stored yet; start one with `isobench run STUDY`")
    if study is None:
        study = next(r.study_name for r in rows if r.run_id == store.latest_run_id())
    elif study.endswith(".toml") and Path(study).is_file():
        from isobench.study import StudyError, load_study

        try:
            study = load_study(study).meta.name
        except StudyError as exc:
            _fail(str(exc))
    names = sorted({r.study_name for r in rows})
    if study not in names:
        _fail(
            f"study {study!r}: no stored run of it in {store_path}; stored studies: {', '.join(names)} "
            "(`isobench runs` lists the runs)"
        )
    runs = [store.load_run(r.run_id) for r in rows if r.study_name == study]
    _check_names("--env", envs, {e for r in runs for e in r.environments if e != r.baseline}, study)
    _check_names("--workload", workloads, {k.workload for r in runs for k in r.metrics}, study)
    kept, left_out = select(runs, since.date() if since else None, until.date() if until else None, host)
    if not kept:
        why = "; ".join(left_out)
        _fail(f"study {study!r}: none of its {len(runs)} run(s) can be used ({why})")
    h = build_history(
        study, kept, by_host=by_host, envs=set(envs) or None, workloads=set(workloads) or None, left_out=left_out
    )
    if not h.series():
        first = next(
            (x for x in h.left_out if "primary metric" in x),
            "no usable run has a tested primary cell against its baseline (`isobench report RUN` shows why)",
        )
        _fail(f"study {study!r}: no series to show: {first}")
    longest = max(len(s.points) for s in h.series())
    if longest < cp.MIN_RUNS and fmt != "json":
        err_console.print(
            f"note: the longest series of {study} has {longest} comparable run(s); a step needs at "
            f"least {cp.MIN_RUNS} ({cp.MIN_SEGMENT} on each side): run the study "
            f"{cp.MIN_RUNS - longest} more time(s) on this host class",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    failing = h.gate(fail_pct) if fail_pct is not None else []
    blind = h.blind(resolution_pct) if resolution_pct is not None else []
    explains = _explains(store, kept)
    if fmt == "json":
        emit(document("history", history_json(h, fail_pct, failing, resolution_pct, blind, explains)), output)
    else:
        _show(history_page(h, fail_pct, figures=fmt == "html", explains=explains), fmt, output, study)
    if junit_path:
        from isobench.report.junit import write_junit

        check_output(junit_path, "--junit")
        write_junit(junit_path, f"isobench history {study}", _cases(h, study, fail_pct, blind, resolution_pct))
    if blind:
        n = len(h.newest_series())
        err_console.print(
            f"blind: {len(blind)} of {n} primary {'cell' if n == 1 else 'cells'} of the newest run "
            f"could not have shown a step of {resolution_pct:g}%:",
            style="bold red",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        for s, why in blind:
            err_console.print(f"  {s.cell.name}: {why}", markup=False, highlight=False, soft_wrap=True)
    if failing:
        newest = h.newest
        assert newest is not None  # the gate judges the newest run
        err_console.print(
            f"change: {len(failing)} cell(s) of the newest run {newest.run_id} sit after a step for "
            f"the worse beyond {fail_pct:g}%:",
            style="bold red",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        for c in failing:
            err_console.print(f"  {gate_line(c)}", markup=False, highlight=False, soft_wrap=True)
    gate_exit(bool(failing), bool(blind))


def _explains(store, runs) -> list:
    """The store's explain runs of these runs (shown beside the series, never in them)."""
    from isobench.store.links import explain_links

    ids = {r.run_id for r in runs}
    return [store.load_run(e) for e, of in explain_links(store).items() if of in ids]


def gate_line(c) -> str:
    return (
        f"{c.cell.name}: worse by {c.worse_pct:.1f}% (step {c.step_pct:+.1f}% "
        f"[{c.low_pct:+.1f}%, {c.high_pct:+.1f}%]) {c.where}; changed: {'; '.join(c.fact_lines())}"
    )


def _check_names(option: str, given: tuple[str, ...], known: set[str], study: str) -> None:
    unknown = [g for g in given if g not in known]
    if unknown:
        _fail(f"{option} {unknown[0]}: no run of study {study!r} has it; it has {', '.join(sorted(known)) or 'none'}")


def _show(page, fmt: str, output: str | None, study: str) -> None:
    from isobench.report import history_render as render

    if fmt == "html" and output != STDOUT:
        from isobench.core.ids import BadIdentifier, under

        try:
            path = Path(output) if output else own(under(results_dir(), f"history-{study}.html"))
        except BadIdentifier as exc:
            _fail(f"{exc}; give -o PATH")
        text = render.render_html(page)
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        console.print(Text(f"history written to {path}"))  # a path is user text: never markup
    elif fmt in ("html", "md"):
        emit((render.render_html if fmt == "html" else render.render_markdown)(page), output)
    else:
        terminal_to(output, lambda out: render.render_terminal(page, out), console)


def history_json(h, fail_pct, failing, resolution_pct, blind, explains=()) -> dict:
    """The history as data (docs/output.md#history)."""
    from isobench.results.explain import explaining, run_json

    def point(p):
        v = p.verdict
        return {
            "run_id": p.run_id,
            "started_at": p.started_at,
            "pct": v.pct,
            "verdict": v.verdict,
            "pct_low": v.pct_low if v.effect.tested else None,
            "pct_high": v.pct_high if v.effect.tested else None,
            "level": v.level,
        }

    def change(c):
        return {
            "step_pct": c.step_pct,
            "low_pct": c.low_pct,
            "high_pct": c.high_pct,
            "worse_pct": c.worse_pct,
            "where": c.where,
            "facts": c.fact_lines(),
        }

    def series(s):
        k = s.cell
        return {
            "name": k.name,
            "workload": k.workload,
            "case": k.case,
            "metric": k.metric,
            "unit": k.unit,
            "higher_is_better": k.higher_is_better,
            "env": k.env,
            "baseline": k.baseline,
            "too_short": s.too_short,
            "points": [point(p) for p in s.points],
            "changes": [change(c) for c in s.changes],
        }

    newest = h.newest
    return {
        "study": h.study,
        "newest_run": newest.run_id if newest else None,
        "level": h.level,
        "groups": [
            {"host": g.host.label, "runs": [r.run_id for r in g.runs], "series": [series(s) for s in g.series]}
            for g in h.groups
        ],
        "left_out": h.left_out,
        "fail_on_change_pct": fail_pct,
        "require_resolution_pct": resolution_pct,
        "failing": [gate_line(c) for c in failing],
        "blind": [{"name": s.cell.name, "why": why} for s, why in blind],
        "explained": [
            {"run_id": r.run_id, "explain": run_json(e)}
            for g in h.groups
            for r in g.runs
            for e in explaining(r, list(explains))
        ],
    }


def _cases(h, study: str, fail_pct: float | None, blind=(), resolution_pct: float | None = None):
    """One JUnit case per primary cell of the newest run's host class:
    failed where the gate fails (at PCT 0 without --fail-on-change: any
    step for the worse the newest run sits after) and where
    --require-resolution finds it blind; skipped when too short otherwise."""
    from isobench.report.junit import Case

    newest = h.newest
    group = next((g for g in h.groups if newest is not None and any(r.run_id == newest.run_id for r in g.runs)), None)
    failing = {id(c) for c in h.gate(fail_pct or 0.0)}
    unseen = {id(s): why for s, why in blind}
    cases = []
    for s in group.series if group else []:
        last = s.points[-1]
        output = f"{len(s.points)} run(s); newest {last.run_id}: {last.text} vs {s.cell.baseline}"
        if s.changes:
            output += f"; last step: {s.changes[-1].summary}; changed: {'; '.join(s.changes[-1].fact_lines())}"
        c = s.changes[-1] if s.changes else None
        failure = gate_line(c) if c is not None and id(c) in failing else None
        if failure is None and id(s) in unseen:
            failure = f"blind: could not have shown a step of {resolution_pct:g}%: {unseen[id(s)]}"
        cases.append(
            Case(
                s.cell.name,
                f"isobench.history.{study}",
                failure=failure,
                skipped=s.shortfall if s.too_short and failure is None else None,
                output=output,
            )
        )
    return cases
