"""isobench reparse and parser versions: a stored run whose samples hold the
real tools' outputs (tests/data/) and values that are wrong on purpose
(doubled, or read by the web store's parser before its quantile fix) gets
back exactly what the current parsers read, and every other value stays
identical; an unreadable raw output keeps its sample as stored and is
named in one line; workloads that keep too little to recompute are left
alone; an old store gains the version column; --dry-run writes nothing;
a series that mixes parser versions is told."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.unit.test_store import OLD_SCHEMA

from isobench.drivers import loghist
from isobench.host.hostinfo import HostInfo
from isobench.host.noise import step_case, unstep_case
from isobench.store.db import Sample, Store
from isobench.store.parser_versions import read_version, series_versions
from isobench.store.reparse import reparse_run
from isobench.study import parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads.api import parse_api_rounds
from isobench.workloads.compress import parse_time
from isobench.workloads.fio import job_values, parse_job
from isobench.workloads.hpcc import parse_summary, summary_metrics
from isobench.workloads.netbw import parse_iperf3
from isobench.workloads.netlat import parse_sockperf
from isobench.workloads.oltp import parse_sysbench
from isobench.workloads.redis import parse_redis_csv
from isobench.workloads.redis_scaleout import parse_scaleout
from isobench.workloads.webstore_metrics import OPS, parse_webstore

DATA = Path(__file__).resolve().parent.parent / "data"
ENVS = ("native", "docker-nat")
T = "2026-05-01T10:00:00+0000"  # a sample's start: a UTC instant, as the runner stores it
STUDY = """[study]
name = "reparse"
repetitions = 2
warmup = 1
baseline = "native"

[environments.native]
[environments.docker-nat]

[workloads.compression]
size_mb = 64
[workloads.fio]
cases = ["randread", "seqwrite"]
[workloads.hpcc]
n = 1024
[workloads.netlat]
[workloads.netbw]
[workloads.oltp]
threads = [4]
[workloads.redis]
clients = [4]
[workloads.redis-scaleout]
instances = [3]
[workloads.api]
instances = 4
rounds = 3
[workloads.webstore]
instances = [1, 2]
peak = true
[workloads.startup]
"""
WINDOW = {"wall_s": 10.0, "host_busy_s": 3.0, "client_cpu_s": 1.0, "ncpu": 2, "server_cpu_s": 0.5}


def text(name: str) -> str:
    return (DATA / name).read_text()


def quantile_v1(hist: dict[int, int], q: float) -> float:
    """drivers/loghist.quantile before fb0e5f2: every rank in a bucket read as its middle."""
    total = loghist.count(hist)
    if total == 0:
        return float("nan")
    rank, seen = max(1, math.ceil(q * total)), 0
    for k in sorted(hist):
        seen += hist[k]
        if seen >= rank:
            return loghist.bucket_mid_s(k)
    return loghist.bucket_mid_s(max(hist))


def webstore_values(raw: str) -> dict:
    return parse_webstore(raw, list(OPS), 0.05)[0]


def webstore_v1(raw: str) -> dict:
    current = loghist.quantile
    loghist.quantile = quantile_v1
    try:
        return parse_webstore(raw, list(OPS), 0.05)[0]
    finally:
        loghist.quantile = current


def cells() -> list[tuple[str, str, list[str], callable]]:
    """(workload, case, raw outputs by round, what the parser reads from one), real outputs only."""
    fio = lambda case: lambda raw: job_values(case, parse_job(raw))[0]  # noqa: E731
    per_gb = lambda nbytes, cpu: cpu / (nbytes / 1e9)  # noqa: E731
    return [
        (
            "compression",
            "default",
            [text("time-pixz.txt")] * 3,
            lambda raw: {"throughput_mbs": 64 / parse_time(raw)["real_s"], **parse_time(raw)},
        ),
        (
            "fio",
            "randread",
            [text("fio-randread.json"), text("fio-randread-note.txt"), text("fio-randread.json")],
            fio("randread"),
        ),
        ("fio", "seqwrite", [text("fio-seqwrite.json")] * 3, fio("seqwrite")),
        ("hpcc", "default", [text("hpccoutf.txt")] * 3, lambda raw: summary_metrics(parse_summary(raw))),
        ("netlat", "tcp", [text("sockperf-tcp.txt")] * 3, lambda raw: parse_sockperf(raw)[0]),
        ("netlat", "udp", [text("sockperf-udp.txt")] * 3, lambda raw: parse_sockperf(raw)[0]),
        *[
            (
                "netbw",
                case,
                [text(f"iperf3-{case}.json")] * 3,
                lambda raw, case=case: (
                    lambda v, x: {
                        **v,
                        "cpu_s_per_gb": per_gb(x["bytes"], 2.0),
                        "server_cpu_s_per_gb": per_gb(x["bytes"], 0.5),
                    }
                )(*parse_iperf3(raw, reverse=case == "tx")),
            )
            for case in ("tx", "rx")
        ],
        (
            "oltp",
            "threads=4",
            [text("sysbench-oltp-rw-t4.txt")] * 3,
            lambda raw: {**parse_sysbench(raw)[0], "cpu_pct": 10.0, "server_cpu_pct": 2.5},
        ),
        ("redis", "clients=4", [text("redis-benchmark-c4.csv")] * 3, lambda raw: parse_redis_csv(raw)[0]),
        ("redis-scaleout", "instances=3", [text("redis-mix-3instances.json")] * 3, lambda raw: parse_scaleout(raw)[0]),
        ("api", "default", [text("api-client-4x3.json")] * 3, lambda raw: parse_api_rounds(raw, 4)[0]),
        (
            "webstore",
            "instances=1",
            [text("webstore/closed-1.json"), text("webstore/open-1.json"), text("webstore/closed-1.json")],
            webstore_values,
        ),
        ("webstore", "instances=2", [text("webstore/open-2.json")] * 3, webstore_values),
    ]


def metrics_of(study, key: str, case: str):
    entry = next(e for e in study.workloads if e.key == key)
    return WORKLOADS[entry.workload](entry.params, HostInfo(2, 8 << 30, 0)).metrics(case)


def build_run(store: Store, run_id: str = "r1") -> dict:
    """The run as a study measured it before parser versions were recorded
    (parser_version NULL), with real raw outputs; returns {sample id: the
    values the current parsers read} for the samples reparse recomputes."""
    study = parse_study(STUDY, "reparse.toml")
    store.create_run(run_id, study, {"cores": 2, "mem_bytes": 8 << 30})
    expected = {}
    for key, case, raws, read in cells():
        store.define_metrics(run_id, key, case, metrics_of(study, key, case))
        for rnd, raw in enumerate(raws):
            for env in ENVS:
                values = read(raw)
                stored = webstore_v1(raw) if key == "webstore" else dict(values)
                extra = {"units": ["run", 1.0], "counters": {"host_cpu_s": 1.5}}
                if key in ("netbw", "oltp"):
                    extra["cpu_window"] = WINDOW
                if key == "netbw":
                    extra["bytes"] = parse_iperf3(raw, reverse=case == "tx")[1]["bytes"]
                store.add_sample(Sample(run_id, env, key, case, rnd, rnd == 0, "ok", T, 1.0, stored, extra, raw))
                sid = store.db.execute("SELECT MAX(id) FROM samples").fetchone()[0]
                expected[sid] = values
    for key, case, values, raw in (
        ("webstore", "peak", {"peak_rate": 40.0, "peak_orders_per_min": 300.0, "peak_probes": 4.0}, "[]"),
        ("startup", "default", {"ready_s": 0.01}, ""),
    ):
        store.define_metrics(run_id, key, case, metrics_of(study, key, case))
        for env in ENVS:
            store.add_sample(Sample(run_id, env, key, case, 1, False, "ok", T, 1.0, values, {}, raw))
    store.add_sample(
        Sample(
            run_id,
            "native",
            "fio",
            "randread",
            2,
            False,
            "failed",
            T,
            1.0,
            {},
            {},
            "fio: io_u error",
            error="fio failed",
        )
    )
    store.db.execute("UPDATE samples SET parser_version=NULL")  # as stored before versions
    store.db.commit()
    store.finish_run(run_id, "complete")
    return expected


def rows(store: Store, run_id: str = "r1") -> list[tuple]:
    return store.db.execute(
        "SELECT id, env, workload, ccase, round, status, vals, extra, raw, parser_version"
        " FROM samples WHERE run_id=? ORDER BY id",
        (run_id,),
    ).fetchall()


def sample_id(store, env, workload, case, rnd) -> int:
    return store.db.execute(
        "SELECT id FROM samples WHERE env=? AND workload=? AND ccase=? AND round=? AND status='ok'",
        (env, workload, case, rnd),
    ).fetchone()[0]


def set_values(store, sid: int, **changes) -> None:
    vals = json.loads(store.db.execute("SELECT vals FROM samples WHERE id=?", (sid,)).fetchone()[0])
    store.db.execute("UPDATE samples SET vals=? WHERE id=?", (json.dumps({**vals, **changes}), sid))
    store.db.commit()


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    yield s
    s.close()


def test_reparse_restores_the_parsers_values_and_leaves_every_other_value_identical(store):
    expected = build_run(store)
    wrong = {
        sample_id(store, "native", "fio", "randread", 1): "iops",
        sample_id(store, "docker-nat", "compression", "default", 2): "throughput_mbs",
        sample_id(store, "native", "netbw", "tx", 1): "cpu_s_per_gb",  # from the stored CPU window
        sample_id(store, "docker-nat", "oltp", "threads=4", 0): "tps",
    }  # a warm-up: recomputed too
    for sid, metric in wrong.items():
        set_values(store, sid, **{metric: 2 * expected[sid][metric]})
    unreadable = sample_id(store, "docker-nat", "fio", "randread", 2)
    store.db.execute("UPDATE samples SET raw=substr(raw, 1, 300) WHERE id=?", (unreadable,))
    store.db.commit()
    before = {r[0]: r for r in rows(store)}

    result = reparse_run(store, "r1")
    assert result.written
    after = {r[0]: r for r in rows(store)}
    for sid, row in after.items():
        workload, case, status = row[2], row[3], row[5]
        if status != "ok" or sid == unreadable or workload == "startup" or case == "peak":
            assert row == before[sid], (workload, case)  # kept as stored, version too
            continue
        assert json.loads(row[6]) == expected[sid], (workload, case)
        assert row[9] == WORKLOADS[workload].parser_version  # the study names each workload by its kind
        old_extra, new_extra = json.loads(before[sid][7]), json.loads(row[7])
        assert new_extra["counters"] == old_extra["counters"]  # the runner's detail is kept
    # the old values that were right are untouched, bit for bit
    for sid, row in after.items():
        if sid in expected and sid != unreadable:
            old, new = json.loads(before[sid][6]), json.loads(row[6])
            same = {m for m in old if old[m] == expected[sid].get(m)}
            assert {m: new[m] for m in same} == {m: old[m] for m in same}
    # the web store's quantiles move to the interpolated ones; its counts do not
    ws = sample_id(store, "native", "webstore", "instances=1", 1)
    old, new = json.loads(before[ws][6]), json.loads(after[ws][6])
    assert old["login_p90_ms"] != new["login_p90_ms"] and old["orders_per_min"] == new["orders_per_min"]

    lines = result.lines()
    text_ = "\n".join(lines)
    assert lines[0] == (
        "run r1 (study reparse): 83 sample(s) recomputed from their raw output, 1 unreadable, 4 left alone"
    )
    assert "  fio: parser version 1 \u2192 1 (11 sample(s))" in lines
    assert "  webstore: parser version unknown \u2192 2 (12 sample(s))" in lines
    changed = [ln for ln in lines if ln.startswith("  changed ")]
    assert "  changed fio iops: 1 of 5 value(s), largest -50.00% " in "\n".join(changed)
    assert any(
        ln.startswith("  changed compression throughput_mbs: 1 of 6 value(s), largest -50.00%")
        and ln.endswith("parser version 1 both times: the stored values are not what it reads from the raw output")
        for ln in changed
    )
    assert any(ln.startswith("  changed netbw cpu_s_per_gb: 1 of 12") for ln in changed)
    assert any(ln.startswith("  changed oltp tps: 1 of 6") for ln in changed)
    assert any(
        ln.startswith("  changed webstore login_p90_ms: ") and ln.endswith("parser version unknown \u2192 2")
        for ln in changed
    )
    assert not any(" webstore orders_per_min" in ln or " hpcc " in ln or " redis " in ln for ln in changed)
    assert (
        "  unreadable: run r1, environment docker-nat, workload fio, case randread, round 2: stored values "
        "kept (fio's JSON does not parse:"
    ) in text_
    assert "  webstore case peak: left alone: the peak search keeps each probe's p90s" in text_
    assert "  startup: left alone: its times are measured by the environment" in text_
    assert lines[-1].startswith("  every other value is identical (") and all("\n" not in ln for ln in lines)

    again = reparse_run(store, "r1")  # the second time: nothing changes but the versions stay
    assert not any(ln.startswith("  changed ") for ln in again.lines())
    assert "  webstore: parser version 2 \u2192 2 (12 sample(s))" in again.lines()
    assert rows(store) == list(after.values())


def test_dry_run_writes_nothing(store):
    build_run(store)
    sid = sample_id(store, "native", "hpcc", "default", 1)
    set_values(store, sid, hpl_gflops=1.0)
    before = rows(store), store.db.execute("SELECT * FROM metric_defs ORDER BY ordinal").fetchall()
    result = reparse_run(store, "r1", write=False)
    assert not result.written and any(ln.startswith("  changed hpcc hpl_gflops: 1 of 6") for ln in result.lines())
    assert (rows(store), store.db.execute("SELECT * FROM metric_defs ORDER BY ordinal").fetchall()) == before


def test_a_live_run_and_a_study_that_no_longer_reads_are_left_alone(store):
    build_run(store)
    store.db.execute("UPDATE runs SET status='running'")
    store.db.commit()
    assert reparse_run(store, "r1", live_runs={"r1"}).lines() == [
        "run r1 (study reparse): left alone: a study is measuring it now; reparse it once the run has ended"
    ]
    assert reparse_run(store, "r1", write=False, live_runs=()).reparsed == 84  # it died: reparse it
    store.db.execute("UPDATE runs SET study_text=replace(study_text, 'size_mb = 64', 'size_mb = \"64\"')")
    store.db.commit()
    (line,) = reparse_run(store, "r1", live_runs=()).lines()
    assert line.startswith(
        "run r1 (study reparse): left alone: its stored study does not read with this "
        "isobench (r1 (stored study): workloads.compression.size_mb:"
    )


def test_a_newer_parsers_metric_is_defined(store):
    build_run(store)
    store.db.execute("DELETE FROM metric_defs WHERE workload='api' AND metric='task_rate'")
    for (sid,) in store.db.execute("SELECT id FROM samples WHERE workload='api'").fetchall():
        vals = json.loads(store.db.execute("SELECT vals FROM samples WHERE id=?", (sid,)).fetchone()[0])
        vals.pop("task_rate")
        store.db.execute("UPDATE samples SET vals=? WHERE id=?", (json.dumps(vals), sid))
    store.db.commit()
    result = reparse_run(store, "r1")
    assert any(ln.startswith("  added api task_rate: 6 value(s) the parser gives now") for ln in result.lines())
    run = store.load_run("r1")
    key = next(m for m in run.metrics if m.workload == "api" and m.metric == "task_rate")
    assert key.role == "throughput" and len(run.values[(key, "native")]) == 2


def test_series_versions_tells_a_mixed_series(store):
    build_run(store, "r1")
    build_run(store, "r2")
    mix = series_versions(store, ["r1", "r2"], "webstore")
    assert mix.current == 2 and mix.versions == [None] and not mix.comparable and not mix.mixed
    assert mix.unknown_runs == ["r1", "r2"]
    assert mix.describe().startswith("webstore: the series may mix parser versions: unknown (r1, r2)")
    assert series_versions(store, ["r1", "r2"], "fio").comparable  # never changed: unrecorded reads as 1

    reparse_run(store, "r2")
    mix = series_versions(store, ["r1", "r2"], "webstore", "instances=1")
    assert mix.by_run == {"r1": {None: 4}, "r2": {2: 4}} and mix.stale_runs == ["r1"]
    # the peak case was left alone: r2 mixes versions within itself
    assert series_versions(store, ["r2"], "webstore").by_run == {"r2": {2: 8, None: 2}}
    store.db.execute("UPDATE samples SET parser_version=1 WHERE run_id='r1' AND workload='webstore'")
    store.db.commit()
    mix = series_versions(store, ["r1", "r2"], "webstore", "instances=1")
    assert mix.mixed and not mix.comparable
    assert mix.describe() == (
        "webstore (instances=1): the series mixes parser versions: 1 (r1); 2 (r2); "
        "`isobench reparse RUN` recomputes r1 with version 2"
    )
    reparse_run(store, "r1")
    assert (
        series_versions(store, ["r1", "r2"], "webstore", "instances=1").describe()
        == "webstore (instances=1): parser version 2 in every run"
    )


def test_read_version_of_unrecorded_samples():
    assert read_version(None, "fio") == 1 and read_version(None, "webstore") is None
    assert read_version(1, "webstore") == 1 and read_version(None, "gone") is None


def test_an_old_store_gets_the_version_column_and_reads_unrecorded(tmp_path):
    path = str(tmp_path / "old.sqlite")
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute(
        "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        ("old", "s", "s.toml", STUDY, "h", "native", json.dumps(list(ENVS)), "t0", "t1", "complete", "{}"),
    )
    db.execute("INSERT INTO metric_defs VALUES ('old', 'redis', 'clients=4', 'rps', 'req/s', 1, 0)")
    raw = text("redis-benchmark-c4.csv")
    db.execute(
        "INSERT INTO samples (run_id, env, workload, ccase, round, warmup, status, vals, extra, raw,"
        " started_at, wall_s) VALUES ('old', 'native', 'redis', 'clients=4', 1, 0, 'ok', ?, '{}', ?, 't', 1)",
        (json.dumps({"rps": 1.0}), raw),
    )
    db.commit()
    db.close()
    store = Store(path)
    assert "parser_version" in {r[1] for r in store.db.execute("PRAGMA table_info(samples)")}
    assert store.parser_versions("old") == {("redis", "clients=4"): {None: 1}}
    assert series_versions(store, ["old"], "redis").describe() == "redis: parser version 1 in every run"
    result = reparse_run(store, "old")
    assert any(ln.startswith("  changed redis rps: 1 of 1 value(s)") for ln in result.lines())
    assert store.parser_versions("old") == {("redis", "clients=4"): {1: 1}}
    assert store.load_run("old").values[(store.load_run("old").metrics[0], "native")] == [
        parse_redis_csv(raw)[0]["rps"]
    ]
    store.close()
    Store(path).close()  # a second open finds the column there


def test_the_runner_records_the_parser_version(tmp_path, monkeypatch):
    from isobench.envs.base import Paths
    from isobench.run.measure import record, take  # the runner stores one sample
    from isobench.workloads.base import Measurement
    from isobench.workloads.compress import Compression

    study = parse_study(STUDY, "s.toml")
    entry = next(e for e in study.workloads if e.key == "compression")
    workload = Compression(entry.params, HostInfo(2, 8 << 30, 0))
    monkeypatch.setattr(Compression, "parser_version", 7)
    monkeypatch.setattr(
        Compression,
        "run",
        lambda self, case, env: Measurement(
            {"throughput_mbs": 1.0, "real_s": 64.0, "user_s": 1.0, "sys_s": 0.1}, raw="isobench-time real=64"
        ),
    )

    class Env:
        name = "native"
        paths = Paths("/tmp", "/tmp")
        counters = None

    store = Store(str(tmp_path / "r.sqlite"))
    store.create_run("r", study, {})
    taken = take(workload, "default", Env())
    assert record(store, "r", "compression", "default", workload, Env(), 1, False, taken) is None
    assert store.samples("r")[0]["parser_version"] == 7


@pytest.mark.parametrize(
    "stored,own",
    [
        ("default", "default"),
        ("noise=4", "default"),
        ("get,noise=0", "get"),
        ("clients=4", "clients=4"),
        ("instances=2,noise=16", "instances=2"),
    ],
)
def test_unstep_case_undoes_step_case(stored, own):
    assert unstep_case(stored) == own
    assert unstep_case(step_case(own, 3)) == own


def test_export_carries_the_version_and_refuses_a_bad_one(store, tmp_path):
    from isobench.store.transfer import TransferError, export_run, import_run

    build_run(store)
    reparse_run(store, "r1")
    doc = export_run(store, "r1")
    other = Store(str(tmp_path / "other.sqlite"))
    import_run(other, doc)
    assert other.parser_versions("r1") == store.parser_versions("r1")
    doc["samples"][0]["parser_version"] = 0
    with pytest.raises(TransferError, match=r"samples\[0\]\.parser_version: 0 is not a parser version"):
        import_run(Store(str(tmp_path / "third.sqlite")), doc)


def invoke(store_path, *args, monkeypatch):
    from isobench.cli.main import main
    from isobench.core import lock

    monkeypatch.setattr(lock, "running_run_id", lambda *a: None)  # not this host's real run lock
    return CliRunner().invoke(main, ["reparse", "--store", store_path, *args])


def test_cli_dry_run_all_and_refusals(store, monkeypatch):
    build_run(store)
    sid = sample_id(store, "native", "webstore", "instances=1", 1)
    raw = json.loads(store.db.execute("SELECT raw FROM samples WHERE id=?", (sid,)).fetchone()[0])
    raw["instances"][0]["ops"]["browse"]["errors"] = 10_000
    raw["instances"][0]["first_error"] = "browse: HTTP 502 \x1b]52;c;aGVsbG8=\x07"
    store.db.execute("UPDATE samples SET raw=? WHERE id=?", (json.dumps(raw), sid))
    store.db.commit()
    before = rows(store)
    out = invoke(store.path, "r1", "--dry-run", monkeypatch=monkeypatch)
    assert out.exit_code == 0, out.output
    assert "webstore: parser version unknown \u2192 2" in out.output and "dry run: nothing written" in out.output
    assert "unreadable: run r1, environment native, workload webstore, case instances=1, round 1" in out.output
    assert "\x1b" not in out.output and "\\x1b]52" in out.output  # the tool's text, escaped
    assert rows(store) == before

    out = invoke(store.path, "--all", monkeypatch=monkeypatch)
    assert out.exit_code == 0 and "written in one transaction" in out.output
    assert rows(store)[0] != before[0]
    for args, needle in ((("r1", "--all"), "give a run id"), ((), "give a run id"), (("nope",), "no run 'nope'")):
        out = invoke(store.path, *args, monkeypatch=monkeypatch)
        assert out.exit_code == 2 and needle in out.output, out.output
