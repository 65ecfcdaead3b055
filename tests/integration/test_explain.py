"""`isobench explain` end to end against the real engine: a run where a
container differs from native only by a CPU quota (the placebo's least
isolation plus cpus = 0.25, a planted slowdown of about three quarters for
one thread), then the explain of its changed cell. The follow-up run is
stored linked to the run it explains, the one setting (cpus) holds the gap
with an interval that excludes no change, the answer comes first, and
nothing is left behind."""

import json
import sqlite3

import pytest

from integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "explain-planted"
repetitions = 4
warmup = 1
baseline = "native"

[environments.native]
[environments.docker-quota]
preset = "docker-placebo"
cpus = 0.25

# 2 MB: a 0.25-CPU quota cuts one thread's rate to about a quarter at any size
[workloads.compression]
size_mb = 2
threads = 1
level = 2
"""


def test_a_planted_quota_is_explained_by_the_one_setting_and_nothing_is_left(tmp_path):
    study = tmp_path / "p.toml"
    study.write_text(STUDY)
    store = tmp_path / "r.sqlite"
    isobench("run", str(study), "--no-progress", "--out", str(tmp_path / "res"), store=store, cwd=tmp_path)
    (run_id,) = sqlite3.connect(store).execute("SELECT run_id FROM runs").fetchone()
    out = isobench("explain", run_id, "--no-progress", "--format", "json", store=store, cwd=tmp_path, timeout=900)
    assert isobench_containers() == [], out.stderr[-3000:]
    doc = json.loads(out.stdout)
    assert doc["schema"] == "isobench.explain" and doc["explains"] == run_id
    [explain] = doc["runs"]
    assert explain["env"] == "docker-quota" and explain["baseline"] == "native"
    [answer] = explain["answers"]
    assert (answer["workload"], answer["case"]) == ("compression", "default")
    [part] = answer["parts"]
    assert part["setting"] == "cpus" and part["label"] == "cpus none\u21920.25"
    assert part["pct_high"] < 0  # the quota's part excludes no change
    assert answer["explained_share"] >= 0.9, answer["line"]
    assert answer["interaction"] is None and answer["adds_up"] is True
    db = sqlite3.connect(store)
    status, facts = db.execute("SELECT status, host_facts FROM runs WHERE run_id = ?", (explain["run_id"],)).fetchone()
    assert status == "complete" and json.loads(facts)["explain"]["explains"] == run_id
    # the terminal says the answer first, from the store alone
    again = isobench("report", explain["run_id"], store=store, cwd=tmp_path).stdout
    assert "Which setting costs what: docker-quota against native" in again
