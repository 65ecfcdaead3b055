"""`isobench reparse`: recompute stored runs' values from their samples'
raw outputs with the current parsers (isobench/reparse.py)."""

from __future__ import annotations

import click

from isobench.cli.common import STORE_OPTION, console
from isobench.cli.common import fail as _fail
from isobench.cli.common import open_store as _open_store
from isobench.cli.output import document, emit, table_format_option
from isobench.core.ids import printable


@click.command("reparse")
@click.argument("run_id", required=False, metavar="[RUN_ID]")
@click.option("--all", "all_runs", is_flag=True, help="Every run in the store, oldest first.")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@STORE_OPTION
@table_format_option("reparse", json_alias=False)
def reparse(run_id: str | None, all_runs: bool, dry_run: bool, store_path: str, fmt: str) -> None:
    """Recompute RUN_ID's values (an id or a unique prefix) from the raw outputs
    its samples kept, with the current parsers, and record the parser
    version per sample.

    Per metric: how many values changed, the largest change and why (the
    parser versions before and after); every other value is identical. A
    raw output the parser cannot read keeps its stored values and is named
    in one line (run, environment, workload, case, round, why). Each run is
    rewritten in one transaction (docs/reliability.md). Exit status 0, or 2
    when the store cannot be read or written.

    \b
    Examples:
      isobench reparse RUN_ID --dry-run  what would change
      isobench reparse --all            every stored run
    """
    from isobench.core.lock import live_run_ids
    from isobench.store.db import StoreError
    from isobench.store.reparse import reparse_run

    if (run_id is None) == (not all_runs):
        _fail("give a run id (or a unique prefix of one), or --all for every run (not both)")
    store = _open_store(store_path, reader=dry_run)
    try:
        run_ids = [r.run_id for r in store.list_runs()] if all_runs else [store.resolve(run_id)]
    except StoreError as exc:
        _fail(str(exc))
    if not run_ids:
        _fail(f"{store_path}: no runs stored yet; nothing to reparse")
    live = live_run_ids()
    done = []
    for i, rid in enumerate(run_ids):
        try:
            result = reparse_run(store, rid, write=not dry_run, live_runs=live)
        except StoreError as exc:
            _fail(f"run {rid}: {exc}; the run is as it was")
        done.append(result)
        if fmt == "terminal":
            _say(result, i, dry_run)
    if fmt == "json":
        emit(document("reparse", {"dry_run": dry_run, "runs": [as_data(r) for r in done]}), None)


def _say(result, i: int, dry_run: bool) -> None:
    for line in ([""] if i else []) + result.lines():
        console.print(printable(line), markup=False, highlight=False, soft_wrap=True)
    if dry_run and not result.skipped:
        console.print("  dry run: nothing written", markup=False, highlight=False)
    elif result.written:
        console.print("  written in one transaction", markup=False, highlight=False)


def as_data(r) -> dict:
    """One run's reparse as the isobench.reparse document holds it (docs/output.md)."""
    return {
        "run_id": r.run_id,
        "study": r.study_name or None,
        "skipped": r.skipped or None,
        "reparsed": r.reparsed,
        "left_alone": r.left_samples,
        "identical": r.identical,
        "changed": r.changed,
        "kept": r.kept,
        "detail_changed": r.detail_changed,
        "written": r.written,
        "parser_versions": {w: r.versions(w) for w in sorted(r.after)},
        "metrics": [
            {
                "workload": c.workload,
                "metric": c.metric,
                "compared": c.compared,
                "changed": c.changed,
                "added": c.added,
                "largest": list(c.largest) if c.largest else None,
            }
            for c in sorted(r.changes.values(), key=lambda c: (c.workload, c.metric))
        ],
        "unreadable": [
            {"env": u.env, "workload": u.workload, "case": u.case, "round": u.round, "why": u.why} for u in r.unreadable
        ],
        "lines": r.lines(),
    }
