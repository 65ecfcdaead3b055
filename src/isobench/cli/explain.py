"""`isobench explain RUN_ID`: which setting costs what. Each explained
environment's follow-up study (run/explain.py) runs through the same path
as `isobench run` and is stored as a run linked to the one it explains; the
answer (results/explain.py) is printed first. Parsing and printing only."""

from __future__ import annotations

from pathlib import Path

import click

from isobench.cli.common import STORE_OPTION, check_output, console, default_output, err_console, fold, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import STDOUT, document, emit, format_option, output_option, terminal_to, to_stdout


@click.command("explain")
@click.argument("run_id", metavar="[RUN_ID]", required=False)
@click.option("--cell", metavar="WORKLOAD/CASE", help="The cell to explain (default: every changed primary cell).")
@click.option("--env", metavar="ENV", help="The environment to explain (default: each with a changed primary cell).")
@click.option(
    "--setting",
    "settings",
    multiple=True,
    metavar="NAME",
    help="Move only this setting (network, storage, seccomp, ...: the environment's kind's); repeat for more. "
    "Default: every setting the environment differs from the baseline in.",
)
@click.option(
    "--factorial",
    is_flag=True,
    help="Cross two settings (--setting A --setting B): each moved alone and both together, so their "
    "interaction is measured; what an explain whose parts do not add up offers.",
)
@click.option(
    "--budget",
    metavar="DURATION",
    help="Spend about this long (30m) instead of the rounds the run took: refused when it cannot pay for "
    "one first block of every variant (the minimum is said).",
)
@click.option(
    "--trust-imported",
    is_flag=True,
    help="Explain a run that came in through `isobench import`: its stored study (commands, files, "
    "packages) then runs on this host, as root. Read it first (isobench report RUN_ID).",
)
@click.option(
    "--allow-packages",
    is_flag=True,
    help="Install the study's packages on this host (a native environment) without asking, as `run` does.",
)
@STORE_OPTION
@format_option(extra=" md and html: each explain run's report, html by default to results/RUN_ID.html.")
@output_option("Write to FILE instead of stdout (- for stdout).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
def explain_cmd(
    run_id: str | None,
    cell: str | None,
    env: str | None,
    settings: tuple[str, ...],
    factorial: bool,
    budget: str | None,
    trust_imported: bool,
    allow_packages: bool,
    store_path: str,
    fmt: str,
    output: str | None,
    progress: bool | None,
) -> None:
    """Take a changed cell of RUN_ID (default: the latest run) apart, one
    setting at a time: which of the settings its environment differs from
    the baseline in (network, storage, seccomp, AppArmor, namespaces,
    runtime, limits; a VM's tuning) costs what.

    \b
      isobench explain RUN_ID
      isobench explain RUN_ID --cell fio/randwrite --env docker-nat
      isobench explain RUN_ID --cell fio/randwrite --env docker-nat \\
        --factorial --setting storage --setting network

    For each explained environment a follow-up study runs here, as `isobench
    run` runs one: the baseline, the environment, and a variant of it per
    setting with just that setting on the baseline's side (and one with all
    of them). It is stored as a run that names the run it explains
    (`isobench report` shows it, waterfall and all). Each setting's part
    comes with its interval, corrected over the settings; what no setting
    explains is said, and so is a set of parts that does not add up
    (docs/explain.md).
    """
    from isobench.run.explain import ExplainError, Request, prepare

    store = _open_store(store_path, create=False)
    request = Request(run_id, cell, env, settings, factorial, budget, trust_imported)
    try:
        plans = prepare(store, request, lambda line: fold([f"note: {line}"], err_console))
    except ExplainError as exc:
        _fail(str(exc))
    _check_output(fmt, output, len(plans))
    measured = [_measure(store, plan, progress, allow_packages) for plan in plans]
    show(store, measured, fmt, output)


def explain_asked(store, study, run_id: str, progress: bool | None, allow_packages: bool) -> tuple:
    """A study's [explain] once its run is measured (`isobench run`): each
    changed primary cell of its environments explained as `isobench explain
    RUN_ID --env ENV` explains it, the answers printed, the explain runs
    named last; returns them (loaded), () when none was asked or found."""
    from isobench.run.explain import asked

    plans = asked(store, run_id, study, lambda line: fold([f"note: {line}"], err_console))
    runs = tuple(store.load_run(_measure(store, plan, progress, allow_packages)) for plan in plans)
    if runs:
        console.print()
        print_answers(runs, console)
        ids = ", ".join(r.run_id for r in runs)
        fold([f"run {run_id} is explained by run(s) {ids}: `isobench report {run_id}` lists them"], console)
    return runs


def _check_output(fmt: str, output: str | None, runs: int) -> None:
    """-o refused before anything is measured, not after."""
    if output is not None and fmt == "html" and output != STDOUT and runs > 1:
        _fail(
            f"-o {output} --format html: this explain makes {runs} runs, one page each; leave -o out (each "
            "goes to results/RUN_ID.html) or choose one with --cell and --env"
        )
    if not to_stdout(output):
        check_output(output, "-o")


def _measure(store, plan, progress: bool | None, allow_packages: bool) -> str:
    from isobench.cli.execution import execute

    fold([f"explaining {plan.env} against {plan.baseline}: {len(plan.study.environments)} environments"], err_console)
    return execute(
        plan.study,
        store,
        progress,
        budget_label="--budget",
        allow_packages=allow_packages,
        facts={"explain": plan.fact()},
    )


def show(store, run_ids: list[str], fmt: str, output: str | None) -> None:
    """The explain runs in the format asked (the answer first)."""
    runs = [store.load_run(r) for r in run_ids]
    if fmt == "json":
        emit(document("explain", explain_json(runs)), output)
    elif fmt == "md":
        from isobench.report.markdown import render_markdown

        emit("\n".join(render_markdown(run) for run in runs), output)
    elif fmt == "html":
        _pages(runs, output)
    else:
        terminal_to(output, lambda out: print_answers(runs, out), console)


def _pages(runs, output: str | None) -> None:
    from isobench.report.html import render_html

    for run in runs:
        if output == STDOUT:
            emit(render_html(run), output)
            continue
        path = Path(output) if output else default_output(run.run_id, ".html")
        with writing(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_html(run), encoding="utf-8")
        err_console.print(f"HTML report written to {path}", markup=False, highlight=False)


def print_answers(runs, out) -> None:
    """Each cell's answer line, then what it needs said, then where the rest is."""
    from rich.text import Text

    from isobench.results.explain import answer_line, answers, notes

    for run in runs:
        for a in answers(run):
            out.print(Text(answer_line(a), style="bold"), soft_wrap=True)
            fold([f"  {n}" for n in notes(a)], out)
        fold([f"stored as run {run.run_id}: `isobench report {run.run_id}` shows every variant"], out)


def explain_json(runs) -> dict:
    """The explain as data (docs/output.md#isobenchexplain)."""
    from isobench.results.explain import explained_of, run_json

    first = explained_of(runs[0]) if runs else None
    return {"explains": first.explains if first is not None else None, "runs": [run_json(run) for run in runs]}
