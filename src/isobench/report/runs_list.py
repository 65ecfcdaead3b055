"""`isobench runs`: the stored runs as JSON rows and as a terminal table,
with each run's status as the listing says it, and each explain run's link
to the run it explains (pure)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from rich import box
from rich.table import Table

from isobench.core import sink

COLUMNS = ("run", "study", "started", "status", "environments", "samples", "warm-ups", "failed")
EXPLAINS = "explains"  # the column a store holding explain runs adds, after the status


def statuses(rows, live: Collection[str]) -> dict[str, str]:
    """Each run's status: complete (every cell has an ok sample), incomplete
    (some failed or were skipped: --resume), interrupted (Ctrl-C, SIGTERM, a
    full store), or died: left "running" by a SIGKILLed isobench, no live
    process owns it (core/lock.live_run_ids)."""
    return {r.run_id: "died" if r.status == "running" and r.run_id not in live else r.status for r in rows}


def runs_rows(rows, status: dict[str, str], links: Mapping[str, str] | None = None) -> list[dict]:
    """``links``: explain run -> the run it explains (store/links.explain_links);
    ``explains`` is null for every other run."""
    links = links or {}
    return [
        {
            "run_id": r.run_id,
            "study": r.study_name,
            "started_at": r.started_at,
            "finished_at": r.finished_at,
            "status": status[r.run_id],
            "explains": links.get(r.run_id),
            "environments": r.environments,
            "samples": r.samples_ok,
            "warmups": r.warmups,
            "failed": r.samples_failed,
        }
        for r in rows
    ]


def runs_table(rows, status: dict[str, str], links: Mapping[str, str] | None = None) -> Table:
    """Light rules and one space between columns: every column fits 80
    columns. A run id and a status are never cut (scripts and people copy
    them); what does not fit is taken from the study and the environments.
    An explain run names the run it explains in a column of its own, there
    only when the store holds one (a listing without explains stays as it was)."""
    links = {r.run_id: links[r.run_id] for r in rows if links and r.run_id in links}
    names = [*COLUMNS[:4], *([EXPLAINS] if links else []), *COLUMNS[4:]]
    table = Table(*names, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    envs, counts = names.index("environments"), names.index("samples")
    for i, column in enumerate(table.columns):
        column.no_wrap = i != envs  # the environments wrap, at spaces
        column.justify = "right" if i >= counts else "left"
    ids = {0: [r.run_id for r in rows], 3: [status[r.run_id] for r in rows]}
    if links:
        ids[4] = list(links.values())
    for i, values in ids.items():
        table.columns[i].min_width = max((len(v) for v in values), default=0)
    for column in table.columns[counts:]:  # the counts, whole
        column.min_width = len(str(column.header))
    table.columns[1].overflow = "fold"
    for r in rows:
        link = [links.get(r.run_id, "")] if links else []
        cells = (r.run_id, r.study_name, r.started_at, status[r.run_id], *link, ", ".join(r.environments))
        table.add_row(*map(sink.markup, (*cells, r.samples_ok, r.warmups, r.samples_failed)))
    return table
