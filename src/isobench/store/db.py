"""SQLite store: every sample is committed the moment it is measured, so an
interrupted study loses nothing. Reports read runs back from here only.
The tables themselves, and what makes a file an isobench store, are
isobench.store.schema; reading a run back into RunData is
isobench.store.readback."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence

from isobench.core.instants import CANONICAL_GLOB, now_utc, order_by, utc
from isobench.core.metric import Metric
from isobench.results.model import RunData
from isobench.store.damage import damaged_line, identity, looks_like_sqlite, quick_check, still_there
from isobench.store.readback import read_run
from isobench.store.readonly import (
    UnreadableStore,
    connect_read_only,
    empty_missing_tables,
    on_read_only_fs,
    writable,
)
from isobench.store.rows import Rewrite, RunRow, Sample
from isobench.store.schema import ADDED_COLUMNS, OWN_TABLES, RUNS_COLUMNS, SCHEMA
from isobench.store.shapes import SampleExtra, stored, stored_instant, stored_names

now_iso = now_utc  # runs' times are UTC instants (core/instants.py)


class StoreError(RuntimeError):
    pass


class StoreWriteError(StoreError):
    """Writing a sample failed mid-run (disk full, read-only): the run stops."""


def store_problem(path: str, exc: sqlite3.DatabaseError) -> str:
    """sqlite's error as one line saying what to do."""
    text = str(exc)
    if "malformed" in text or ("not a database" in text and looks_like_sqlite(path)):
        return damaged_line(path, text)
    if "not a database" in text:
        return f"{path}: not an isobench store ({text}); give another --store path"
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        if on_read_only_fs(path):
            return (
                f"{path}: the store is on a read-only filesystem ({text}); give a --store path on a writable one "
                "(commands that only read, such as runs and report, read it where it is)"
            )
        return f"{path}: the store is not writable ({text}); fix its permissions or give another --store path"
    if "full" in text:
        return f"{path}: the store's disk is full ({text}); free space on it"
    return f"{path}: store error: {text}"


class Store:
    def __init__(self, path: str, create: bool = True, reader: bool = False):
        """Open the store at PATH; with create=False a missing file is refused
        rather than created. A reader (a command that only reads) opens a
        store this process may not write (its file, directory or filesystem)
        read-only, writing nothing to it (store/readonly.py); a writable one
        as every command does."""
        self.path = path
        self.read_only = reader and os.path.exists(path) and not writable(path)
        if not path:
            raise StoreError(
                "--store: empty path; give the store's file path (default /var/lib/isobench/results.sqlite)"
            )
        if os.path.isdir(path):
            raise StoreError(f"{path}: is a directory, not a store; give a file path with --store")
        if not create and not os.path.exists(path):
            raise StoreError(
                f"{path}: no such store; runs are stored by `isobench run` (check --store or ISOBENCH_STORE)"
            )
        try:
            self.db = self._connect()
            foreign = self._foreign_tables()
            if foreign:
                self.db.close()
                raise StoreError(
                    f"{path}: an SQLite file but not an isobench store ({foreign}); give another --store path"
                )
            if self.read_only:
                empty_missing_tables(self.db, SCHEMA)
            else:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(SCHEMA)
        except UnreadableStore as exc:
            raise StoreError(str(exc)) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(store_problem(path, exc)) from None
        except OSError as exc:
            raise StoreError(f"{path}: cannot open the store: {exc.strerror}; give a writable --store path") from None
        self._add_missing_columns()
        self._identity = identity(path)

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            return connect_read_only(self.path)
        if os.path.dirname(self.path):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
        return sqlite3.connect(self.path, timeout=30)

    def _foreign_tables(self) -> str:
        """What makes the file someone else's database ('' when it is an
        empty file or an isobench store): isobench never writes its schema
        into it, nor switches its journal."""
        names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not names:
            return ""
        other = sorted(names - OWN_TABLES)
        if other:
            return "it holds " + ", ".join(other[:3]) + (" ..." if len(other) > 3 else "")
        if "runs" not in names:
            return "it has no runs table"
        missing = RUNS_COLUMNS - self._columns("runs")
        if missing:
            return f"its runs table lacks {', '.join(sorted(missing))}"
        return ""

    def check_writable(self) -> None:
        """Before a run starts: the store must take writes (a read-only file,
        directory or filesystem would fail only after the first sample)."""
        try:
            with self.db:
                self.db.execute("CREATE TABLE IF NOT EXISTS isobench_probe (x)")
                self.db.execute("DROP TABLE isobench_probe")
        except sqlite3.DatabaseError as exc:
            raise StoreError(store_problem(self.path, exc)) from None
        problem = quick_check(self.db)
        if problem:  # a run on a damaged store would measure, then fail to store
            raise StoreError(damaged_line(self.path, problem))

    def close(self) -> None:
        self.db.close()

    def _add_missing_columns(self) -> None:
        for table, column, definition in ADDED_COLUMNS:
            if column in self._columns(table) or self.read_only:  # read-only: read as the store is
                continue
            try:
                with self.db:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
            except sqlite3.OperationalError:
                pass  # added by another process meanwhile, or a read-only file: read as before
        if not self.read_only:
            self._utc_times()
        defs = self._columns("metric_defs")
        self._role = "role" if "role" in defs else "''"
        self._primary = "is_primary" if "is_primary" in defs else "0"
        # a read-only store from before parser versions reads as "not recorded"
        self._version = "parser_version" if "parser_version" in self._columns("samples") else "NULL"

    def _utc_times(self) -> None:
        """Runs' and samples' times stored before they were UTC instants,
        converted once (a text that is no time is left: it sorts first,
        never the latest)."""
        for run_id, *times in self.db.execute(
            f"SELECT run_id, started_at, finished_at FROM runs WHERE NOT (started_at GLOB '{CANONICAL_GLOB}')"
        ).fetchall():
            try:
                with self.db:
                    self.db.execute(
                        "UPDATE runs SET started_at=?, finished_at=? WHERE run_id=?",
                        (*(utc(t) if t else t for t in times), run_id),
                    )
            except (ValueError, sqlite3.OperationalError):
                pass  # unreadable, or a read-only store: read as stored
        # and samples' (readers still normalise what could not be converted)
        for rowid, t in self.db.execute(
            f"SELECT id, started_at FROM samples WHERE NOT (started_at GLOB '{CANONICAL_GLOB}')"
        ).fetchall():
            try:
                with self.db:
                    self.db.execute("UPDATE samples SET started_at=? WHERE id=?", (utc(t), rowid))
            except (ValueError, TypeError, sqlite3.OperationalError):
                pass

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}

    # --- writing -------------------------------------------------------------

    def create_run(self, run_id: str, study, host_facts: dict) -> None:
        with self.db:
            self.db.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    study.meta.name,
                    study.path,
                    study.text,
                    study.hash,
                    study.meta.baseline,
                    json.dumps(list(study.environments)),
                    now_iso(),
                    None,
                    "running",
                    json.dumps(host_facts, sort_keys=True),
                ),
            )

    def set_env_facts(self, run_id: str, env: str, facts: dict) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO env_facts VALUES (?,?,?)",
                (run_id, env, json.dumps(facts, sort_keys=True, default=str)),
            )

    def define_metrics(self, run_id: str, workload: str, case: str, metrics) -> None:
        """The case's metrics (isobench.core.metric.Metric) with their roles and
        primary flags, as the run will report them."""
        with self.db:
            for m in metrics:
                ordinal = self.db.execute("SELECT COUNT(*) FROM metric_defs WHERE run_id=?", (run_id,)).fetchone()[0]
                self.db.execute(
                    "INSERT OR IGNORE INTO metric_defs (run_id, workload, ccase, metric, unit, higher_is_better,"
                    " ordinal, role, is_primary) VALUES (?,?,?,?,?,?,?,?,?)",
                    (run_id, workload, case, m.name, m.unit, int(m.higher_is_better), ordinal, m.role, int(m.primary)),
                )

    def add_sample(self, s: Sample) -> None:
        try:
            self._add_sample(s)
        except sqlite3.DatabaseError as exc:  # disk full, file gone read-only: earlier samples are committed
            raise StoreWriteError(store_problem(self.path, exc)) from None
        gone = still_there(self.path, self._identity)
        if gone:  # SQLite writes on into an unlinked file without a word: every sample would vanish
            raise StoreWriteError(gone)

    def _add_sample(self, s: Sample) -> None:
        with self.db:  # committed now: a crash after this loses nothing
            self.db.execute(
                "INSERT INTO samples (run_id, env, workload, ccase, round, warmup, status, error, vals,"
                " extra, raw, started_at, wall_s, parser_version) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    s.run_id,
                    s.env,
                    s.workload,
                    s.case,
                    s.round,
                    int(s.warmup),
                    s.status,
                    s.error,
                    json.dumps(s.values),
                    json.dumps(s.extra),
                    s.raw,
                    s.started_at,
                    s.wall_s,
                    s.parser_version,
                ),
            )

    def rewrite_samples(
        self, run_id: str, rewrites: list[Rewrite], metrics: Sequence[tuple[str, str, Metric]] = ()
    ) -> None:
        """isobench reparse: the samples' new values, extra and parser
        version, and the metrics a newer parser adds ((workload, case,
        Metric)), in one transaction: the run is rewritten whole or not at
        all."""
        try:
            with self.db:
                for r in rewrites:
                    self.db.execute(
                        "UPDATE samples SET vals=?, extra=?, parser_version=? WHERE id=? AND run_id=?",
                        (json.dumps(r.values), json.dumps(r.extra), r.parser_version, r.id, run_id),
                    )
                ordinal = self.db.execute("SELECT COUNT(*) FROM metric_defs WHERE run_id=?", (run_id,)).fetchone()[0]
                for workload, case, m in metrics:
                    added = self.db.execute(
                        "INSERT OR IGNORE INTO metric_defs (run_id, workload, ccase, metric, unit, higher_is_better,"
                        " ordinal, role) VALUES (?,?,?,?,?,?,?,?)",
                        (run_id, workload, case, m.name, m.unit, int(m.higher_is_better), ordinal, m.role),
                    )
                    ordinal += added.rowcount
        except sqlite3.DatabaseError as exc:  # rolled back: the run is as it was
            raise StoreError(store_problem(self.path, exc)) from None

    def discard_run(self, run_id: str) -> None:
        """Remove a run that measured nothing (refused after its environments
        started: results/programs.py), so no trace of it is left."""
        with self.db:
            for table in ("samples", "metric_defs", "env_facts", "runs"):
                self.db.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))  # the fixed names above

    def reopen_run(self, run_id: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status='running', finished_at=NULL WHERE run_id=?", (run_id,))

    def measured_cells(self, run_id: str) -> set[tuple[str, str, str, int]]:
        """(env, workload, case, round) of every ok sample, for --resume: a
        failed or timed-out cell is measured again (its failed sample stays,
        so a report can show that the cell needed a retry)."""
        return {
            tuple(r)
            for r in self.db.execute(
                "SELECT env, workload, ccase, round FROM samples WHERE run_id=? AND status='ok'", (run_id,)
            )
        }

    def first_alone(self, run_id: str, env: str, workload: str, case: str) -> tuple[dict, dict] | None:
        """(values, extra) of the environment's first ok warm-up sample of a
        cell that ran alone (no duet partner): a table's duet call reads it."""
        rows = self.db.execute(
            "SELECT vals, extra FROM samples WHERE run_id=? AND env=? AND workload=? AND ccase=? AND warmup=1"
            " AND status='ok' ORDER BY round, id",
            (run_id, env, workload, case),
        )
        for vals, extra in rows:
            values, more = json.loads(vals or "{}"), json.loads(extra or "{}")
            if isinstance(values, dict) and isinstance(more, dict) and "duet" not in more:
                return values, more
        return None

    def study_of(self, run_id: str) -> tuple[str, str]:
        """The study file path and text a run was started from."""
        row = self.db.execute("SELECT study_path, study_text FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id!r}; `isobench runs` lists them")
        return row[0], row[1]

    def run_facts(self, run_id: str) -> dict:
        """The run's host facts (and what the run added to them)."""
        row = self.db.execute("SELECT host_facts FROM runs WHERE run_id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def set_run_facts(self, run_id: str, facts: dict) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET host_facts=? WHERE run_id=?", (json.dumps(facts, sort_keys=True), run_id))

    def finish_run(self, run_id: str, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status=?, finished_at=? WHERE run_id=?", (status, now_iso(), run_id))

    # --- reading -------------------------------------------------------------

    def list_runs(self) -> list[RunRow]:
        rows = self.db.execute(
            "SELECT r.run_id, r.study_name, r.started_at, r.finished_at, r.status, r.environments,"
            " SUM(s.status='ok' AND s.warmup=0), SUM(s.status!='ok'), SUM(s.status='ok' AND s.warmup!=0)"
            " FROM runs r LEFT JOIN samples s ON s.run_id = r.run_id"
            f" GROUP BY r.run_id ORDER BY {order_by('r.started_at')}, r.run_id"
        ).fetchall()
        return [
            RunRow(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                stored_names(r[5], f"{self.path}: run {r[0]}"),
                r[6] or 0,
                r[7] or 0,
                r[8] or 0,
            )
            for r in rows
        ]

    def latest_run_id(self) -> str:
        row = self.db.execute(
            f"SELECT run_id FROM runs ORDER BY {order_by('started_at', desc=True)}, run_id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no runs stored yet; start one with `isobench run STUDY`")
        return row[0]

    def resolve(self, run_id: str | None) -> str:
        """A run id, a unique prefix of one, or None for the latest."""
        if run_id is None:
            return self.latest_run_id()
        # a prefix, taken literally: % and _ are LIKE's wildcards
        pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.db.execute(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY run_id", (pattern,)
        ).fetchall()
        exact = [r[0] for r in rows if r[0] == run_id]
        if exact:
            return exact[0]
        if len(rows) == 1:
            return rows[0][0]
        if not rows:
            raise StoreError(f"{self.path}: no run {run_id!r}; `isobench runs` lists them")
        raise StoreError(f"{self.path}: {run_id!r} matches {len(rows)} runs; give more of the id")

    def load_run(self, run_id: str) -> RunData:
        run = read_run(self.db, self.path, run_id, self._role, self._primary)
        if run is None:
            raise StoreError(f"{self.path}: no run {run_id!r}")
        return run

    def extras(
        self, run_id: str, workload: str | None = None, case: str | None = None
    ) -> dict[tuple[str, str, str], list[dict]]:
        """Detail kept beside the values (latency histograms ...) of the
        measured samples (ok, not warm-up): {(env, workload, case): [extra, ...]}
        in measurement order, optionally for one workload (and case)."""
        sql = "SELECT env, workload, ccase, extra FROM samples WHERE run_id=? AND warmup=0 AND status='ok'"
        args: list = [run_id]
        if workload is not None:
            sql += " AND workload=?"
            args.append(workload)
        if case is not None:
            sql += " AND ccase=?"
            args.append(case)
        out: dict[tuple[str, str, str], list[dict]] = {}
        for env, w, c, extra in self.db.execute(sql + " ORDER BY id", args):
            detail = stored(SampleExtra, extra, f"{self.path}: run {run_id}: samples' extra")
            if detail:
                out.setdefault((env, w, c), []).append(detail)
        return out

    def defined_metrics(self, run_id: str) -> set[tuple[str, str, str]]:
        """(workload, case, metric) of every metric the run defines."""
        return {
            tuple(r)
            for r in self.db.execute("SELECT workload, ccase, metric FROM metric_defs WHERE run_id=?", (run_id,))
        }

    def parser_versions(self, run_id: str, workload: str | None = None) -> dict[tuple[str, str], dict]:
        """The parser versions recorded with the measured samples (ok, not
        warm-up): {(workload, case): {version: samples}}, version None where
        the store does not say (samples stored before versions were
        recorded); optionally for one workload. isobench/parser_versions.py
        reads None per workload."""
        sql = (
            f"SELECT workload, ccase, {self._version}, COUNT(*) FROM samples"
            " WHERE run_id=? AND warmup=0 AND status='ok'"
        )
        args: list = [run_id]
        if workload is not None:
            sql += " AND workload=?"
            args.append(workload)
        out: dict[tuple[str, str], dict] = {}
        for w, c, version, n in self.db.execute(sql + " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3", args):
            out.setdefault((w, c), {})[version] = n
        return out

    def samples(self, run_id: str) -> list[dict]:
        """Raw samples, for exports and reparse; a start time as a UTC
        instant, or None when the store holds no time there."""
        cur = self.db.execute("SELECT * FROM samples WHERE run_id=? ORDER BY id", (run_id,))
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, row)) for row in cur]
        for r in rows:
            r["started_at"] = stored_instant(r["started_at"], f"{self.path}: run {run_id}: samples' start times")
        return rows
