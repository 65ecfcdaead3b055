"""History on stored (synthetic) runs: host classes and fingerprints, the
facts that differ across a step, series per primary cell, study edits kept
in their series, runs left out and why, the gate."""

import json

import pytest

from isobench.results.fingerprint import facts_diff, group_runs, host_class
from isobench.results.history import build_history, select
from isobench.store.db import Store
from isobench.store.transfer import export_run, import_run
from synthetic_runs import HISTORY_HOST, STUDY_TEXT, history_run


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    yield s
    s.close()


def loaded(store):
    return [store.load_run(r.run_id) for r in store.list_runs()]


def stepped(store, n=8, at=4, after=0.7, prefix="r", host=None, day0=1, facts_after=None, **kw):
    """N runs of docker-host at 1.0 x native, then AFTER x native from run AT;
    docker-host's cpus option and the kernel change there too (unless
    facts_after says otherwise)."""
    for i in range(n):
        h = dict(host or HISTORY_HOST)
        env = {"docker-host": {"options": {"cpus": 1.0}}}
        if i >= at:
            h["kernel"] = "6.6.0-test-amd64"
            env = facts_after or {"docker-host": {"options": {"cpus": 0.7}}}
        history_run(store, f"{prefix}{i}", day0 + i, 1.0 if i < at else after, seed=i, host=h, env_facts=env, **kw)


def history(store, **kw):
    kept, out = select(loaded(store))
    return build_history("synthetic", kept, left_out=out, **kw)


# -- host classes ----------------------------------------------------------------------


def test_host_class_is_cpu_cores_and_memory_within_a_tolerance(store):
    history_run(store, "a", 1, 1.0)
    history_run(
        store,
        "b",
        2,
        1.0,
        host={
            **HISTORY_HOST,
            "mem_bytes": 24 * 2**30 - 300 * 2**20,  # new kernel
            "kernel": "6.6",
            "hostname": "bench2",
        },
    )
    history_run(store, "c", 3, 1.0, host={**HISTORY_HOST, "cores": 4})
    history_run(store, "d", 4, 1.0, host={**HISTORY_HOST, "cpu_model": "Other CPU"})
    history_run(store, "e", 5, 1.0, host={**HISTORY_HOST, "mem_bytes": 16 * 2**30})
    groups = group_runs(loaded(store))
    assert [[r.run_id for r in runs] for _, runs in groups] == [["a", "b"], ["c"], ["d"], ["e"]]
    assert groups[0][0].label == "synthetic: Synthetic CPU @ 2.0GHz, 2 cores, 24 GiB"
    by_host = group_runs(loaded(store), by_host=True)
    assert [[r.run_id for r in runs] for _, runs in by_host][:2] == [["a"], ["b"]]
    assert by_host[0][0].label.endswith("on host bench1")


def test_unknown_host_facts_still_group(store):
    history_run(store, "a", 1, 1.0, host={})
    history_run(store, "b", 2, 1.0, host={"cores": "?"})
    cls = host_class(loaded(store)[0])
    assert (cls.cpu_model, cls.cores, cls.mem_bytes) == ("", None, None)
    assert len(group_runs(loaded(store))) == 1
    assert "CPU unknown" in cls.label


def test_an_imported_run_joins_its_hosts_series(tmp_path, store):
    stepped(store, n=6, at=3)
    other = Store(str(tmp_path / "other.sqlite"))
    history_run(
        other,
        "imported",
        20,
        0.7,
        seed=9,
        env_facts={"docker-host": {"options": {"cpus": 0.7}}},
        host={**HISTORY_HOST, "kernel": "6.6.0-test-amd64"},
    )
    import_run(store, export_run(other, "imported"), tag={"fleet_id": "f1", "host": "bench1"})
    h = history(store)
    assert len(h.groups) == 1
    assert [p.run_id for p in h.series()[0].points][-1] == "imported"
    assert h.newest.run_id == "imported"


# -- facts ------------------------------------------------------------------------------


def test_facts_diff_names_what_changed_and_skips_what_always_differs(store):
    history_run(store, "a", 1, 1.0, env_facts={"docker-host": {"runtime": "runc", "tool_versions": {"pixz": "1.0.7"}}})
    history_run(
        store,
        "b",
        2,
        1.0,
        study_text=STUDY_TEXT + "\n# edited\n",
        host={**HISTORY_HOST, "kernel": "6.6.0", "loadavg": "1.5 1 1 2/100 9"},
        env_facts={"docker-host": {"runtime": "runsc", "tool_versions": {"pixz": "1.0.8"}, "options": {"cpus": 0.8}}},
    )
    a, b = loaded(store)
    diff = {k: (x, y) for k, x, y in facts_diff(a, b, ["docker-host", "native"])}
    assert diff.pop("study hash") == (a.study_hash[:12], b.study_hash[:12])
    assert diff == {
        "kernel": ("6.1.0-test-amd64", "6.6.0"),
        "docker-host options.cpus": ("1.0", "0.8"),
        "docker-host runtime": ("runc", "runsc"),
        "docker-host tool_versions.pixz": ("1.0.7", "1.0.8"),
    }  # no loadavg, no container name


def test_the_noise_pilots_age_is_not_a_change_but_its_figures_are(store):
    noise = {
        "line": "paired SD 2.1% ..., measured 5 min ago, cached",
        "cached": True,
        "measured_unix": 1.0,
        "summary": "paired SD 2.1% per sample on CPU",
    }
    history_run(store, "a", 1, 1.0, host={**HISTORY_HOST, "host_noise": noise})
    history_run(
        store,
        "b",
        2,
        1.0,
        host={**HISTORY_HOST, "host_noise": {**noise, "line": "measured 9 min ago", "measured_unix": 2.0}},
    )
    history_run(store, "c", 3, 1.0, host={**HISTORY_HOST, "host_noise": {**noise, "summary": "paired SD 6.0%"}})
    a, b, c = loaded(store)
    assert facts_diff(a, b, ["native"]) == []
    assert [k for k, *_ in facts_diff(b, c, ["native"])] == ["host_noise.summary"]


def test_a_doctor_finding_that_changed_is_named(store):
    doctor = [
        {"check": "swap", "status": "ok", "value": "0 device(s)"},
        {"check": "load", "status": "ok", "value": "1"},
    ]
    history_run(store, "a", 1, 1.0, host={**HISTORY_HOST, "doctor": doctor})
    changed = [
        {"check": "swap", "status": "warn", "value": "1 device(s)"},
        {"check": "load", "status": "warn", "value": "9"},
    ]
    history_run(store, "b", 2, 1.0, host={**HISTORY_HOST, "doctor": changed})
    a, b = loaded(store)
    assert facts_diff(a, b, []) == [("doctor swap", "ok: 0 device(s)", "warn: 1 device(s)")]


# -- series and steps ---------------------------------------------------------------------


def test_a_step_is_found_where_the_facts_changed(store):
    stepped(store)
    h = history(store)
    (s,) = h.series()
    assert s.cell.name == "compression throughput_mbs on docker-host" and len(s.points) == 8
    (c,) = s.changes
    assert (c.before[-1].run_id, c.after[0].run_id) == ("r3", "r4")
    assert c.direction == "worse" and 27 < c.worse_pct < 33
    assert c.low_pct < c.step_pct < c.high_pct < 0
    assert c.fact_lines() == ["kernel 6.1.0-test-amd64 -> 6.6.0-test-amd64", "docker-host options.cpus 1.0 -> 0.7"]
    assert [x.cell.name for x in h.gate(5)] == ["compression throughput_mbs on docker-host"]
    assert h.gate(40) == []


def test_aa_history_has_no_step(store):
    for i in range(10):
        history_run(store, f"r{i}", i + 1, 1.0, seed=100 + i)
    h = history(store)
    assert h.changes() == [] and h.gate(0) == []
    assert not h.series()[0].too_short


def test_an_improvement_or_a_recovery_does_not_fail_the_gate(store):
    stepped(store, after=1.3)
    h = history(store)
    assert [c.direction for c in h.changes()] == ["better"] and h.gate(0) == []
    # worse, then back: the newest run sits after the recovery
    for i in range(8, 12):
        history_run(store, f"r{i}", i + 1, 1.0, seed=i)
    s = history(store).series()[0]
    assert [c.direction for c in s.changes] == ["better", "worse"]
    assert history(store).gate(5)[0].after[0].run_id == "r8"


def test_lower_is_better_metrics_are_signed_by_direction(store):
    stepped(store, after=1.4, metric=("real_s", "s", False))
    (c,) = history(store).changes()
    assert c.direction == "worse" and c.worse_pct == pytest.approx(c.step_pct) and c.worse_pct > 30


def test_a_study_edit_stays_in_its_series_and_is_a_fact(store):
    for i in range(6):
        text = STUDY_TEXT if i < 3 else STUDY_TEXT + "\n[workloads.compression]\nsize_mb = 8\n"
        history_run(store, f"r{i}", i + 1, 1.0 if i < 3 else 0.6, seed=i, study_text=text)
    h = history(store)
    (g,) = h.groups
    assert len(h.series()) == 1 and len(h.series()[0].points) == 6
    assert [e[0] for e in g.edits] == ["r3"]
    (c,) = h.changes()
    assert c.facts[0][0] == "study hash"


def test_runs_left_out_and_why(store):
    stepped(store, n=5, at=5)
    history_run(store, "live", 10, 1.0, status="running")
    history_run(store, "stopped", 11, 1.0, status="interrupted")
    history_run(store, "one-round", 12, 1.0, rounds=1, metric=("throughput_mbs", "kB/s", True))
    history_run(store, "kb", 13, 1.0, metric=("throughput_mbs", "kB/s", True))
    h = history(store)
    lines = "\n".join(h.left_out)
    assert "run live: running" in lines and "run stopped: interrupted" in lines
    assert "run one-round: compression throughput_mbs on docker-host: untested" in lines
    # the newest run (kb) defines the series: every older run's MB/s differs from it
    assert (
        "run r0: compression throughput_mbs is MB/s \u2191 there but kB/s \u2191 in run kb: primary metrics "
        "differ" in lines
    )
    assert [p.run_id for p in h.series()[0].points] == ["kb"]


def test_select_filters_by_day_and_host(store):
    stepped(store, n=6, at=6)
    history_run(store, "elsewhere", 3, 1.0, host={**HISTORY_HOST, "hostname": "bench9"}, seed=50)
    import datetime as dt

    kept, out = select(loaded(store), since=dt.date(2026, 5, 2), until=dt.date(2026, 5, 5), host="bench1")
    assert [r.run_id for r in kept] == ["r1", "r2", "r3", "r4"]
    assert out == ["3 run(s) outside --since/--until/--host"]


def test_filters_by_environment_and_workload(store):
    for i in range(4):
        history_run(store, f"r{i}", i + 1, 1.0, envs=("native", "docker-host", "docker-nat"), seed=i)
    assert {s.cell.env for s in history(store, envs={"docker-nat"}).series()} == {"docker-nat"}
    assert history(store, workloads={"fio"}).series() == []


def test_series_of_two_host_classes_are_judged_apart(store):
    stepped(store, n=6, at=3, prefix="a")
    stepped(store, n=6, at=6, prefix="b", host={**HISTORY_HOST, "cores": 8}, day0=20)
    h = history(store)
    assert [len(g.runs) for g in h.groups] == [6, 6]
    assert [len(s.changes) for s in h.series()] == [1, 0]
    # the newest run is on the 8-core host: its series has no step
    assert h.newest.run_id == "b5" and h.gate(0) == []
    assert json.dumps([g.host.label for g in h.groups])  # labels are plain text
