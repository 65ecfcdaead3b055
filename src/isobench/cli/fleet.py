"""`isobench fleet run|clean`: parsing and printing; the work is in
controller.py (Ansible) and record.py (the store)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from isobench.cli.common import STORE_OPTION, console, err_console, open_store, shipped_or_path
from isobench.cli.common import fail as _fail
from isobench.cli.output import Duration, document, emit, output_option, table_format_option
from isobench.core import sink
from isobench.core.ids import printable


def _note(message: str) -> None:
    err_console.print(sink.markup(message), highlight=False, soft_wrap=True)  # one line per host, unwrapped


@click.group()
def fleet() -> None:
    """Run a study on many hosts through Ansible (docs/fleet.md)."""


@fleet.command("run")
@click.argument("study_file", type=click.Path(dir_okay=False), required=False, callback=shipped_or_path)
@click.option("--inventory", "-i", type=click.Path(dir_okay=False), help="Ansible inventory (INI or YAML).")
@click.option("--limit", "-l", metavar="PATTERN", help="Only these hosts or groups (comma-separated, shell patterns).")
@click.option(
    "--forks", "-f", type=click.IntRange(min=1), default=5, show_default=True, help="Hosts worked on at the same time."
)
@click.option(
    "--setup/--no-setup",
    default=True,
    show_default=True,
    help="Run host setup (packages, Docker Engine, the image); --no-setup for prepared hosts.",
)
@click.option(
    "--timeout",
    type=Duration(min_s=10),
    default="4h",
    show_default=True,
    metavar="DURATION",
    help="Per host: give up on a study still running after this long (4h, 30m, 90s or plain seconds).",
)
@click.option(
    "--poll",
    type=Duration(min_s=1),
    default="10s",
    show_default=True,
    metavar="DURATION",
    help="Time between polls of each host (10s, 1m or plain seconds).",
)
@click.option("--resume", "resume_id", metavar="FLEET_ID", help="Retry only the hosts of FLEET_ID that did not finish.")
@click.option(
    "--allow-packages",
    is_flag=True,
    help="Install the study's packages on each host (a native environment) without asking, as "
    "`run --allow-packages`; a plan that removes a package is still refused. Give it again with --resume.",
)
@STORE_OPTION
@table_format_option("fleet run", json_alias=False)
def fleet_run(
    study_file, inventory, limit, forks, setup, timeout, poll, resume_id, allow_packages, store_path, fmt
) -> None:
    """Run STUDY_FILE on every host of --inventory; import each host's run."""
    from isobench.core.ids import BadIdentifier, check_host, check_run_id
    from isobench.fleet import record
    from isobench.fleet.controller import FleetError, new_fleet_id, run_fleet
    from isobench.fleet.inventory import InventoryError, hosts_of, inventory_json
    from isobench.run.plan import new_run_id
    from isobench.study import StudyError, load_study

    store = open_store(store_path, create=True)
    if resume_id:
        previous = record.hosts(store, resume_id)
        if not previous:
            _fail(f"{store_path}: no fleet {resume_id!r}; `isobench fleet list` lists them")
        todo = [r for r in previous if r.status != record.COMPLETE]
        if not todo:
            if fmt == "json":
                emit(_run_document(resume_id, previous[0].study_path, previous, "nothing to resume"), None)
            else:
                console.print(f"fleet {resume_id}: every host is complete; nothing to resume", highlight=False)
            return
        study_file, inventory = study_file or previous[0].study_path, inventory or previous[0].inventory
        hosts, runs, fleet_id = [r.host for r in todo], {r.host: r.run_id for r in todo}, resume_id
    elif not study_file or not inventory:
        _fail("give a study file and --inventory INVENTORY (or --resume FLEET_ID)")
    try:
        study = load_study(study_file)
        if not resume_id:
            hosts = hosts_of(inventory_json(inventory), limit)
            if not hosts:
                _fail(
                    f"{inventory}: no hosts"
                    + (f" match --limit {limit}" if limit else "")
                    + "; list hosts in the inventory (docs/fleet.md has examples)"
                )
            for h in hosts:  # host names become run ids, paths and Ansible's --limit: refused before it runs
                check_host(h, f"{inventory}: host")
            fleet_id = new_fleet_id(study.meta.name)
            runs = {h: check_run_id(f"{new_run_id(study)}-{h}", f"{inventory}: host {h}") for h in hosts}
            study_file, inventory = str(Path(study_file).resolve()), str(Path(inventory).resolve())
            for h in hosts:  # recorded before anything runs: --resume works even after a controller crash
                record.save(store, record.HostRecord(fleet_id, h, runs[h], record.PENDING, "", study_file, inventory))
        for h in hosts:  # again for --resume: the records come from a store file
            check_host(h, f"fleet {fleet_id}: host")
            check_run_id(runs[h], f"fleet {fleet_id}: host {h}'s run")
        _note(f"fleet {fleet_id}: {study.meta.name} on {len(hosts)} host(s): {', '.join(hosts)}")
        outcomes = run_fleet(
            store, fleet_id, study_file, inventory, hosts, runs, forks, setup, timeout, poll, _note, allow_packages
        )
    except (StudyError, InventoryError, FleetError, BadIdentifier) as exc:
        _fail(str(exc))
    bad = [o for o in outcomes if o.status != record.COMPLETE]
    after = f"`isobench fleet run --resume {fleet_id}` retries the rest" if bad else f"`isobench report {fleet_id}`"
    if fmt == "json":
        emit(_run_document(fleet_id, study.meta.name, outcomes, after), None)
    else:
        _say_outcomes(fleet_id, outcomes, len(bad), after)
    sys.exit(1 if bad else 0)


def _run_document(fleet_id: str, study: str, outcomes, after: str) -> str:
    from isobench.fleet.record import COMPLETE

    hosts = [{"host": o.host, "run_id": o.run_id, "status": o.status, "detail": o.detail or None} for o in outcomes]
    complete = sum(o.status == COMPLETE for o in outcomes)
    return document(
        "fleet-run", {"fleet_id": fleet_id, "study": study, "hosts": hosts, "complete": complete, "next": after}
    )


def _say_outcomes(fleet_id: str, outcomes, bad: int, after: str) -> None:
    from isobench.fleet import record

    for o in outcomes:
        mark = "[green]ok[/]" if o.status == record.COMPLETE else f"[red]{o.status}[/]"
        console.print(
            f"{escape(o.host)}: {mark} run {escape(o.run_id)}" + (f": {escape(o.detail)}" if o.detail else ""),
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"fleet {fleet_id}: {len(outcomes) - bad} of {len(outcomes)} host(s) complete; {after}",
        highlight=False,
        soft_wrap=True,
    )


@fleet.command("list")
@STORE_OPTION
@table_format_option("fleet list")
@output_option()
def fleet_list(store_path, fmt, output) -> None:
    """Fleets in the store, host by host.

    --json, the old spelling of --format json, works for one more release."""
    store = open_store(store_path, reader=True)
    rows = store.db.execute(
        "SELECT fleet_id, host, run_id, status, detail FROM fleet_hosts ORDER BY fleet_id, host"
    ).fetchall()
    if fmt == "json":
        emit(
            document(
                "fleet-list",
                {
                    "hosts": [
                        {"fleet_id": f, "host": h, "run_id": r, "status": st, "detail": d} for f, h, r, st, d in rows
                    ]
                },
            ),
            output,
        )
        return
    if not rows:  # a line, never a blank one: an empty store is an answer too
        emit("no fleets stored yet; `isobench fleet run` starts one", output)
        return
    emit(
        "".join(
            f"{printable(f)}  {printable(h)}  {printable(r)}  {st}  {printable(d or '')}\n" for f, h, r, st, d in rows
        ),
        output,
    )


@fleet.command("clean")
@click.option(
    "--inventory", "-i", required=True, type=click.Path(dir_okay=False), help="Ansible inventory (INI or YAML)."
)
@click.option("--limit", "-l", metavar="PATTERN", help="Only these hosts or groups (comma-separated, shell patterns).")
@click.option(
    "--forks", "-f", type=click.IntRange(min=1), default=5, show_default=True, help="Hosts worked on at the same time."
)
@table_format_option("fleet clean", json_alias=False)
def fleet_clean(inventory, limit, forks, fmt) -> None:
    """`isobench clean` on every host, then remove what the fleet installed there."""
    from isobench.fleet.controller import clean_fleet
    from isobench.fleet.inventory import InventoryError, hosts_of, inventory_json

    try:
        hosts = hosts_of(inventory_json(inventory), limit)
    except InventoryError as exc:
        _fail(str(exc))
    if not hosts:
        _fail(f"{inventory}: no hosts; nothing to clean")
    problems = clean_fleet(inventory, hosts, forks)
    if fmt == "json":
        rows = [
            {
                "host": h,
                "clean": h not in problems,
                "status": problems.get(h, ("clean", ""))[0],
                "cause": problems.get(h, ("", None))[1],
            }
            for h in hosts
        ]
        emit(document("fleet-clean", {"hosts": rows, "clean": not problems}), None)
        sys.exit(1 if problems else 0)
    for h in hosts:
        console.print(
            escape(f"{h}: " + (f"{problems[h][0]}: {problems[h][1]}" if h in problems else "clean")),
            highlight=False,
            soft_wrap=True,
        )
    sys.exit(1 if problems else 0)


def resolve_host_run(store, spec: str) -> str:
    """FLEET_ID/HOST names that host's run; anything else is a run id."""
    from isobench.fleet.record import host_run

    return host_run(store, spec) or spec


def is_fleet_id(store, spec: str | None) -> bool:
    from isobench.fleet.record import is_fleet

    return spec is not None and is_fleet(store, spec)


def fleet_report(store, fleet_id: str, fmt: str, output: str | None) -> None:
    """`isobench report FLEET_ID`: the complete hosts side by side."""
    from isobench.fleet import record
    from isobench.report.fleet import build_fleet
    from isobench.report.fleet_render import report_fleet

    recs = record.hosts(store, fleet_id)
    done = [r for r in recs if r.status == record.COMPLETE]
    for r in recs:
        if r.status != record.COMPLETE:
            _note(f"{r.host}: {r.status}" + (f" ({r.detail})" if r.detail else "") + "; not in this report")
    if not done:
        _fail(f"fleet {fleet_id}: no host has finished; `isobench fleet run --resume {fleet_id}`")
    rep = build_fleet(fleet_id, [(r.host, store.load_run(r.run_id)) for r in done])
    path = report_fleet(rep, fmt, output, console)
    if path:
        console.print(f"fleet report written to {escape(path)}", highlight=False)
