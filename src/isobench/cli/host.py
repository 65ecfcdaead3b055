"""`isobench envs`, `doctor`, `images` and `clean`: what this host can run,
what biases it, the image, and what a crashed run left. Parsing and printing only."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from isobench.cli.common import console, err_console, fold
from isobench.cli.common import fail as _fail
from isobench.cli.output import document, emit, output_option, table_format_option, terminal_to
from isobench.core.numbers import plural


@click.command()
@table_format_option("envs")
@output_option()
def envs(fmt: str, output: str | None) -> None:
    """What this host can run, and why not.

    --json, the old spelling of --format json, works for one more release."""
    from isobench.envs.kinds import probe_all

    rows = probe_all()
    if fmt == "json":
        emit(
            document(
                "envs",
                {"environments": [{"name": r.name, "available": r.available, "details": r.details} for r in rows]},
            ),
            output,
        )
        return
    table = Table("environment", "available", "details")
    for row in rows:
        table.add_row(escape(row.name), "[green]yes" if row.available else "[red]no", escape(row.details))
    terminal_to(output, lambda out: out.print(table), console)


@click.command()
@table_format_option("doctor")
@output_option()
@click.option(
    "--fresh", is_flag=True, help="Measure the host's noise again even when the last pilot is under an hour old."
)
def doctor(fmt: str, output: str | None, fresh: bool) -> None:
    """Host settings that bias results, each with how to fix it, and the
    host's noise: a pilot of about 30 s (fixed CPU and I/O kernels as A/A
    pairs, and the CPU one as a duet, both at once on their own CPUs) whose
    paired SD per sample says what a study can resolve here,
    reused for an hour (docs/statistics.md#host-noise).

    The same findings are stored with every run and shown in its report.
    Exits 0 whatever it finds: a warning is advice, not an error.
    --json, the old spelling of --format json, works for one more release.
    """
    import time

    from isobench.checks.doctor import findings_as_facts, judge, read_host
    from isobench.checks.noisepilot import ABOUT_S, as_finding, without_a_run

    findings = judge(read_host())  # before the pilot, whose load would show in the load average
    pilot, note = without_a_run(
        fresh,
        on_measure=lambda: err_console.print(
            f"measuring the host's noise (about {ABOUT_S} s; reused for an hour)", highlight=False, markup=False
        ),
    )
    findings.append(as_finding(pilot, note, time.time()))
    if fmt == "json":
        facts = findings_as_facts(findings)
        if pilot is not None:
            facts[-1]["pilot"] = pilot.as_fact(time.time())
        emit(document("doctor", {"findings": facts}), output)
        return
    colour = {"ok": "green", "warn": "yellow", "info": "blue"}
    table = Table("check", "status", "value", "how to fix")
    for f in findings:
        table.add_row(escape(f.check), f"[{colour[f.status]}]{f.status}", escape(str(f.value)), escape(f.fix))
    terminal_to(output, lambda out: out.print(table), console)


@click.group()
def images() -> None:
    """The Debian image every environment runs (debootstrap → Docker image)."""


@images.command("build")
@click.option("--force", is_flag=True, help="Rebuild even when the cached image matches the recipe.")
def images_build(force: bool) -> None:
    """Build (or reuse) the image, cached by a hash of its recipe."""
    from isobench.core.dockerclient import engine
    from isobench.core.errors import EnvironmentError_
    from isobench.images import ensure_image

    try:
        tag = ensure_image(engine(), force=force, log=lambda line: console.print(line, highlight=False, markup=False))
    except EnvironmentError_ as exc:
        _fail(str(exc))
    console.print(f"image ready: {tag}", markup=False)


@click.command()
def clean() -> None:
    """Remove what a crashed run left: QEMU guests, servers, namespaces, links,
    iptables rules, containers, volumes and scratch files (only isobench's)."""
    from isobench.core.lock import AlreadyRunning, RunLock
    from isobench.run.clean import clean as do_clean

    lock = RunLock()
    try:
        lock.acquire("clean")  # never pull environments away from a live run
    except AlreadyRunning as exc:
        _fail(f"{exc}; clean would remove its environments: run it once that run has ended")
    with lock:
        removed = do_clean()
        from isobench.checks.health import forget_pending

        forget_pending()  # what failed teardowns left is gone with the rest
    print_removed(removed, console)


def print_removed(removed: list[str], out) -> None:
    """What clean removed, one item a line (an iptables rule folds, its
    continuation indented), then how many."""
    fold([f"removed {item}" for item in removed], out)
    out.print(f"{plural(len(removed), 'item')} removed" if removed else "nothing to clean")
