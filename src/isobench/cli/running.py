"""`isobench run`: a study run, its report printed and written
(cli/validating.py checks one first). Parsing and printing only."""

from __future__ import annotations

import os
from pathlib import Path

import click

from isobench.cli.common import (
    STORE_OPTION,
    Finite,
    console,
    default_output,
    err_console,
    own,
    results_dir,
    shipped_or_path,
    writing,
)
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.execution import WaitCommand, wait_option
from isobench.cli.output import (
    STDOUT,
    deprecated,
    emit,
    gate_exit,
    output_option,
)
from isobench.core import sink
from isobench.core.numbers import plural


@click.command(cls=WaitCommand)
@click.argument("study_file", type=click.Path(dir_okay=False), required=False, callback=shipped_or_path)
@STORE_OPTION
@output_option("The Markdown report's file (default: results/RUN_ID.md; - for stdout).")
@click.option(
    "--out",
    "out_dir",
    hidden=True,
    type=click.Path(file_okay=False),
    callback=deprecated("run --out DIR", "-o FILE"),
    help="Deprecated: a directory for RUN_ID.md.",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
@click.option(
    "--resume",
    "resume_id",
    metavar="RUN_ID",
    help="Continue an interrupted or incomplete run from its stored study: cells without an ok "
    "sample (never measured, failed, timed out) are measured again.",
)
@click.option(
    "--allow-large",
    is_flag=True,
    help="Run a study beyond the size limits (instances, samples, estimated hours; docs/reliability.md).",
)
@click.option(
    "--trust-imported",
    is_flag=True,
    help="Let --resume continue a run that came in through `isobench import`: its stored study "
    "(commands, files, packages) is then run on this host, as root. Read it first (isobench report RUN_ID).",
)
@click.option("--run-id", "new_id", metavar="RUN_ID", help="Id for the new run (a fleet controller chooses it).")
@click.option(
    "--allow-packages",
    is_flag=True,
    help="Install the study's packages on this host (a native environment) without asking; without it "
    "run asks on a terminal, and elsewhere refuses. A plan that removes a package or changes one "
    "isobench runs on is refused either way (`isobench validate` shows the plan).",
)
@click.option(
    "--budget",
    metavar="DURATION",
    help="Spend about this long (30m, 1h30m, 90s or plain seconds): the study's rounds are a first "
    "block, then rounds go to the workload cases that can still resolve (changed or equivalent) "
    "in the time left; resolved and hopeless cases stop. Overrides the study's budget "
    "(docs/statistics.md#budget).",
)
@click.option(
    "--schedule",
    type=click.Choice(["sequential", "duet"]),
    help="sequential: one sample at a time; duet: each environment's sample at the same time as the "
    "baseline's, each on half the host's CPUs, so the host's noise hits both (docs/statistics.md#duet). "
    "Overrides the study's schedule.",
)
@click.option(
    "--require-resolution",
    "resolution_pct",
    type=Finite(min=0, min_open=True),
    metavar="PCT",
    help="Exit 4 unless every primary cell of Table I was resolved (changed or equivalent against the "
    "baseline) or its interval's half-width is at most PCT percent; names the blind cells and the "
    "rounds, time and --budget that would resolve them.",
)
@wait_option
def run(
    study_file: str | None,
    store_path: str,
    output: str | None,
    out_dir: str | None,
    progress: bool | None,
    resume_id: str | None,
    allow_large: bool,
    trust_imported: bool,
    new_id: str | None,
    allow_packages: bool,
    budget: str | None,
    schedule: str | None,
    resolution_pct: float | None,
    wait_s: float | None,
) -> None:
    """Run STUDY_FILE: every workload in every environment, rounds interleaved.

    Each sample is committed to the store as soon as it is measured; Ctrl-C
    stops the study, keeps what was measured and removes every container and
    scratch file the run created (`--resume RUN_ID` finishes it later). At
    the end the report is printed and written as Markdown to -o FILE
    (default results/RUN_ID.md; `--out DIR`, deprecated, writes DIR/RUN_ID.md).
    One study runs at a time per host.

    \b
    Exit status (docs/output.md): 0 done (and not blind); 4 blind: a primary
    cell could not have seen a change of --require-resolution PCT; 2 usage
    error or bad study; 130 interrupted.
    \b
    Example (CI):
      isobench run studies/quick.toml --budget 30m --require-resolution 5
    """
    from isobench.cli.execution import execute
    from isobench.store.db import StoreError
    from isobench.study import StudyError, load_study, with_budget, with_schedule

    if (study_file is None) == (resume_id is None):
        _fail("give a study file to start a run, or --resume RUN_ID to continue one (not both)")
    from isobench.core.ids import BadIdentifier, check_run_id

    try:
        if new_id is not None:
            check_run_id(new_id, "--run-id")
    except BadIdentifier as exc:
        _fail(str(exc))
    store = _open_store(store_path, create=True)
    if new_id is not None and (
        resume_id is not None or store.db.execute("SELECT 1 FROM runs WHERE run_id=?", (new_id,)).fetchone()
    ):
        _fail(f"--run-id {new_id}: that run already exists (or --resume was given); choose another id")
    try:
        if resume_id is not None:
            resumed = _resumed(store, resume_id, budget, schedule, trust_imported)
            if resumed is None:
                return
            study, budget, schedule, resume_id = resumed
        else:
            assert study_file is not None  # one of the two, checked above
            study = load_study(study_file)
        if budget is not None:
            study = with_budget(study, budget)
        if schedule is not None:
            study = with_schedule(study, schedule, "--schedule" if resume_id is None else "the stored schedule")
    except (StudyError, StoreError, BadIdentifier) as exc:
        _fail(str(exc))
    if output is None and out_dir is None:
        results_dir()  # its report's directory, refused before the measuring, not after
    run_id = execute(
        study,
        store,
        progress,
        allow_large,
        resume_id,
        new_id,
        budget_label="--budget" if budget is not None else "study.budget",
        allow_packages=allow_packages,
        wait_s=wait_s,
    )
    _print_report(store, run_id, output, out_dir)
    if study.explain:
        _explain(store, study, run_id, (output, out_dir), progress, allow_packages)
    row = next((r for r in store.list_runs() if r.run_id == run_id), None)
    if row is not None and row.status == "incomplete":
        err_console.print(
            f"run {run_id} is incomplete: some cells have no ok sample ({row.samples_failed} "
            f"failed sample(s)); `isobench run --resume {run_id}` measures them again",
            highlight=False,
            markup=False,
        )
    if resolution_pct is not None:
        _blind_gate(store.load_run(run_id), resolution_pct)


def _resumed(store, resume_id: str, budget: str | None, schedule: str | None, trust_imported: bool):
    """--resume RUN_ID: its stored study with the budget and schedule it was
    started with (unless given again), and its full id; None when the run is
    complete (said, and nothing starts). An imported run is refused unless
    trusted: its study is someone else's commands, run as root."""
    from isobench.core.ids import check_run_id
    from isobench.run.looks import with_fitted_rounds
    from isobench.store.transfer import imported
    from isobench.study import parse_study

    resume_id = check_run_id(store.resolve(resume_id), "--resume")
    if imported(store.run_facts(resume_id)) and not trust_imported:
        _fail(
            f"--resume {resume_id}: this run came in through `isobench import`: its stored study is "
            "someone else's commands, files and packages, and a run executes them as root; re-run its "
            "study file after reading it (isobench report shows it), or add --trust-imported"
        )
    status = store.db.execute("SELECT status FROM runs WHERE run_id=?", (resume_id,)).fetchone()
    if status is not None and status[0] == "complete":  # nothing to measure: start nothing
        err_console.print(
            f"run {resume_id} is complete: every cell has its samples, nothing to resume "
            f"(isobench report {resume_id} shows it)",
            markup=False,
            highlight=False,
        )
        return None
    stored_path, text = store.study_of(resume_id)
    # its files are read again beside the study file it was started from
    study = parse_study(text, f"{resume_id} (stored study)", os.path.dirname(os.path.abspath(stored_path)))
    stored = (store.run_facts(resume_id).get("budget") or {}).get("budget_s")
    if budget is None and stored:  # the budget it was started with, perhaps from --budget
        budget = f"{int(stored)}s"
    schedule = schedule or (store.run_facts(resume_id).get("schedule") or {}).get("name")
    return with_fitted_rounds(study, store.run_facts(resume_id)), budget, schedule, resume_id


def _blind_gate(run, pct: float) -> None:
    """--require-resolution on the run's own Table I: name the blind cells
    and what would resolve each, and exit 4 (output.EXIT_BLIND)."""
    from isobench.results.gate import cell_name, gated_count, table_blind, why_blind
    from isobench.results.table import build_table

    table = build_table(run)
    blind = table_blind(table, pct)
    if not blind:
        return
    n = gated_count(table)
    err_console.print(
        f"blind: {len(blind)} of {plural(n, 'primary cell')} could not have seen a change of {pct:g}% "
        f"against {run.baseline} (neither resolved nor an interval within \u00b1{pct:g}%):",
        style="bold red",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for key, env, verdict in blind:
        err_console.print(
            f"  {cell_name(key, env)}: {why_blind(verdict, run)}", markup=False, highlight=False, soft_wrap=True
        )
    gate_exit(False, True)


def _explain(store, study, run_id: str, where: tuple, progress: bool | None, allow_packages: bool) -> None:
    """The study's [explain], after its report (an explain refused must not
    cost the run its report); the Markdown report then written again, with
    its explain runs (not when it went to stdout: once is enough there)."""
    from isobench.cli.explain import explain_asked

    explained = explain_asked(store, study, run_id, progress, allow_packages)
    output, out_dir = where
    if explained and output != STDOUT:
        _write_markdown(store.load_run(run_id), output, out_dir, explained)


def _print_report(store, run_id: str, output: str | None, out_dir: str | None) -> None:
    from isobench.report.markdown import render_markdown
    from isobench.report.terminal import render_terminal

    run = store.load_run(run_id)
    render_terminal(run, console)
    if output == STDOUT:
        emit(render_markdown(run), output)
        return
    _write_markdown(run, output, out_dir)


def _write_markdown(run, output: str | None, out_dir: str | None, explained: tuple = ()) -> None:
    from isobench.report.markdown import render_markdown

    md_path = Path(output) if output else default_output(run.run_id, ".md", out_dir)
    with writing(md_path, "-o" if output else "--out"):
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(render_markdown(run, explained))
    own(md_path)  # written by this run: its [explain] writes it again, with the explain runs
    console.print(f"\nreport written to {sink.markup(md_path)}", highlight=False)
