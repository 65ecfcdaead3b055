import json
import sqlite3

import pytest

from isobench.core.metric import Metric
from isobench.store.db import Sample, Store, StoreError
from isobench.study import parse_study

STUDY = """
[study]
name = "s"
[environments.native]
[environments.docker-nat]
[workloads.compression]
"""


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    yield s
    s.close()


def _fill(store, run_id="run-1"):
    study = parse_study(STUDY, "s.toml")
    store.create_run(run_id, study, {"cores": 2})
    store.define_metrics(
        run_id, "compression", "default", [Metric("throughput_mbs", "MB/s", True), Metric("real_s", "s", False)]
    )
    store.set_env_facts(run_id, "native", {"kind": "native"})
    for rnd, warm in [(0, True), (1, False), (2, False)]:
        for env, v in [("native", 10.0 + rnd), ("docker-nat", 9.0 + rnd)]:
            store.add_sample(
                Sample(
                    run_id,
                    env,
                    "compression",
                    "default",
                    rnd,
                    warm,
                    "ok",
                    "t",
                    1.0,
                    {"throughput_mbs": v, "real_s": 1 / v},
                    raw="raw",
                )
            )
    store.add_sample(
        Sample(
            run_id,
            "docker-nat",
            "compression",
            "default",
            3,
            False,
            "timeout",
            "t",
            5.0,
            raw="partial",
            error="timed out after 5 s",
        )
    )
    return study


def test_round_trip_excludes_warmup_and_keeps_failures(store):
    _fill(store)
    store.finish_run("run-1", "complete")
    run = store.load_run("run-1")
    assert run.environments == ["native", "docker-nat"] and run.baseline == "native"
    assert [m.metric for m in run.metrics] == ["throughput_mbs", "real_s"]
    tput = run.metrics[0]
    assert tput.higher_is_better and not run.metrics[1].higher_is_better
    assert run.values[(tput, "native")] == [11.0, 12.0]
    assert run.values[(tput, "docker-nat")] == [10.0, 11.0]
    assert run.failures[("compression", "default", "docker-nat")] == ["timed out after 5 s"]
    assert run.status == "complete" and run.host_facts == {"cores": 2}
    assert run.env_facts["native"] == {"kind": "native"}
    assert "[workloads.compression]" in run.study_text


def test_samples_survive_a_new_connection(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    _fill(s)
    # no finish_run, no close: as after a crash
    again = Store(path)
    rows = again.list_runs()
    assert rows[0].status == "running" and rows[0].samples_ok == 4 and rows[0].samples_failed == 1


def test_resolve_prefix_latest_and_errors(store):
    _fill(store, "20260101-a")
    _fill(store, "20260102-b")
    assert store.resolve(None) == "20260102-b"
    assert store.resolve("20260101") == "20260101-a"
    with pytest.raises(StoreError, match="matches 2 runs"):
        store.resolve("2026")
    with pytest.raises(StoreError, match="no run"):
        store.resolve("nope")


def test_empty_store_says_how_to_start(tmp_path):
    with pytest.raises(StoreError, match="isobench run"):
        Store(str(tmp_path / "e.sqlite")).latest_run_id()


def test_load_run_keeps_the_round_of_every_value(store):
    _fill(store)
    run = store.load_run("run-1")
    tput = run.metrics[0]
    assert run.rounds[(tput, "native")] == [1, 2]  # round 0 was the warm-up
    assert {k: len(v) for k, v in run.rounds.items()} == {k: len(v) for k, v in run.values.items()}


def test_define_metrics_keeps_the_role(store):
    study = parse_study(STUDY, "s.toml")
    store.create_run("r", study, {})
    store.define_metrics(
        "r",
        "compression",
        "default",
        [Metric("throughput_mbs", "MB/s", True, role="throughput"), Metric("user_s", "s", False)],
    )
    assert [m.role for m in store.load_run("r").metrics] == ["throughput", ""]


# The schema of stores created before metric roles (metric_defs without role).
OLD_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, study_name TEXT NOT NULL, study_path TEXT NOT NULL,
    study_text TEXT NOT NULL, study_hash TEXT NOT NULL, baseline TEXT NOT NULL, environments TEXT NOT NULL,
    started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL, host_facts TEXT NOT NULL);
CREATE TABLE env_facts (run_id TEXT NOT NULL REFERENCES runs(run_id), env TEXT NOT NULL, facts TEXT NOT NULL,
    PRIMARY KEY (run_id, env));
CREATE TABLE metric_defs (run_id TEXT NOT NULL REFERENCES runs(run_id), workload TEXT NOT NULL,
    ccase TEXT NOT NULL, metric TEXT NOT NULL, unit TEXT NOT NULL, higher_is_better INTEGER NOT NULL,
    ordinal INTEGER NOT NULL, PRIMARY KEY (run_id, workload, ccase, metric));
CREATE TABLE samples (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(run_id),
    env TEXT NOT NULL, workload TEXT NOT NULL, ccase TEXT NOT NULL, round INTEGER NOT NULL,
    warmup INTEGER NOT NULL, status TEXT NOT NULL, error TEXT, vals TEXT NOT NULL, extra TEXT NOT NULL,
    raw TEXT NOT NULL, started_at TEXT NOT NULL, wall_s REAL NOT NULL);
"""
NET_ENVS = {
    "native": {"kind": "native", "options": {}},
    "docker-nat": {"kind": "docker", "options": {"network": "bridge"}},
    "docker-host": {"kind": "docker", "options": {"network": "host"}},
}
NET_METRICS = [
    ("netlat", "tcp", "mean_us", "µs", False, "latency"),
    ("netbw", "tx", "gbps", "Gbit/s", True, "throughput"),
]


def _net_value(env: str, rnd: int) -> float:
    return {"native": 20.0, "docker-nat": 40.0, "docker-host": 21.0}[env] + rnd


def _old_store(path: str) -> None:
    """A run written as isobench wrote it before roles: no role column."""
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        ("net", "s", "s.toml", STUDY, "h", "native", json.dumps(list(NET_ENVS)), "t0", "t1", "complete", "{}"),
    )
    for env, facts in NET_ENVS.items():
        db.execute("INSERT INTO env_facts VALUES (?,?,?)", ("net", env, json.dumps(facts)))
    for i, (w, c, m, u, hib, _role) in enumerate(NET_METRICS):
        db.execute("INSERT INTO metric_defs VALUES (?,?,?,?,?,?,?)", ("net", w, c, m, u, int(hib), i))
        for env in NET_ENVS:
            for rnd in (1, 2, 3):
                db.execute(
                    "INSERT INTO samples (run_id, env, workload, ccase, round, warmup, status, vals, extra,"
                    " raw, started_at, wall_s) VALUES (?,?,?,?,?,0,'ok',?,'{}','','t',1.0)",
                    ("net", env, w, c, rnd, json.dumps({m: _net_value(env, rnd)})),
                )
    db.commit()
    db.close()


def test_a_store_from_before_roles_gets_the_column_and_reports_the_same(tmp_path):
    from isobench.report.markdown import render_markdown

    old_path, new_path = str(tmp_path / "old.sqlite"), str(tmp_path / "new.sqlite")
    _old_store(old_path)
    old = Store(old_path)
    assert "role" in {row[1] for row in old.db.execute("PRAGMA table_info(metric_defs)")}
    Store(old_path).close()  # a second open finds the column there and leaves it

    new = Store(new_path)  # the same run as written today, roles declared
    new.db.execute("ATTACH DATABASE ? AS old", (old_path,))
    with new.db:
        for table in ("runs", "env_facts", "samples"):
            new.db.execute(f"INSERT INTO {table} SELECT * FROM old.{table}")
    for w, c, m, u, hib, role in NET_METRICS:
        new.define_metrics("net", w, c, [Metric(m, u, hib, role=role)])

    old_run, new_run = old.load_run("net"), new.load_run("net")
    assert [m.role for m in old_run.metrics] == ["", ""]
    assert [(m.workload, m.metric, m.unit) for m in old_run.metrics] == [
        (m.workload, m.metric, m.unit) for m in new_run.metrics
    ]
    old_md = render_markdown(old_run)
    assert old_md == render_markdown(new_run)
    assert (
        "## NAT vs host networking" in old_md and "docker-nat 41.99 vs docker-host 22.99" in old_md
    )  # geometric centres


def test_resume_skips_only_cells_with_an_ok_sample(store):
    _fill(store)
    measured = store.measured_cells("run-1")
    assert ("docker-nat", "compression", "default", 1) in measured
    # round 3 timed out: --resume measures it again; the timeout stays on record
    assert ("docker-nat", "compression", "default", 3) not in measured
    store.add_sample(
        Sample(
            "run-1",
            "docker-nat",
            "compression",
            "default",
            3,
            False,
            "ok",
            "t",
            1.0,
            {"throughput_mbs": 13.0, "real_s": 1 / 13},
        )
    )
    assert ("docker-nat", "compression", "default", 3) in store.measured_cells("run-1")
    run = store.load_run("run-1")
    tput = run.metrics[0]
    assert run.values[(tput, "docker-nat")] == [10.0, 11.0, 13.0]  # only ok samples are analysed
    assert run.failures[("compression", "default", "docker-nat")] == ["timed out after 5 s"]


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="not an isobench store"):
        Store(str(path))
    names = [r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")]
    assert names == ["invoices"]


def test_a_read_only_store_is_refused_before_a_run(tmp_path):
    path = str(tmp_path / "r.sqlite")
    Store(path).close()
    ro = Store.__new__(Store)
    ro.path = path
    ro.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(StoreError, match="not writable"):
        ro.check_writable()


def test_a_failed_sample_write_is_a_store_write_error_and_keeps_earlier_samples(tmp_path):
    from isobench.store.db import StoreWriteError

    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    _fill(s)
    before = len(s.samples("run-1"))
    s.db.execute("PRAGMA query_only = ON")  # every write now fails the way a full disk does
    with pytest.raises(StoreWriteError, match="r.sqlite: "):
        s.add_sample(Sample("run-1", "native", "compression", "default", 4, False, "ok", "t", 1.0, {}))
    s.close()
    assert len(Store(path).samples("run-1")) == before


def test_define_metrics_keeps_the_primary_flag(store):
    study = parse_study(STUDY, "s.toml")
    store.create_run("r", study, {})
    store.define_metrics(
        "r",
        "compression",
        "default",
        [Metric("throughput_mbs", "MB/s", True, role="throughput", primary=True), Metric("real_s", "s", False)],
    )
    run = store.load_run("r")
    assert [m.primary for m in run.metrics] == [True, False]
    from isobench.results.primary import primary_keys, stores_primaries

    assert stores_primaries(run) and primary_keys(run) == run.metrics[:1]


def _before_primaries(path: str) -> None:
    """A run written as isobench wrote it with roles, before primaries: no
    is_primary column in metric_defs."""
    from isobench.store.schema import SCHEMA

    schema = "\n".join(line for line in SCHEMA.splitlines() if "is_primary" not in line)
    db = sqlite3.connect(path)
    db.executescript(schema)
    db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        ("net", "s", "s.toml", STUDY, "h", "native", json.dumps(list(NET_ENVS)), "t0", "t1", "complete", "{}"),
    )
    for env, facts in NET_ENVS.items():
        db.execute("INSERT INTO env_facts VALUES (?,?,?)", ("net", env, json.dumps(facts)))
    for i, (w, c, m, u, hib, role) in enumerate(NET_METRICS):
        db.execute("INSERT INTO metric_defs VALUES (?,?,?,?,?,?,?,?)", ("net", w, c, m, u, int(hib), i, role))
        for env in NET_ENVS:
            for rnd in (1, 2, 3):
                db.execute(
                    "INSERT INTO samples (run_id, env, workload, ccase, round, warmup, status, vals, extra,"
                    " raw, started_at, wall_s) VALUES (?,?,?,?,?,0,'ok',?,'{}','','t',1.0)",
                    ("net", env, w, c, rnd, json.dumps({m: _net_value(env, rnd)})),
                )
    db.commit()
    db.close()


def test_a_store_from_before_primaries_gets_the_column_and_reports_as_before(tmp_path):
    from isobench.report.markdown import render_markdown
    from isobench.results.primary import stores_primaries
    from isobench.results.table import DESCRIPTIVE_MARK, build_table

    old_path, new_path = str(tmp_path / "old.sqlite"), str(tmp_path / "new.sqlite")
    _before_primaries(old_path)
    assert "is_primary" not in {row[1] for row in sqlite3.connect(old_path).execute("PRAGMA table_info(metric_defs)")}
    old = Store(old_path)
    assert "is_primary" in {row[1] for row in old.db.execute("PRAGMA table_info(metric_defs)")}
    Store(old_path).close()  # a second open finds the column there and leaves it
    run = old.load_run("net")
    assert [(m.role, m.primary) for m in run.metrics] == [("latency", False), ("throughput", False)]
    assert not stores_primaries(run) and {r.family for r in build_table(run).rows} == {""}

    new = Store(new_path)  # the same run as written today by a writer that flags nothing
    new.db.execute("ATTACH DATABASE ? AS old", (old_path,))
    with new.db:
        for table in ("runs", "env_facts", "samples"):
            new.db.execute(f"INSERT INTO {table} SELECT * FROM old.{table}")
    for w, c, m, u, hib, role in NET_METRICS:
        new.define_metrics("net", w, c, [Metric(m, u, hib, role=role)])
    md = render_markdown(run)
    assert md == render_markdown(new.load_run("net")) and DESCRIPTIVE_MARK not in md

    # the migrated store takes a run with primaries
    old.db.execute(
        "INSERT INTO runs SELECT 'net2', study_name, study_path, study_text, study_hash, baseline,"
        " environments, started_at, finished_at, status, host_facts FROM runs WHERE run_id='net'"
    )
    old.db.commit()
    old.define_metrics(
        "net2",
        "netlat",
        "tcp",
        [Metric("mean_us", "µs", False, role="latency", primary=True), Metric("p99_us", "µs", False, role="latency")],
    )
    assert [m.primary for m in old.load_run("net2").metrics] == [True, False]
    old.close()
    new.close()
