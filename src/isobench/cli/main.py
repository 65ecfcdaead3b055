"""The isobench command line. Parsing and printing only; the work is elsewhere."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from isobench.cli.common import FORCE_OPTION, STORE_OPTION, Finite, check_output, console, default_output, err_console
from isobench.cli.common import own, writing
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.core.ids import printable
from isobench.core import sink


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="isobench")
def main() -> None:
    """Measure what isolation costs.

    isobench runs the same workloads natively, in containers (Docker with
    runc, crun or gVisor), in QEMU/KVM virtual machines (TCG, labelled
    emulated, where KVM cannot run the guest) and in containers inside VMs,
    stores every sample in SQLite, and reports each workload per environment
    with its overhead against native, its spread and a significance verdict.

    \b
    Typical use:
      isobench run studies/quick.toml      run a study, print and save its report
      isobench runs                        list stored runs
      isobench report --format md          the latest run's Table I as Markdown
      isobench envs                        what this host can run, and why not
    """


@main.command()
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--allow-large", is_flag=True, help="Accept a study beyond the size limits (docs/reliability.md).")
@click.option("--budget", metavar="DURATION", help="Check the study as `run --budget DURATION` would run it.")
def validate(study_file: str, allow_large: bool, budget: str | None) -> None:
    """Check a study file without running anything."""
    from isobench.study import StudyError, load_study, with_budget
    try:
        study = load_study(study_file)
        if budget is not None:
            study = with_budget(study, budget)
    except StudyError as exc:
        _fail(str(exc))
    from isobench.cli.execution import preflight_or_fail
    size = preflight_or_fail(study, allow_large, "--budget" if budget is not None else "study.budget")
    instances = sum(spec.instances for spec in study.environments.values())
    console.print(f"{escape(study_file)}: ok — {len(study.environments)} environments"
                  + (f" ({instances} instances)" if instances > len(study.environments) else "")
                  + f", {len(study.workloads)} workloads, "
                  f"{study.meta.warmup} warm-up + {_repetitions_text(study.meta, study.budget_plan())}"
                  + (f", {len(study.noise.steps)} {study.noise.stressor} noise steps {list(study.noise.steps)}"
                     if study.noise else ""), highlight=False)
    console.print(size.describe(), highlight=False, markup=False)
    from isobench.cli.execution import say_resolution
    from isobench.checks.noisepilot import cached
    say_resolution(study, size, cached(), console)  # the last pilot's figures: validate measures nothing
    for (env, key), reason in study.unsupported().items():
        console.print(f"not run: {key} in {env}: {reason}", highlight=False, markup=False, soft_wrap=True)


def _repetitions_text(meta, plan=None) -> str:
    if plan is not None:
        return (f"a {meta.budget} budget ({plan.first} rounds of every case, then blocks to the cases still "
                f"open, up to {plan.cap} rounds; {plan.looks} planned looks)")
    if not meta.adaptive:
        return f"{meta.repetitions} repetitions"
    s = meta.adaptive_schedule
    return (f"auto repetitions ({s.min_rounds} to {s.max_rounds} rounds in blocks of {s.block}, "
            f"until every cell's 95% CI is within \u00b1{meta.target_ci_pct:g}%)")


@main.command()
@click.argument("study_file", type=click.Path(dir_okay=False), required=False)
@STORE_OPTION
@click.option("--out", "out_dir", default="results", show_default=True, type=click.Path(file_okay=False),
              help="Directory for the Markdown report (RUN_ID.md).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
@click.option("--resume", "resume_id", metavar="RUN",
              help="Continue an interrupted or incomplete run from its stored study: cells without an ok "
                   "sample (never measured, failed, timed out) are measured again.")
@click.option("--allow-large", is_flag=True,
              help="Run a study beyond the size limits (instances, samples, estimated hours; docs/reliability.md).")
@click.option("--run-id", "new_id", metavar="ID", help="Id for the new run (a fleet controller chooses it).")
@click.option("--budget", metavar="DURATION",
              help="Spend about this long (30m, 1h30m): the study's rounds are a first block, then rounds go "
                   "to the workload cases that can still resolve (changed or equivalent) in the time left; "
                   "resolved and hopeless cases stop. Overrides the study's budget (docs/statistics.md#budget).")
@click.option("--schedule", type=click.Choice(["sequential", "duet"]),
              help="sequential: one sample at a time; duet: each environment's sample at the same time as the "
                   "baseline's, each on half the host's CPUs, so the host's noise hits both (docs/statistics.md#duet). "
                   "Overrides the study's schedule.")
def run(study_file: str | None, store_path: str, out_dir: str, progress: bool | None,
        resume_id: str | None, allow_large: bool, new_id: str | None, budget: str | None,
        schedule: str | None) -> None:
    """Run STUDY_FILE: every workload in every environment, rounds interleaved.

    Each sample is committed to the store as soon as it is measured; Ctrl-C
    stops the study, keeps what was measured and removes every container and
    scratch file the run created (`--resume RUN` finishes it later). At the
    end the report is printed and written as Markdown to OUT/RUN_ID.md.
    One study runs at a time per host.
    """
    from isobench.cli.execution import execute
    from isobench.store.db import StoreError
    from isobench.study import StudyError, load_study, parse_study, with_budget, with_schedule

    if (study_file is None) == (resume_id is None):
        _fail("give a study file to start a run, or --resume RUN to continue one (not both)")
    from isobench.core.ids import BadIdentifier, check_run_id
    try:
        if new_id is not None:
            check_run_id(new_id, "--run-id")
    except BadIdentifier as exc:
        _fail(str(exc))
    store = _open_store(store_path, create=True)
    if new_id is not None and (resume_id is not None or store.db.execute(
            "SELECT 1 FROM runs WHERE run_id=?", (new_id,)).fetchone()):
        _fail(f"--run-id {new_id}: that run already exists (or --resume was given); choose another id")
    try:
        if resume_id is not None:
            resume_id = check_run_id(store.resolve(resume_id), "--resume")
            study = parse_study(store.study_of(resume_id)[1], f"{resume_id} (stored study)")
            stored = (store.run_facts(resume_id).get("budget") or {}).get("budget_s")
            if budget is None and stored:  # the budget it was started with, perhaps from --budget
                budget = f"{int(stored)}s"
            schedule = schedule or (store.run_facts(resume_id).get("schedule") or {}).get("name")
        else:
            study = load_study(study_file)
        if budget is not None:
            study = with_budget(study, budget)
        if schedule is not None:
            study = with_schedule(study, schedule, "--schedule" if resume_id is None else "the stored schedule")
    except (StudyError, StoreError, BadIdentifier) as exc:
        _fail(str(exc))
    run_id = execute(study, store, progress, allow_large, resume_id, new_id,
                     budget_label="--budget" if budget is not None else "study.budget")
    _print_report(store, run_id, out_dir)
    row = next((r for r in store.list_runs() if r.run_id == run_id), None)
    if row is not None and row.status == "incomplete":
        err_console.print(f"run {run_id} is incomplete: some cells have no ok sample ({row.samples_failed} "
                          f"failed sample(s)); `isobench run --resume {run_id}` measures them again",
                          highlight=False, markup=False)


def _print_report(store, run_id: str, out_dir: str) -> None:
    from isobench.report.markdown import render_markdown
    from isobench.report.terminal import render_terminal
    run = store.load_run(run_id)
    render_terminal(run, console)
    md_path = own(Path(out_dir) / default_output(run_id, ".md").name)
    with writing(md_path, "--out"):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        md_path.write_text(render_markdown(run))
    console.print(f"\nreport written to {escape(str(md_path))}", highlight=False)


@main.command()
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


@main.command()
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


@main.command("compare")
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


@main.command("export")
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


@main.command()
def envs() -> None:
    """What this host can run, and why not."""
    from isobench.envs.kinds import probe_all
    table = Table("environment", "available", "details")
    for row in probe_all():
        table.add_row(escape(row.name), "[green]yes" if row.available else "[red]no", escape(row.details))
    console.print(table)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable findings.")
@click.option("--fresh", is_flag=True,
              help="Measure the host's noise again even when the last pilot is under an hour old.")
def doctor(as_json: bool, fresh: bool) -> None:
    """Host settings that bias results, each with how to fix it, and the
    host's noise: a pilot of about 30 s (fixed CPU and I/O kernels as A/A
    pairs) whose paired SD per sample says what a study can resolve here,
    reused for an hour (docs/statistics.md#host-noise).

    The same findings are stored with every run and shown in its report.
    Exits 0 whatever it finds: a warning is advice, not an error.
    """
    import json
    import time

    from isobench.checks.doctor import findings_as_facts, judge, read_host
    from isobench.checks.noisepilot import ABOUT_S, as_finding, without_a_run
    findings = judge(read_host())  # before the pilot, whose load would show in the load average
    pilot, note = without_a_run(fresh, on_measure=lambda: err_console.print(
        f"measuring the host's noise (about {ABOUT_S} s; reused for an hour)", highlight=False, markup=False))
    findings.append(as_finding(pilot, note, time.time()))
    if as_json:
        facts = findings_as_facts(findings)
        if pilot is not None:
            facts[-1]["pilot"] = pilot.as_fact(time.time())
        click.echo(json.dumps(facts, indent=2))
        return
    colour = {"ok": "green", "warn": "yellow", "info": "blue"}
    table = Table("check", "status", "value", "how to fix")
    for f in findings:
        table.add_row(escape(f.check), f"[{colour[f.status]}]{f.status}", escape(str(f.value)), escape(f.fix))
    console.print(table)


@main.group()
def images() -> None:
    """The Debian image every environment runs (debootstrap → Docker image)."""


@images.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when the cached image matches the recipe.")
def images_build(force: bool) -> None:
    """Build (or reuse) the image, cached by a hash of its recipe."""
    from isobench.core.errors import EnvironmentError_
    from isobench.core.dockerclient import engine
    from isobench.images import ensure_image
    try:
        tag = ensure_image(engine(), force=force,
                           log=lambda line: console.print(line, highlight=False, markup=False))
    except EnvironmentError_ as exc:
        _fail(str(exc))
    console.print(f"image ready: {tag}", markup=False)


@main.command()
def clean() -> None:
    """Remove what a crashed run left: QEMU guests, servers, namespaces, links,
    iptables rules, containers, volumes and scratch files (only isobench's)."""
    from isobench.run.clean import clean as do_clean
    from isobench.core.lock import AlreadyRunning, RunLock
    lock = RunLock()
    try:
        lock.acquire("clean")  # never pull environments away from a live run
    except AlreadyRunning as exc:
        _fail(f"{exc}; clean would remove its environments: run it once that run has ended")
    with lock:
        removed = do_clean()
        from isobench.checks.health import forget_pending
        forget_pending()  # what failed teardowns left is gone with the rest
    for item in removed:
        console.print(f"removed {item}", highlight=False, markup=False)
    console.print(f"{len(removed)} item(s) removed" if removed else "nothing to clean")


# commands that live in their own modules (fleet; moving runs between stores; calibrate;
# recomputing stored values with the current parsers; history)
from isobench.cli.fleet import fleet  # noqa: E402
from isobench.cli.transfer import export_run_cmd, import_cmd  # noqa: E402
from isobench.cli.calibrate import calibrate  # noqa: E402
from isobench.cli.reparse import reparse  # noqa: E402
from isobench.cli.history import history  # noqa: E402

for _command in (fleet, export_run_cmd, import_cmd, calibrate, reparse, history):
    main.add_command(_command)

if __name__ == "__main__":
    main()
