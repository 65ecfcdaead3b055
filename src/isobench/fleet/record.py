"""The fleet record in the store: fleet id -> host -> run id and status, so
`fleet run --resume` retries only the hosts that did not finish."""

from __future__ import annotations

from dataclasses import dataclass

from isobench.store.db import now_iso

PENDING, COMPLETE, FAILED, UNREACHABLE = "pending", "complete", "failed", "unreachable"


@dataclass(frozen=True)
class HostRecord:
    fleet_id: str
    host: str
    run_id: str
    status: str
    detail: str
    study_path: str
    inventory: str


def save(store, rec: HostRecord) -> None:
    with store.db:
        store.db.execute(
            "INSERT OR REPLACE INTO fleet_hosts VALUES (?,?,?,?,?,?,?,?)",
            (rec.fleet_id, rec.host, rec.run_id, rec.status, rec.detail, rec.study_path, rec.inventory, now_iso()),
        )


def hosts(store, fleet_id: str) -> list[HostRecord]:
    rows = store.db.execute(
        "SELECT fleet_id, host, run_id, status, detail, study_path, inventory FROM fleet_hosts"
        " WHERE fleet_id=? ORDER BY host",
        (fleet_id,),
    ).fetchall()
    return [HostRecord(*r) for r in rows]


def is_fleet(store, fleet_id: str) -> bool:
    return store.db.execute("SELECT 1 FROM fleet_hosts WHERE fleet_id=? LIMIT 1", (fleet_id,)).fetchone() is not None


def host_run(store, spec: str) -> str | None:
    """FLEET_ID/HOST -> that host's run id (None when SPEC is not one)."""
    if "/" not in spec:
        return None
    fleet_id, host = spec.split("/", 1)
    row = store.db.execute("SELECT run_id FROM fleet_hosts WHERE fleet_id=? AND host=?", (fleet_id, host)).fetchone()
    return row[0] if row else None
