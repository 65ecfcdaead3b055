"""A whole run as one JSON document, and back: every store row of the run
(runs, env_facts, metric_defs, samples) column for column, so a run exported
on one host imports on another exactly as it was measured. `isobench
export-run` / `isobench import` and the fleet use this one code path."""

from __future__ import annotations

import json
from pathlib import Path

FORMAT = "isobench-run/1"
TABLES = ("runs", "env_facts", "metric_defs", "samples")


class TransferError(RuntimeError):
    pass


def _rows(db, table: str, run_id: str) -> list[dict]:
    order = " ORDER BY id" if table == "samples" else ""
    cur = db.execute(f"SELECT * FROM {table} WHERE run_id=?{order}", (run_id,))
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur]
    if table == "samples":
        for r in rows:
            r.pop("id")  # the importing store numbers its own; order is kept
    return rows


def export_run(store, run_id: str) -> dict:
    """Every row of RUN_ID, by table."""
    doc = {"format": FORMAT, "run_id": run_id}
    for table in TABLES:
        doc[table] = _rows(store.db, table, run_id)
    if not doc["runs"]:
        raise TransferError(f"{store.path}: no run {run_id!r}; `isobench runs` lists them")
    return doc


def write_export(store, run_id: str, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(export_run(store, run_id), allow_nan=True), encoding="utf-8")
    return path


def read_export(path) -> dict:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TransferError(f"{path}: not a readable run export ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not doc.get("runs"):
        raise TransferError(f"{path}: not an isobench run export (expected format {FORMAT!r}; "
                            "make one with `isobench export-run RUN`)")
    return doc


def import_run(store, doc: dict, rename: str | None = None, tag: dict | None = None) -> str:
    """Insert DOC's rows under its run id (or RENAME), in one transaction.
    Refuses an id already in the store. TAG (fleet host name, facts) is
    merged into the run's host_facts under "fleet"."""
    run_id = rename or doc["run_id"]
    if store.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
        raise TransferError(f"{store.path}: run {run_id!r} already exists; import it under another id "
                            "with --rename NEWID")
    with store.db:
        for table in TABLES:
            known = {r[1] for r in store.db.execute(f"PRAGMA table_info({table})")}
            for row in doc.get(table, []):
                unknown = set(row) - known - {"id"}
                if unknown:  # names go into SQL: only the store's own columns pass
                    raise TransferError(f"run export: table {table} has unknown column(s) {sorted(unknown)}; "
                                        "export it with the same isobench version")
                row = {**row, "run_id": run_id}
                if table == "runs" and tag is not None:
                    facts = json.loads(row["host_facts"])
                    facts["fleet"] = tag
                    row["host_facts"] = json.dumps(facts, sort_keys=True)
                cols = [c for c in row if c != "id"]
                store.db.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                 [row[c] for c in cols])
    return run_id
