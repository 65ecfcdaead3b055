"""`isobench try -- COMMAND ...`: one command measured as a command workload
(workloads/command.py) natively and in Docker without writing a study: the
study is made here, run like any other and stored, and the answer printed."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

import click

from isobench.cli.common import STORE_OPTION, check_output, console, err_console, fold, writing, written_here
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.execution import WaitCommand, wait_option
from isobench.cli.output import emit, output_option, table_format_option, terminal_to, to_stdout
from isobench.core import sink
from isobench.core.ids import NAME_MAX

# The first presets in the kinds' rank order (the host itself, then Docker
# with its two networks today: the quick study's); the core names no kind.
DEFAULT_ENV_COUNT = 3
# A duet's test is paired (n - 1 degrees of freedom): at 8
# rounds a one-thread program whose paired SD is 2% gets an interval of
# about ±1.7%, and 7-Zip's 11 s samples fit in about 4 minutes here.
ROUNDS = 8
# ... and a short command gets as many more as fit in this long after its
# warm-up: sysbench's 1.7 s samples get about 40 rounds (study.measure_for)
MEASURE_FOR = "3m"


def default_envs() -> tuple[str, ...]:
    from isobench.envs.kinds import presets

    return tuple(presets())[:DEFAULT_ENV_COUNT]


def table_name(argv: tuple[str, ...]) -> str:
    """The workload's name in the study: the program's base name as a study
    name (lower-case letters, digits, '-'; "cmd-" before one that starts
    with a digit), "program" if nothing is left."""
    base = re.sub(r"[^a-z0-9-]+", "-", Path(argv[0]).name.lower()).strip("-")
    if base[:1].isdigit():
        base = f"cmd-{base}"
    return base[:NAME_MAX].rstrip("-") or "program"


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "busybox"})


def study_name(argv: tuple[str, ...]) -> str:
    """try-SLUG-HASH: the programs the command runs (a shell's -c script's
    too: the first word of each pipeline stage), path-safe and short, and 6
    hex digits of the whole argv's SHA-256, so two commands never share a
    study (issue 55: every `sh -c` pipeline was "try-sh", and a bzip2 and a
    gzip pipeline compared as one study)."""
    words = [argv[0]]
    if Path(argv[0]).name in SHELLS and "-c" in argv[1:-1]:
        stages = re.split(r"[|;&()\n]+", argv[argv.index("-c") + 1])
        words += [next((w for w in stage.split() if "=" not in w), "") for stage in stages]
    names = [re.sub(r"[^a-z0-9]+", "-", Path(w).name.lower()).strip("-") for w in words]
    slug = "-".join(dict.fromkeys(n for n in names if n)) or "program"
    digest = hashlib.sha256(json.dumps(list(argv)).encode()).hexdigest()[:6]
    return f"{f'try-{slug}'[: NAME_MAX - 7].rstrip('-')}-{digest}"


def study_text(
    argv: tuple[str, ...],
    envs: tuple[str, ...],
    rounds: int,
    warmup: int,
    repeat: int,
    timeout_s: float | None,
    budget: str | None,
    packages: tuple[str, ...] = (),
    schedule: str = "sequential",
    duet: bool | None = None,
    measure_for: str | None = None,
) -> str:
    """The study `try` runs, as the TOML `--save` writes (``duet``: the
    table's call once a run has made it; None leaves it to "auto")."""
    import tomli_w

    name = table_name(argv)
    study: dict = {
        "name": study_name(argv),
        "description": f"isobench try -- {shlex.join(argv)}"[:200],
        "repetitions": rounds,
        "warmup": warmup,
        "baseline": envs[0],
    }
    if schedule != "sequential":
        study["schedule"] = schedule
    if budget is not None:
        study["budget"] = budget
    if measure_for is not None:
        study["measure_for"] = measure_for
    table: dict = {"command": list(argv)}
    if repeat != 1:
        table["repeat"] = repeat
    if timeout_s is not None:
        table["timeout_s"] = timeout_s
    if packages:
        table["packages"] = list(packages)
    if duet is not None and schedule == "duet":
        table["duet"] = duet
    doc = {"study": study, "environments": {e: {} for e in envs}, "workloads": {name: table}}
    return (
        "# Made by `isobench try`: edit it (setup, files, metrics read from the output: "
        "docs/workloads/command.md) and run it with `isobench run`.\n" + tomli_w.dumps(doc)
    )


@click.command(
    "try", cls=WaitCommand, context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option(
    "--env",
    "envs",
    multiple=True,
    metavar="NAME",
    help="An environment (a preset: `isobench envs`); repeat for more; the first is the baseline. "
    f"Default: the first {DEFAULT_ENV_COUNT} presets (the host, then Docker with NAT and with "
    "the host's network).",
)
@click.option(
    "--rounds",
    type=click.IntRange(2, 1000),
    help="Measured rounds (each runs the command once in every environment). Default: as many as fit in "
    f"{MEASURE_FOR} at the warm-up's pace, at least {ROUNDS}.",
)
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(0, 100), help="Rounds not measured.")
@click.option(
    "--repeat",
    default=1,
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Runs of the command inside one sample (a short command: raise it).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1, max=86_400),
    metavar="SECONDS",
    help="Longest one sample may take (default 600).",
)
@click.option(
    "--package",
    "packages",
    multiple=True,
    metavar="NAME",
    help="A Debian package the command runs; repeat for more. Its version is compared everywhere, and one "
    "isobench does not install is added to the image and, once you agree (--allow-packages), to the host "
    "(docs/workloads/command.md#host-packages).",
)
@click.option(
    "--allow-packages",
    is_flag=True,
    help="Install the --package ones this host lacks (for the native environment) without asking; without it "
    "try shows apt's plan and asks on a terminal, and elsewhere refuses. A plan that removes a package or "
    "changes one isobench runs on is refused either way.",
)
@click.option(
    "--schedule",
    type=click.Choice(["sequential", "duet"]),
    help="duet (the default where the host has two usable CPUs): each environment's sample runs at the same "
    "time as the baseline's, each on its own CPUs, so the host's moods hit both; the command runs so only "
    "when its warm-up, alone, used at most a side's CPUs and little disk (docs/workloads/command.md#duet). "
    "sequential: one sample at a time.",
)
@click.option("--budget", metavar="DURATION", help="Spend about this long (30m): rounds go where they resolve.")
@click.option(
    "--save",
    "save_path",
    type=click.Path(dir_okay=False),
    help="Write the study it runs to this file, to edit and `isobench run` again.",
)
@STORE_OPTION
@table_format_option("try", json_alias=False)
@output_option("Write the answer to FILE instead of stdout (- for stdout).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
@wait_option
def try_cmd(
    command: tuple[str, ...],
    envs: tuple[str, ...],
    rounds: int | None,
    warmup: int,
    repeat: int,
    timeout_s: float | None,
    packages: tuple[str, ...],
    allow_packages: bool,
    schedule: str | None,
    budget: str | None,
    save_path: str | None,
    store_path: str,
    fmt: str,
    output: str | None,
    progress: bool | None,
    wait_s: float | None,
) -> None:
    """Measure COMMAND natively and in Docker, and answer what isolation costs it.

    \b
      isobench try -- sysbench cpu --cpu-max-prime=5000 --events=2000 run
      isobench try --env native --env docker-nat --save mine.toml -- make -j1
      isobench try --package p7zip-full -- 7z b -mmt1

    The command runs as given (an argv, no shell) in every environment with
    the system PATH; its wall time is the primary metric, with user and
    system CPU seconds and peak memory. The run is stored like any other
    (`isobench report` shows all of it); `--save` writes the study so you
    can add files, setup and metrics read from the output. --format json
    prints the run as `isobench report RUN_ID --format json` does (the same
    document, docs/output.md).
    """
    from isobench.cli.execution import execute
    from isobench.envs.kinds import presets
    from isobench.study import StudyError, parse_study, with_budget

    envs = envs or default_envs()
    if len(set(envs)) != len(envs):
        _fail(f"--env {next(e for e in envs if envs.count(e) > 1)}: given twice")
    unknown = [e for e in envs if e not in presets()]
    if unknown:
        _fail(
            f"--env {unknown[0]}: not an environment preset; allowed: {', '.join(presets())} "
            "(other environments: --save a study, edit it, `isobench run` it)"
        )
    schedule = schedule_for(schedule)
    fit = MEASURE_FOR if rounds is None and budget is None else None
    rounds = rounds or ROUNDS
    text = study_text(command, envs, rounds, warmup, repeat, timeout_s, None, packages, schedule, None, fit)
    label = save_path or "isobench try"
    try:
        study = parse_study(text, label)
        if budget is not None:
            study = with_budget(study, budget)
    except StudyError as exc:
        _fail(str(exc))
    if save_path is not None:
        with writing(save_path, "--save"):
            Path(save_path).write_text(
                study_text(command, envs, rounds, warmup, repeat, timeout_s, budget, packages, schedule, None, fit)
            )
        written_here(save_path)  # its rewrite below, with the duet call, replaces it
        err_console.print(f"study written to {sink.terminal(save_path)}", highlight=False, markup=False)
    store = _open_store(store_path, create=True)
    if not to_stdout(output):
        check_output(output, "-o")  # before the measuring, not after
    # there is no table to set same_program in until --save writes one
    where = f" (in {save_path})" if save_path else " (--save STUDY.toml writes the study to set it in)"
    run_id = execute(
        study,
        store,
        progress,
        budget_label="--budget",
        where_to_allow=where,
        allow_packages=allow_packages,
        packages_label="--package",
        wait_s=wait_s,
    )
    call = decided(store.run_facts(run_id))
    if save_path is not None and call is not None:  # the call this run made, so a rerun need not make it
        with writing(save_path, "--save"):
            Path(save_path).write_text(
                study_text(command, envs, rounds, warmup, repeat, timeout_s, budget, packages, schedule, call, fit)
            )
        err_console.print(
            f"study written to {save_path} with duet = {str(call).lower()}", highlight=False, markup=False
        )
    if fmt == "json":
        from isobench.cli.reporting import report_document

        emit(report_document(store.load_run(run_id)), output)
        return
    terminal_to(output, lambda out: print_answer(store.load_run(run_id), out), console)


def schedule_for(asked: str | None) -> str:
    """--schedule as given, or duet where the host has two usable CPUs (one a side)."""
    from isobench.envs.pinning import usable_cpus
    from isobench.host.samplecgroup import cpus_limited_by, duet_cpus_remedy

    cpus = len(usable_cpus())
    if asked == "duet" and cpus < 2:
        _fail(
            f"--schedule duet: a duet needs two usable host CPUs (one a side), this process may use {cpus}"
            f"{duet_cpus_remedy(cpus_limited_by())}; or use --schedule sequential"
        )
    return asked or ("duet" if cpus >= 2 else "sequential")


def decided(facts: dict) -> bool | None:
    """The duet call a try run made for its one table (None: none made)."""
    calls = (facts.get("schedule") or {}).get("calls") or {}
    found = [c.get("duet") for c in calls.values() if isinstance(c, dict) and isinstance(c.get("duet"), bool)]
    return found[0] if found else None


def print_answer(run, out) -> None:
    """Table I and the answer, as `isobench report` draws them in a terminal,
    then where the rest is (folded as validate's lines: the run id whole)."""
    from rich.text import Text

    from isobench.report.blocks import Results
    from isobench.report.section import TERMINAL, ReportContext
    from isobench.report.sections import sections_for
    from isobench.report.terminal import draw

    ctx = ReportContext(run)
    for section, blocks in sections_for(ctx, TERMINAL):
        table = any(isinstance(b, Results) for b in blocks)
        if not (table or section.lead):
            continue
        out.print()
        if not table:
            out.print(Text(section.heading(ctx), style="bold underline"))
        for block in blocks:
            draw(out, block)
    out.print()
    schedule = (run.host_facts.get("schedule") or {}) if isinstance(run.host_facts, dict) else {}
    if (
        isinstance(schedule, dict) and schedule.get("name") == "sequential"
    ):  # a duet's is said in the answer, with its call
        fold(["Schedule: one sample at a time (--schedule sequential)."], out)
    fold([f"stored as run {run.run_id}: `isobench report {run.run_id}` shows the whole report"], out)
