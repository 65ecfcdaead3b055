"""`isobench explain` (cli/explain.py, run/explain.py) from a stored run to
its answer, with the run path stood in for: the follow-up study it hands
to `execute` (the path `isobench run` takes) is measured by a stand-in that
writes what a host where the overlay costs 25% and the bridge 4% would
measure. The answer comes first, the run is stored linked to the one it
explains, every format says it; bad input is one line before anything runs."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.core.metric import Metric
from isobench.envs.docker import DockerKind
from isobench.store.db import Sample, Store
from isobench.study import parse_study

STUDY = """[study]
name = "io"
repetitions = 6
warmup = 1
[environments.native]
[environments.docker-nat]
[environments.docker-host]
[workloads.fio]
size_mb = 64
runtime_s = 2
cases = ["randwrite", "randread"]
"""
# log cost of each setting of docker-nat against native on the stand-in host
COST = {"storage": math.log(0.75), "network": math.log(0.96)}
ROUNDS = 6


def add_run(store, run_id, study, facts, value_of, cases=("randwrite", "randread")):
    """A run of ``study`` whose fio iops in env, case and round are value_of(env, case, round)."""
    store.create_run(run_id, study, facts)
    for case in cases:
        store.define_metrics(run_id, "fio", case, [Metric("iops", "IO/s", True, primary=True)])
    for r in range(1 + ROUNDS):
        for case in cases:
            for env in study.environments:
                values = {"iops": value_of(env, case, r)}
                store.add_sample(
                    Sample(run_id, env, "fio", case, r, r == 0, "ok", "2026-11-27T10:00:00+0000", 3, values)
                )
    store.finish_run(run_id, "complete")


def original(env, case, r):
    noise = float(np.random.default_rng(r).normal(0, 0.01))
    cost = sum(COST.values()) if env == "docker-nat" and case == "randwrite" else 0.0
    return 10_000 * math.exp(cost + noise)


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    add_run(s, "orig", parse_study(STUDY, "studies/io.toml"), {"hostname": "bench1"}, original)
    s.close()
    monkeypatch.setattr("isobench.host.facts.host_facts", lambda: {"hostname": "bench1"})
    monkeypatch.setattr(DockerKind, "check", lambda self, spec: [])  # the engine is not asked here
    return path


@pytest.fixture
def executed(monkeypatch):
    """The follow-up studies handed to the run path, each 'measured' as the stand-in host would."""
    seen = []

    def execute(study, store, progress, **kw):
        seen.append((study, kw))
        fact = kw["facts"]["explain"]
        kept = {s["variant"]: s["setting"] for s in fact["settings"]}

        def value(env, case, r):
            moved = set(COST) if env == fact["joint"] else {kept.get(env)}
            cost = 0.0 if env == fact["baseline"] else sum(c for s, c in COST.items() if s not in moved)
            return 10_000 * math.exp(cost + float(np.random.default_rng([r, len(env), ord(env[0])]).normal(0, 0.01)))

        run_id = f"explain{len(seen)}"
        add_run(store, run_id, study, {"hostname": "bench1", **kw["facts"]}, value, cases=("randwrite",))
        return run_id

    monkeypatch.setattr("isobench.cli.execution.execute", execute)
    return seen


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_changed_cell_is_taken_apart_and_the_answer_comes_first(store, executed):
    r = invoke("explain", "orig", "--store", store)
    assert r.exit_code == 0, r.output
    [(study, kw)] = executed
    assert list(study.environments)[:2] == ["native", "docker-nat"] and "all-back" in study.environments
    assert [e.key for e in study.workloads] == ["fio"] and study.workloads[0].params.cases == ("randwrite",)
    assert study.meta.repetitions == ROUNDS and study.meta.schedule == "sequential"  # fio does not duet
    assert kw["facts"]["explain"]["explains"] == "orig"
    lines = r.stdout.splitlines()
    first = lines[0]
    assert first.startswith("docker-nat fio randwrite \u221227.6% [")
    assert first.index("storage volume\u2192overlay \u221224.3% [") < first.index(
        "network host\u2192bridge \u22123.7% ["
    )
    said = " ".join(r.stdout.split())
    assert "the parts add up as log ratios" in said and "stored as run explain1" in said
    assert "do not add up" not in said
    facts = Store(store).run_facts("explain1")
    assert facts["explain"]["env"] == "docker-nat" and facts["explain"]["explains"] == "orig"


def test_every_format_says_it(store, executed, tmp_path):
    doc = json.loads(invoke("explain", "orig", "--store", store, "--format", "json").stdout)
    assert doc["schema"] == "isobench.explain" and doc["explains"] == "orig"
    [run] = doc["runs"]
    [answer] = run["answers"]
    assert run["env"] == "docker-nat" and run["baseline"] == "native"
    parts = {p["setting"]: p for p in answer["parts"]}
    assert parts["storage"]["pct"] == pytest.approx(-25.0, abs=1.5) and parts["storage"]["pct_high"] < 0
    assert answer["adds_up"] is True and answer["explained_share"] == pytest.approx(1.0, abs=0.2)
    assert answer["unexplained"]["pct_low"] <= 0 <= answer["unexplained"]["pct_high"]
    md = invoke("explain", "orig", "--store", store, "--format", "md").stdout
    assert "## Which setting costs what: docker-nat against native (explains run orig)" in md
    assert "storage volume\u2192overlay" in md and "\u2588" in md  # the waterfall, in characters
    page = tmp_path / "e.html"
    r = invoke("explain", "orig", "--store", store, "--format", "html", "-o", str(page))
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "Which setting costs what" in html and "the gap, setting by setting" in html and "<svg" in html
    report = invoke("report", "explain1", "--store", store).stdout  # and the stored run's report says it
    assert "Which setting costs what" in report and "docker-nat fio randwrite" in report


def test_a_cell_and_settings_can_be_chosen(store, executed):
    r = invoke("explain", "orig", "--store", store, "--cell", "fio/randread", "--env", "docker-host")
    assert r.exit_code == 0, r.output
    study, _ = executed[-1]
    assert list(study.environments)[1] == "docker-host" and study.workloads[0].params.cases == ("randread",)
    args = ("--cell", "fio/randwrite", "--env", "docker-nat", "--factorial", "--setting", "storage")
    r = invoke("explain", "orig", "--store", store, *args, "--setting", "network")
    assert r.exit_code == 0, r.output
    study, _ = executed[-1]
    assert list(study.environments) == ["native", "docker-nat", "network-back", "storage-back", "all-back"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--cell", "fio/seqread"), "--cell fio/seqread: not a cell of run orig; write WORKLOAD/CASE, one of: "),
        (("--env", "docker-host"), "--cell, --env: no changed primary cell of run orig is that one (changed: "),
        (("--env", "native"), "--env native: not an environment of run orig other than its baseline: "),
        (
            ("--env", "docker-nat", "--setting", "hugepages"),
            "--setting hugepages: a docker environment has no such setting; its settings: network, storage,",
        ),
        (("--factorial", "--setting", "storage"), "--factorial: name the two settings to cross,"),
        (("--budget", "1m"), "--budget 1m: too short for this explain of docker-nat: its first block is "),
    ],
)
def test_bad_input_is_one_line_before_anything_runs(store, executed, args, line):
    r = invoke("explain", "orig", "--store", store, *args)
    assert r.exit_code == 2 and not executed
    said = " ".join(r.stderr.split())
    assert line in said and "Traceback" not in r.output
    if args[0] == "--budget":
        assert said.rstrip().endswith("m") and "give at least " in said


def test_a_run_with_no_changed_cell_names_what_would_work(tmp_path, executed, monkeypatch):
    path = str(tmp_path / "s.sqlite")
    add_run(Store(path), "flat", parse_study(STUDY, "io.toml"), {}, lambda e, c, r: 10_000 * (1 + 0.01 * (r % 3)))
    r = invoke("explain", "flat", "--store", path)
    assert r.exit_code == 2 and not executed
    assert "run flat has no changed primary cell: name the one to explain, --cell WORKLOAD/CASE --env ENV" in (
        " ".join(r.stderr.split())
    )


def test_a_run_from_another_host_is_measured_here_and_says_so(store, executed, monkeypatch):
    monkeypatch.setattr("isobench.host.facts.host_facts", lambda: {"hostname": "laptop"})
    r = invoke("explain", "orig", "--store", store)
    assert r.exit_code == 0 and executed
    assert "note: run orig was measured on bench1; explain measures on this host (laptop)" in " ".join(r.stderr.split())


def test_an_imported_run_needs_trust_and_one_whose_study_cannot_be_rebuilt_is_refused(tmp_path, executed):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    add_run(s, "imp", parse_study(STUDY, "io.toml"), {"imported": {"from": "x"}}, original)
    r = invoke("explain", "imp", "--store", path)
    assert r.exit_code == 2 and "came in through `isobench import`" in r.stderr and not executed
    with s.db:
        s.db.execute("UPDATE runs SET study_text = ? WHERE run_id = 'imp'", (STUDY.replace("fio]", "nosuch]", 1),))
    r = invoke("explain", "imp", "--store", path, "--trust-imported")
    said = " ".join(r.stderr.split())
    assert r.exit_code == 2 and "run imp: its stored study cannot be rebuilt here (" in said and not executed


def test_an_explain_run_is_not_explained_again(store, executed):
    assert invoke("explain", "orig", "--store", store).exit_code == 0
    r = invoke("explain", "explain1", "--store", store)
    assert r.exit_code == 2 and "run explain1 is itself an explain (of run orig)" in " ".join(r.stderr.split())


def test_a_setting_this_host_cannot_run_is_said_and_left_out(store, executed, monkeypatch):
    rootless = '"host" would not be this host\'s own namespace: this Docker Engine is rootless'
    monkeypatch.setattr(DockerKind, "check", lambda self, spec: [("pid", rootless)] if spec.pid == "host" else [])
    r = invoke("explain", "orig", "--store", store)
    assert r.exit_code == 0, r.output
    [(study, _)] = executed
    assert "pid-back" not in study.environments and "ipc-back" in study.environments
    assert study.environments["all-back"].pid == "private"  # the joint moves only what was measured
    assert f"note: pid host\u2192private: not measured: {rootless}" in " ".join(r.stderr.split())
