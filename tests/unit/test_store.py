from isobench.store import Store, StoreError
from isobench.study import parse_study
from isobench.metric import Metric

import pytest

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
    store.define_metrics(run_id, "compression", "default", [Metric("throughput_mbs", "MB/s", True),
                                                           Metric("real_s", "s", False)])
    store.set_env_facts(run_id, "native", {"kind": "native"})
    for rnd, warm in [(0, True), (1, False), (2, False)]:
        for env, v in [("native", 10.0 + rnd), ("docker-nat", 9.0 + rnd)]:
            store.add_sample(run_id, env, "compression", "default", rnd, warm, "ok",
                             {"throughput_mbs": v, "real_s": 1 / v}, {}, "raw", "t", 1.0)
    store.add_sample(run_id, "docker-nat", "compression", "default", 3, False, "timeout", {}, {}, "partial",
                     "t", 5.0, error="timed out after 5 s")
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
