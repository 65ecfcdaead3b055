"""Starting a study for a command (`run`, `calibrate`): the host's checks,
the run lock, progress, the run itself and what Ctrl-C or SIGTERM leaves.
Commands call it; it prints only through the consoles and fails in one line."""

from __future__ import annotations

import os
import sys
import time
from typing import NoReturn

import click

from isobench.cli.common import err_console, fold
from isobench.cli.common import fail as _fail
from isobench.core.lifetime import held, interrupt_on_signals, interrupted

# --wait given bare: a run of the quick study takes about 30 minutes
WAIT_DEFAULT = "1h"


def wait_option(f):
    """--wait [DURATION] of the commands that take the run lock (run, try,
    calibrate): their command class is WaitCommand, so a bare --wait never
    takes the next word (a study file, a command) for its DURATION."""
    from isobench.cli.output import Duration

    return click.option(
        "--wait",
        "wait_s",
        type=Duration(min_s=1, max_s=24 * 3600),
        metavar="[DURATION]",
        help=f"Wait up to DURATION ({WAIT_DEFAULT} when given bare) for another run on this host to finish, "
        "saying which one holds the run lock; then one line, exit 2. Without it a held lock is exit 2 at once.",
    )(f)


def bare_wait(args: list[str], needs_value: set[str], interspersed: bool) -> list[str]:
    """ARGS with a --wait that no duration follows written --wait=WAIT_DEFAULT,
    up to ``--`` (and, where options end at the first argument, up to it:
    try's command). ``needs_value``: the options that take the next word. Pure."""
    from isobench.analysis.budget import duration_seconds

    def duration(word: str) -> bool:
        try:
            return duration_seconds(word) > 0
        except ValueError:
            return False

    out, i = list(args), 0
    while i < len(out) and out[i] != "--":
        word = out[i]
        if word == "--wait" and not (i + 1 < len(out) and duration(out[i + 1])):
            out[i] = f"--wait={WAIT_DEFAULT}"
        elif word == "--wait" or word in needs_value:
            i += 1  # its value
        elif not word.startswith("-") and not interspersed:
            break
        i += 1
    return out


class WaitCommand(click.Command):
    """A command with --wait [DURATION] (wait_option)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes = {n for p in self.params if isinstance(p, click.Option) and not p.is_flag for n in p.opts}
        return super().parse_args(ctx, bare_wait(args, takes, ctx.allow_interspersed_args))


def preflight_or_fail(study, allow_large: bool = False, budget_label: str = "study.budget"):
    """The study's size, after refusing (one line) what this host cannot run."""
    from isobench.checks.preflight import budget_problem, preflight, size_problems, study_size
    from isobench.host.hostinfo import host_info

    host = host_info()
    problems = preflight(study, host)
    size = study_size(study, host)
    short = budget_problem(study, size, budget_label)
    if short:
        _fail(short)
    if not allow_large:
        problems += size_problems(study, size, host)
    if problems:
        _fail(problems[0])
    return size


def resolution_text(study, size, pilot) -> list[str]:
    """What the planned rounds can resolve here, before anything starts
    (isobench.checks.resolution)."""
    return study_outlook(study, size, pilot)[0]


def study_outlook(study, size, pilot):
    """resolution_text's lines, and the figures behind them (checks.resolution.Outlook)."""
    from isobench.checks.resolution import compared_cells, outlook, resolution_lines
    from isobench.host.hostinfo import host_info

    compared = compared_cells(study, host_info())
    return resolution_lines(study, size, compared, pilot, time.time()), outlook(study, size, compared, pilot)


def say_resolution(study, size, pilot, out) -> None:
    """resolution_text on ``out`` (the plan `run` and `try` print before
    measuring), folded to its width as validate folds the same lines; user
    text (workload keys) escaped."""
    fold(resolution_text(study, size, pilot), out)


def host_noise_for_run():
    """The host's noise for a run: cached when under an hour old, else the
    pilot, measured now that the run holds the host (the lock) and before
    any environment starts, so it is neither disturbed by the study nor
    among its samples. Ctrl-C here leaves nothing to keep (execute says so)."""
    from isobench.checks.noisepilot import ABOUT_S, host_noise

    return host_noise(
        on_measure=lambda: err_console.print(
            f"measuring the host's noise first (about {ABOUT_S} s; reused for an hour)",
            highlight=False,
            markup=False,
        )
    )


def packages_or_fail(study, label: str, suffix: str = ""):
    """The study's packages on this host (run/hostpackages.py), or one line,
    exit 2, where apt refuses them or the plan removes a package or touches
    isobench's own. None: it installs none here."""
    from isobench.run.hostpackages import Refused, host_packages, refusal

    try:
        found = host_packages(study)
    except Refused as exc:
        _fail(f"{label}: {exc}")
    why = refusal(found) if found is not None else ""
    if why:
        _fail(f"{label}: {why}{suffix}")
    return found


def agree_to_packages(study, allow: bool, label: str) -> dict | None:
    """The study's packages on this host (run/hostpackages.py): refused in
    one line when apt's plan removes a package or touches isobench's own;
    else agreed to by --allow-packages or at a prompt, before anything
    changes. Returns the ``packages_plan`` fact (None: none installed here)."""
    import click

    from isobench.run.hostpackages import NOTHING

    found = packages_or_fail(study, label, "; nothing was changed")
    if found is None:
        return None
    if found.plan is None:
        _fail(
            f"{label}: cannot tell what installing {' '.join(found.missing)} would change on this host "
            f"({found.unknown}): install them by hand (apt-get install --no-install-recommends), then run again; "
            "nothing was changed"
        )
    if not found.changes:
        return found.fact(NOTHING)
    if allow:
        return found.fact("--allow-packages")
    if not sys.stdin.isatty():
        _fail(
            f"{label}: installing {' '.join(found.missing)} would change this host ({len(found.plan.install)} new, "
            f"{len(found.plan.upgrade)} upgraded packages: `isobench validate` lists them); give --allow-packages "
            "to install them (no terminal to ask); nothing was changed"
        )
    fold([found.line()], err_console)
    if not click.confirm("Install them on this host?", default=False, err=True):
        _fail(f"{label}: not installed (you said no); nothing was changed")
    return found.fact("prompt")


def keep_packages_plan(store, run_id: str, fact: dict) -> None:
    """The ``packages_plan`` fact, written as the run gets its id (before any
    environment starts). A resume keeps the first attempt's unless this
    attempt changes the host itself."""
    from isobench.run.hostpackages import NOTHING

    facts = store.run_facts(run_id)
    if "packages_plan" not in facts or fact.get("consent") != NOTHING:
        store.set_run_facts(run_id, {**facts, "packages_plan": fact})


def take_lock(study: str, wait_s: float | None):
    """The host's run lock (core/lock.py), waited for up to ``wait_s``
    (--wait), saying who holds it while waiting; else one line, exit 2
    (130 for Ctrl-C while waiting: nothing was started)."""
    from isobench.core.lock import AlreadyRunning, RunLock
    from isobench.core.numbers import fmt_duration

    began, lock = time.monotonic(), RunLock()

    def waiting(holder: str) -> None:
        say(f"waiting for the run lock (up to {fmt_duration(wait_s or 0)} in all): held by {holder}")

    try:
        lock.acquire(study, wait_s or 0.0, waiting)
    except AlreadyRunning as exc:
        _fail(f"{exc}" + ("" if wait_s else "; --wait DURATION waits for it"))
    except KeyboardInterrupt:
        say("interrupted while waiting for the run lock: nothing was started")
        sys.exit(130)
    if time.monotonic() - began >= 1:
        say(f"took the run lock after {fmt_duration(time.monotonic() - began)}")
    return lock


def say(line: str) -> None:
    err_console.print(line, highlight=False, markup=False)


def warmup_line(exc, study, packages_label: str) -> str:
    """A failed warm-up's one line (run/warmup.py), its package given as
    this command gives one: ``packages_label`` (try's --package), else in
    the workload's table of the study file."""
    key = exc.cell.split("/")[0]

    def give(package: str) -> str:
        if packages_label.startswith("--"):
            return f"give {packages_label} {package}"
        return f'add "{package}" to packages in [workloads.{key}] of {study.path}'

    if exc.kept is None:
        return exc.line(give, "and nothing was stored")
    return exc.line(give, f"what it measured is kept in run {exc.kept} (`isobench run --resume {exc.kept}` once fixed)")


def image_provider(bar):
    def provide() -> str:
        from isobench.core.dockerclient import engine
        from isobench.images import ensure_image

        return ensure_image(engine(), log=bar.note)

    return provide


def execute(
    study,
    store,
    progress: bool | None,
    allow_large: bool = False,
    resume_id: str | None = None,
    new_id: str | None = None,
    budget_label: str = "study.budget",
    where_to_allow: str = "",
    allow_packages: bool = False,
    packages_label: str = "",
    facts: dict | None = None,
    wait_s: float | None = None,
) -> str:
    """Run ``study`` into ``store`` and return its run id; every refusal and
    fault is one line (exit 2), Ctrl-C keeps what was measured (exit 130).
    ``where_to_allow`` follows the line refusing environments that run other
    programs (where same_program = false can be set, when not in the study).
    The study's packages on this host are agreed to first (agree_to_packages:
    ``allow_packages``, else a prompt), refusals naming ``packages_label``
    (default: the study's packages). ``facts`` join the run's host facts as
    it gets its id (an explain's link to the run it explains). ``wait_s``:
    how long to wait for the run lock (--wait; None: not at all)."""
    from isobench.core.errors import EnvironmentError_
    from isobench.run.prepare import ProgramsDiffer
    from isobench.run.progress import RichProgress
    from isobench.run.runner import run_study
    from isobench.run.warmup import WarmupFailed
    from isobench.store.db import StoreError

    size = preflight_or_fail(study, allow_large, budget_label)
    try:
        store.check_writable()
    except StoreError as exc:
        _fail(str(exc))
    if os.geteuid() != 0:
        _fail("isobench run needs root (Docker Engine, tmpfs, O_DIRECT files); run it with sudo")
    packages_plan = agree_to_packages(study, allow_packages, packages_label or f"{study.path}: packages")
    interrupt_on_signals()  # from here either signal is Ctrl-C: one line, exit 130
    lock, opened = take_lock(study.meta.name, wait_s), []
    try:
        pilot = host_noise_for_run()
        say_resolution(study, size, pilot, err_console)
        show = sys.stderr.isatty() if progress is None else progress

        def started(run_id: str) -> None:
            opened.append(run_id)
            lock.set_run_id(run_id)
            if facts:
                store.set_run_facts(run_id, {**store.run_facts(run_id), **facts})
            if packages_plan is not None:
                keep_packages_plan(store, run_id, packages_plan)

        bar = RichProgress(err_console, bar=show)
        with lock, bar:
            return run_study(
                study,
                store,
                bar,
                image_provider=image_provider(bar),
                resume=resume_id,
                on_run_id=started,
                run_id=new_id,
                host_noise=pilot.as_fact(time.time()),
            )
    except KeyboardInterrupt:
        _interrupted(lock, opened[0] if opened else None, resume_id)
    except WarmupFailed as exc:
        _fail(warmup_line(exc, study, packages_label))
    except EnvironmentError_ as exc:
        _fail(str(exc))
    except ProgramsDiffer as exc:
        _fail(f"{exc}{where_to_allow}")
    except Exception:
        if interrupted():  # an error the signal caused (an import cut short): the interrupt it was
            _interrupted(lock, opened[0] if opened else None, resume_id)
        raise


def _interrupted(lock, run_id: str | None, resume_id: str | None) -> NoReturn:
    """The one line an interrupted run ends with, true to how far it got
    (issue 55, 21): the run it opened, or the resumed run untouched, or
    nothing stored; then exit 130. No signal cuts it short."""
    from isobench.checks.health import pending_runs

    with held():
        lock.release()
        if run_id is not None:
            left = (
                "what teardown could not remove is said above (`isobench clean` removes it)"
                if run_id in pending_runs()
                else "containers and scratch files removed"
            )
            line = (
                f"interrupted: samples measured so far are kept in run {run_id} "
                f"(isobench report {run_id}; isobench run --resume {run_id} finishes it); {left}"
            )
        elif resume_id is not None:
            line = f"interrupted before run {resume_id} went on: it is as it was (isobench run --resume {resume_id})"
        else:
            line = "interrupted before the run started: nothing was stored"
        err_console.print(line, highlight=False, markup=False)
        sys.exit(130)
