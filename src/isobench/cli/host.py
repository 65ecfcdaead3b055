"""`isobench envs`, `doctor`, `images` and `clean`: what this host can run,
what biases it, the image, and what a crashed run left. Parsing and printing only."""

from __future__ import annotations

from collections.abc import Sequence

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
    """What this host can run, and why not; then the presets, the names a
    study's [environments.NAME] table or `try --env NAME` takes without a
    body, each with its kind and what it sets.

    --json, the old spelling of --format json, works for one more release."""
    from isobench.envs.kinds import presets, probe_all

    rows = probe_all()
    shorthands = [{"name": n, "kind": body["kind"], "sets": _sets(body)} for n, body in presets().items()]
    if fmt == "json":
        environments = [{"name": r.name, "available": r.available, "details": r.details} for r in rows]
        emit(document("envs", {"environments": environments, "presets": shorthands}), output)
        return
    table = Table("environment", "available", "details")
    for row in rows:
        table.add_row(escape(row.name), "[green]yes" if row.available else "[red]no", escape(row.details))
    named = Table(
        "preset", "kind", "sets", title=escape("presets: [environments.NAME] with no body, or try --env NAME")
    )
    for p in shorthands:
        named.add_row(
            escape(p["name"]),
            escape(p["kind"]),
            escape(", ".join(f"{k} = {_toml(v)}" for k, v in p["sets"].items()) or "-"),
        )
    terminal_to(output, lambda out: (out.print(table), out.print(named)), console)


def _sets(body: dict) -> dict:
    """A preset's fields besides its kind."""
    return {k: v for k, v in body.items() if k != "kind"}


def _toml(value) -> str:
    """A value as a study file spells it (true, not True)."""
    import json

    return value if isinstance(value, str) else json.dumps(value)


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
@table_format_option("images build", json_alias=False)
def images_build(force: bool, fmt: str) -> None:
    """Build (or reuse) the image, cached by a hash of its recipe."""
    from isobench.core.dockerclient import engine
    from isobench.core.errors import EnvironmentError_
    from isobench.images import ensure_image

    log = console if fmt == "terminal" else err_console  # the build's log never mixes into the document
    try:
        tag = ensure_image(engine(), force=force, log=lambda line: log.print(line, highlight=False, markup=False))
    except EnvironmentError_ as exc:
        _fail(str(exc))
    if fmt == "json":
        emit(document("images-build", {"tag": tag}), None)
    else:
        console.print(f"image ready: {tag}", markup=False)


@click.command()
@table_format_option("clean", json_alias=False)
def clean(fmt: str) -> None:
    """Remove what a crashed run left: QEMU guests, servers, namespaces, links,
    iptables rules, containers, volumes and scratch files (only isobench's),
    but nothing a live run owns (it is kept, and said)."""
    from isobench.core.owner import Keeper
    from isobench.run.clean import clean as do_clean

    # no run lock: a live run's things are kept item by item (their owner
    # still runs), so clean neither waits for a run nor refuses during one
    keeper = Keeper()
    removed = do_clean(keeper=keeper)
    from isobench.checks.health import forget_pending

    forget_pending()  # what failed teardowns left is gone with the rest
    if fmt == "json":
        emit(document("clean", {"removed": removed, "kept": keeper.kept}), None)
    else:
        print_removed(removed, console, keeper.kept)


def print_removed(removed: list[str], out, kept: Sequence[str] = ()) -> None:
    """What clean kept (a live run's) and removed, one item a line (an
    iptables rule folds, its continuation indented), then how many."""
    fold([f"kept {item}" for item in kept] + [f"removed {item}" for item in removed], out)
    if removed:
        out.print(f"{plural(len(removed), 'item')} removed")
    else:
        out.print("nothing removed" if kept else "nothing to clean")
