"""A stored run read back into the results model (RunData): its facts in
their declared shapes (store/shapes.py) with every string's control
characters escaped, its metrics, values, duet partners, failures, validity
notes, counters and where its time went. isobench.store.db's Store.load_run
calls it."""

from __future__ import annotations

import json
import sqlite3

from isobench.core.ids import printable
from isobench.results.counterscope import attributable
from isobench.results.model import ALL_METRICS, MetricKey, RunData
from isobench.store.shapes import EnvFacts, HostFacts, SampleExtra, stored, stored_names, stored_values
from isobench.store.shapes import printable_facts as _printable


def read_run(db: sqlite3.Connection, path: str, run_id: str, role_sql: str, primary_sql: str) -> RunData | None:
    """The run as the results model holds it, or None when the store at
    ``path`` has no such run. ``role_sql`` and ``primary_sql`` are what to
    select for a metric's role and primary flag: their columns, or constants
    in a store from before them."""
    r = db.execute(
        "SELECT run_id, study_name, started_at, finished_at, status, host_facts, study_text,"
        " study_hash, baseline, environments FROM runs WHERE run_id=?",
        (run_id,),
    ).fetchone()
    if r is None:
        return None
    where = f"{path}: run {run_id}"
    env_facts = {
        e: _printable(stored(EnvFacts, f, f"{where}: {e} facts"))
        for e, f in db.execute("SELECT env, facts FROM env_facts WHERE run_id=?", (run_id,))
    }
    keys = {}
    for w, c, m, u, hib, role, primary in db.execute(
        f"SELECT workload, ccase, metric, unit, higher_is_better, {role_sql}, {primary_sql}"
        " FROM metric_defs WHERE run_id=? ORDER BY ordinal",
        (run_id,),
    ):
        keys[(w, c, m)] = MetricKey(w, c, m, u, bool(hib), role, bool(primary))
    run = RunData(
        run_id=r[0],
        study_name=r[1],
        started_at=r[2],
        finished_at=r[3],
        status=r[4],
        host_facts=_printable(stored(HostFacts, r[5], f"{where}: host facts")),
        study_text=r[6],
        study_hash=r[7],
        baseline=r[8],
        environments=stored_names(r[9], where),
        env_facts=env_facts,
        metrics=list(keys.values()),
    )
    for id_, env, w, c, round_, status, error, vals, extra in db.execute(
        "SELECT id, env, workload, ccase, round, status, error, vals, extra FROM samples"
        " WHERE run_id=? AND warmup=0 ORDER BY id",
        (run_id,),
    ):
        if status != "ok":
            run.failures.setdefault((w, c, env), []).append(printable(error or status))
            continue
        if '"validity"' in extra:  # cheap test first: most samples have none
            notes_of = stored(SampleExtra, extra, f"{where}: samples' extra").get("validity", {})
            if isinstance(notes_of, list):  # stored by the first version: the whole case
                notes_of = {ALL_METRICS: "; ".join(notes_of)}
            for metric, note in notes_of.items():
                note = printable(str(note))
                notes = run.validity.setdefault((w, c, env, metric), [])
                if note not in notes:
                    notes.append(note)
        partner, side = _duet_partner(extra)
        if partner is not None:
            _duet_start(run, env, extra)
        for metric, value in stored_values(vals, f"{where}: samples' values").items():
            key = keys.get((w, c, metric))
            if key is not None and value is not None:
                run.values.setdefault((key, env), []).append(float(value))
                run.rounds.setdefault((key, env), []).append(round_)
                run.sample_ids.setdefault((key, env), []).append(int(id_))
                if partner is not None:
                    index = len(run.values[(key, env)]) - 1
                    run.partners.setdefault((key, env), {})[index] = partner
                    run.sides.setdefault((key, env), {})[index] = side
    _load_counters(db, path, run)
    for w, env, wall, n in db.execute(
        "SELECT workload, env, SUM(COALESCE(wall_s, 0)), COUNT(*) FROM samples WHERE run_id=? GROUP BY workload, env",
        (run_id,),
    ):
        run.time_spent[(w, env)] = (float(wall), int(n))
    (warmups,) = db.execute(
        "SELECT COUNT(DISTINCT round) FROM samples WHERE run_id=? AND warmup=1", (run_id,)
    ).fetchone()
    run.warmup_rounds = int(warmups)
    (measured,) = db.execute(
        "SELECT COUNT(DISTINCT round) FROM samples WHERE run_id=? AND warmup=0", (run_id,)
    ).fetchone()
    run.rounds_run = int(measured) + run.warmup_rounds
    run.overlap_s = _duet_overlap(db, run_id)
    return run


def _duet_overlap(db: sqlite3.Connection, run_id: str) -> dict[str, float]:
    """Per workload, the seconds counted twice in the samples' summed wall
    time because a duet's two sides ran at once: each duet's walls less its
    longest (the one its slot took)."""
    slots: dict[tuple, list[float]] = {}
    for env, w, c, round_, warm, wall, extra in db.execute(
        "SELECT env, workload, ccase, round, warmup, COALESCE(wall_s, 0), extra FROM samples"
        " WHERE run_id=? AND extra LIKE '%\"duet\"%'",
        (run_id,),
    ):
        partner, _ = _duet_partner(extra or "")
        if partner is not None:
            slots.setdefault((w, c, round_, warm, frozenset((env, partner))), []).append(float(wall))
    out: dict[str, float] = {}
    for (w, *_), walls in slots.items():
        out[w] = out.get(w, 0.0) + sum(walls) - max(walls)
    return out


def _load_counters(db: sqlite3.Connection, path: str, run: RunData) -> None:
    """Per-sample counter deltas and units (extra["counters"], extra["units"])."""
    for env, w, c, round_, extra in db.execute(
        "SELECT env, workload, ccase, round, extra FROM samples"
        " WHERE run_id=? AND warmup=0 AND status='ok' ORDER BY id",
        (run.run_id,),
    ):
        detail = stored(SampleExtra, extra, f"{path}: run {run.run_id}: samples' extra")
        deltas, units = detail.get("counters"), detail.get("units")
        deltas = attributable(deltas, detail) if isinstance(deltas, dict) else None
        if deltas:
            run.counters.setdefault((w, c, env), []).append((round_, deltas, units or ["run", 1.0]))


def _duet_start(run: RunData, env: str, extra: str) -> None:
    """A duet sample's gate, the signed skew of its work's start and its
    swap period (run/duet.py)."""
    record = json.loads(extra).get("duet")
    skew = record.get("skew_s") if isinstance(record, dict) else None
    if isinstance(skew, (int, float)) and not isinstance(skew, bool):
        gate = record.get("gate")
        run.duet_starts.setdefault(env, []).append((printable(gate) if isinstance(gate, str) else "", float(skew)))
    period = record.get("rotate_s") if isinstance(record, dict) else None
    if isinstance(period, (int, float)) and not isinstance(period, bool) and 0 < period < 1e6:
        run.duet_periods.setdefault(env, []).append(float(period))


def measured_duets(db: sqlite3.Connection, run_id: str) -> set[tuple[str, str, str, int, str]]:
    """(env, workload, case, round, partner) of every ok sample a run took
    in a duet, for --resume: a duet's side is measured only beside that
    partner (a sample taken alone, or beside another, is not it)."""
    out: set[tuple[str, str, str, int, str]] = set()
    for env, w, c, r, extra in db.execute(
        "SELECT env, workload, ccase, round, extra FROM samples WHERE run_id=? AND status='ok'", (run_id,)
    ):
        try:
            partner = _duet_partner(extra or "")[0]
        except ValueError:  # not a record to read: no partner
            continue
        if partner is not None:
            out.add((env, w, c, r, partner))
    return out


def _duet_partner(extra: str) -> tuple[str | None, str]:
    """The other environment of the duet a sample ran in (run/duet.py) and
    the CPUs the sample had, or (None, "")."""
    if '"duet"' not in extra:  # cheap test first: sequential samples have none
        return None, ""
    detail = json.loads(extra)
    record = detail.get("duet") if isinstance(detail, dict) else None
    partner = record.get("partner") if isinstance(record, dict) else None
    side = record.get("cpus") if isinstance(record, dict) else None
    return (partner if isinstance(partner, str) else None), (side if isinstance(side, str) else "")
