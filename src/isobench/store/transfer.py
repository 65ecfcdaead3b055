"""A whole run as one JSON document, and back: every store row of the run
(runs, env_facts, metric_defs, samples) column for column, so a run exported
on one host imports on another exactly as it was measured. `isobench
archive` / `isobench import` and the fleet use this one code path."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from isobench.core import tomlbound
from isobench.core.ids import BadIdentifier, check_name, check_run_id, shown
from isobench.core.instants import now_utc, utc
from isobench.core.metric import ROLES, value_problem
from isobench.store.rows import PROBE_ROUND
from isobench.store.shapes import NAME_LIMIT, EnvFacts, HostFacts, SampleExtra, ShapeError, check

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
    doc: dict[str, Any] = {"format": FORMAT, "run_id": run_id}
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


# A run export holds every raw output of a run; the largest studies write
# tens of MB. Anything beyond this is not an export, or not one to load whole.
EXPORT_CAP = 256 << 20
STATUSES = ("running", "complete", "incomplete", "interrupted", "failed")
SAMPLE_STATUSES = ("ok", "failed", "timeout")


def read_export(path) -> dict:
    from isobench.core.readbound import BoundedReadError, read_bounded

    try:
        doc = json.loads(read_bounded(path, EXPORT_CAP, "run export").decode("utf-8"))
    except BoundedReadError as exc:
        raise TransferError(str(exc)) from None
    except RecursionError:
        raise TransferError(f"{path}: nested too deeply to be a run export") from None
    except ValueError as exc:  # JSON or UTF-8
        raise TransferError(f"{path}: not a readable run export ({one_line(exc)})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not doc.get("runs"):
        raise TransferError(
            f"{path}: not an isobench run export (expected format {FORMAT!r}; make one with `isobench archive RUN`)"
        )
    return doc


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


# -- what an export's values must be -----------------------------------------------


class _Bad(ValueError):
    pass


def _json_of(value, want: type, where: str):
    if not isinstance(value, str):
        raise _Bad(f"{where}: must be JSON text, not {type(value).__name__}")
    try:
        parsed = json.loads(value)
    except RecursionError:
        raise _Bad(f"{where}: nested too deeply") from None
    except ValueError as exc:
        raise _Bad(f"{where}: not valid JSON ({one_line(exc)})") from None
    if not isinstance(parsed, want):
        raise _Bad(f"{where}: must be a JSON {'object' if want is dict else 'array'}")
    return parsed


def _typed(row: dict, col: str, types: tuple, where: str, optional: bool = False):
    value = row.get(col)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, types):
        names = " or ".join(t.__name__ for t in types)
        raise _Bad(f"{where}.{col}: must be {names}, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _Bad(f"{where}.{col}: must be a finite number")
    return value


def _finite_values(vals: dict, where: str) -> None:
    for name, v in vals.items():
        if v is not None and value_problem(v):
            raise _Bad(
                f"{where}: {shown(name)} is {shown(v)}; a measured value is a finite number ({value_problem(v)})"
            )


# A study makes at most 1000 measured rounds (and 100 warm-up): a cell with
# more is not a run's, and would cost the report's estimators.
MAX_ROUND = 1100
MAX_WALL_S = 1e7  # 115 days
INT64 = 2**63


def _round(number: int, row: dict, where: str) -> None:
    """A round a study makes: 0 to MAX_ROUND, or a duet probe's, kept as a warm-up."""
    if not (0 <= number <= MAX_ROUND or (number == PROBE_ROUND and row["warmup"])):
        raise _Bad(
            f"{where}.round: {number} is not a round a study makes "
            f"(0 to {MAX_ROUND}, or {PROBE_ROUND} for a duet probe's warm-up)"
        )


def _storable(value, where: str) -> None:
    """A value SQLite keeps as given: a 64-bit integer, a finite float, UTF-8 text."""
    if isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
        raise _Bad(f"{where}: {shown(value)} is beyond a 64-bit integer")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _Bad(f"{where}: not UTF-8 text ({exc.reason} at character {exc.start})") from None


def _bounded_name(row: dict, col: str, where: str) -> None:
    value = row.get(col)
    if value is None:
        return
    if not value.isprintable():
        raise _Bad(f"{where}.{col}: {shown(value)} holds control characters")
    if len(value) > NAME_LIMIT:
        raise _Bad(f"{where}.{col}: {len(value)} characters; a name has at most {NAME_LIMIT}")


def _instant(value: str, where: str, what: str) -> None:
    try:
        utc(value)
    except ValueError as exc:
        raise _Bad(f"{where}: {shown(value)} is not a time ({exc}); {what} are ISO 8601 with a UTC offset") from None


def _shape(model, value: dict, where: str) -> None:
    try:
        check(model, value, where)
    except ShapeError as exc:
        raise _Bad(str(exc)) from None


def check_export(doc: dict) -> None:
    """Every value of DOC where readers expect it: identifiers, types,
    finite numbers, JSON shapes (TransferError naming the field)."""
    try:
        _check(doc)
    except _Bad as exc:
        raise TransferError(f"run export: {exc}") from None
    except BadIdentifier as exc:
        raise TransferError(f"run export: {exc}") from None


def _check(doc: dict) -> None:
    for table in TABLES:
        rows = doc.get(table, [])
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise _Bad(f"{table}: must be a list of rows (objects)")
        for i, row in enumerate(rows):
            for col, value in row.items():
                _storable(value, f"runs.{col}" if table == "runs" else f"{table}[{i}].{col}")
    if len(doc["runs"]) != 1:
        raise _Bad(f"runs: one row expected, found {len(doc['runs'])}")
    run = doc["runs"][0]
    for col in ("study_name", "study_path", "study_text", "study_hash", "baseline", "started_at", "status"):
        _typed(run, col, (str,), "runs")
    _typed(run, "finished_at", (str,), "runs", optional=True)
    for col in ("started_at", "finished_at"):
        if run.get(col) is not None:
            _instant(run[col], f"runs.{col}", "a run's times")
    if run["status"] not in STATUSES:
        raise _Bad(f"runs.status: {shown(run['status'])} is not one of {', '.join(STATUSES)}")
    check_name(run["study_name"], "runs.study_name")
    try:
        tomlbound.guard(run["study_text"])  # every report reads it: bounded before tomllib sees it
    except tomlbound.TomlBoundError as exc:
        raise _Bad(f"runs.study_text: {exc}") from None
    envs = _json_of(run.get("environments"), list, "runs.environments")
    for env in envs:
        check_name(env, "runs.environments")
    if run["baseline"] not in envs:
        raise _Bad(f"runs.baseline: {shown(run['baseline'])} is not one of the run's environments")
    _shape(HostFacts, _json_of(run.get("host_facts"), dict, "runs.host_facts"), "runs.host_facts")
    for i, row in enumerate(doc.get("env_facts", [])):
        where = f"env_facts[{i}]"
        if row.get("env") not in envs:
            raise _Bad(f"{where}.env: {shown(row.get('env'))} is not one of the run's environments")
        _shape(EnvFacts, _json_of(row.get("facts"), dict, f"{where}.facts"), f"{where}.facts")
    seen = set()
    for i, row in enumerate(doc.get("metric_defs", [])):
        where = f"metric_defs[{i}]"
        for col in ("workload", "ccase", "metric", "unit", "role"):
            _typed(row, col, (str,), where, optional=col == "role")
            _bounded_name(row, col, where)
        _typed(row, "higher_is_better", (int,), where)
        _typed(row, "ordinal", (int,), where)
        if _typed(row, "is_primary", (int,), where, optional=True) not in (None, 0, 1):
            raise _Bad(f"{where}.is_primary: {shown(row['is_primary'])} is not 0 or 1")
        check_name(row["workload"], f"{where}.workload")
        if row.get("role") not in (None, *ROLES):
            raise _Bad(f"{where}.role: {shown(row['role'])} is not a metric role")
        key = (row["workload"], row["ccase"], row["metric"])
        if key in seen:
            raise _Bad(f"{where}: {'/'.join(key)} is defined twice")
        seen.add(key)
    rounds: dict[tuple, int] = {}
    for i, row in enumerate(doc.get("samples", [])):
        where = f"samples[{i}]"
        if row.get("env") not in envs:
            raise _Bad(f"{where}.env: {shown(row.get('env'))} is not one of the run's environments")
        for col in ("workload", "ccase", "status", "raw", "started_at"):
            _typed(row, col, (str,), where)
        for col in ("workload", "ccase"):
            _bounded_name(row, col, where)
        _instant(row["started_at"], f"{where}.started_at", "samples' start times")
        _typed(row, "error", (str,), where, optional=True)
        _typed(row, "warmup", (int,), where)
        _round(_typed(row, "round", (int,), where), row, where)
        if not 0 <= _typed(row, "wall_s", (int, float), where) <= MAX_WALL_S:
            raise _Bad(f"{where}.wall_s: {row['wall_s']!r} is not a duration (0 to {MAX_WALL_S:g} s)")
        version = _typed(row, "parser_version", (int,), where, optional=True)  # absent: exported before versions
        if version is not None and version < 1:
            raise _Bad(f"{where}.parser_version: {version} is not a parser version (1 or more)")
        if row["status"] not in SAMPLE_STATUSES:
            raise _Bad(f"{where}.status: {shown(row['status'])} is not one of {', '.join(SAMPLE_STATUSES)}")
        _finite_values(_json_of(row.get("vals"), dict, f"{where}.vals"), f"{where}.vals")
        _shape(SampleExtra, _json_of(row.get("extra"), dict, f"{where}.extra"), f"{where}.extra")
        if not row["warmup"] and row["status"] == "ok":
            cell = (row["env"], row["workload"], row["ccase"])
            rounds[cell] = rounds.get(cell, 0) + 1
            if rounds[cell] > MAX_ROUND:
                raise _Bad(
                    f"{where}: {'/'.join(map(shown, cell))} has more than {MAX_ROUND} measured rounds; "
                    "a study makes at most 1000"
                )


def import_run(store, doc: dict, rename: str | None = None, tag: dict | None = None) -> str:
    """Insert DOC's rows under its run id (or RENAME), in one transaction,
    after checking every value, and only if the run then reads back: either
    the whole run is stored and readable, or nothing is written. Refuses an
    id already in the store. TAG (fleet host name, facts) is merged into the
    run's host_facts under "fleet"."""
    import sqlite3

    from isobench.store.db import StoreError, store_problem

    try:
        run_id = (
            check_run_id(rename, "--rename")
            if rename is not None
            else check_run_id(doc.get("run_id"), "run export: run_id")
        )
    except BadIdentifier as exc:
        raise TransferError(str(exc)) from None
    check_export(doc)
    if store.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
        raise TransferError(
            f"{store.path}: run {run_id!r} already exists; import it under another id with --rename NEWID"
        )
    try:
        with store.db:
            for table in TABLES:
                known = {r[1] for r in store.db.execute(f"PRAGMA table_info({table})")}
                for row in doc.get(table, []):
                    unknown = set(row) - known - {"id"}
                    if unknown:  # names go into SQL: only the store's own columns pass
                        raise TransferError(
                            f"run export: table {table} has unknown column(s) "
                            f"{sorted(shown(u) for u in unknown)}; export it with the same "
                            "isobench version"
                        )
                    row = {**row, "run_id": run_id}
                    # stored as UTC instants: sorted as times, one form for every reader
                    row.update({c: utc(row[c]) for c in ("started_at", "finished_at") if row.get(c)})
                    if table == "runs":
                        row["host_facts"] = json.dumps(_marked(json.loads(row["host_facts"]), tag), sort_keys=True)
                    cols = [c for c in row if c != "id"]
                    store.db.execute(
                        f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [row[c] for c in cols],
                    )
            _readable(store, run_id)
    except sqlite3.IntegrityError as exc:
        if store.db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():  # a second import won
            raise TransferError(
                f"{store.path}: run {run_id!r} already exists; import it under another id with --rename NEWID"
            ) from None
        raise TransferError(f"run export: rows the store cannot hold together ({one_line(exc)})") from None
    except sqlite3.DatabaseError as exc:
        raise TransferError(f"import into {store_problem(store.path, exc)}") from None
    except StoreError as exc:
        raise TransferError(str(exc)) from None
    return run_id


def _marked(facts: dict, tag: dict | None) -> dict:
    """The run's host facts as imported: a fleet host's TAG under "fleet",
    and "imported" always (kept when the export already said so), so that
    `run --resume` knows its stored study is not this host's own."""
    out = dict(facts)
    if tag is not None:
        out["fleet"] = tag
    out["imported"] = out.get("imported") if isinstance(out.get("imported"), dict) else {"at": now_utc()}
    return out


def imported(facts: dict) -> bool:
    """Whether a run's host facts say it came in through `isobench import`."""
    return "imported" in facts


def _readable(store, run_id: str) -> None:
    """Inside the import's transaction: the run must read back and make its
    table, or the import is rolled back."""
    from isobench.results.table import build_table

    try:
        build_table(store.load_run(run_id))
    except (TransferError, sqlite3_errors()) as exc:
        raise exc
    except Exception as exc:  # noqa: BLE001 - any reader's failure refuses the import
        raise TransferError(
            f"run export: the run would not read back ({type(exc).__name__}: {one_line(exc)}); nothing imported"
        ) from None


def sqlite3_errors():
    import sqlite3

    return sqlite3.DatabaseError
