"""A budgeted study for real: native against a Docker container held to 0.25
CPU. Single-threaded compression there is slowed by more than half, which
the first look resolves: that case stops after the first block while the
budget still has time, the run ends complete, and the report says how the
budget was spent."""

import json
import sqlite3
import time

import pytest

from integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "budget-tiny"
repetitions = 2
warmup = 0
baseline = "native"

[environments.native]
[environments.docker-slow]
preset = "docker-host"
cpus = 0.25

# 1 MB: the 0.25-CPU quota cuts a single thread's rate to about a quarter at
# any size (as in test_history: 0.3 s natively, 1.5 s in the container here),
# and the first block, six rounds of it, is most of what the test pays
[workloads.compression]
size_mb = 1
threads = 1
level = 2

[workloads.fio]
size_mb = 16
runtime_s = 1
ramp_s = 0
cases = ["randread"]
"""


def test_a_budgeted_study_stops_resolved_cases_early_and_ends_complete(tmp_path):
    study = tmp_path / "b.toml"
    study.write_text(STUDY)
    store = tmp_path / "r.sqlite"
    began = time.monotonic()
    out = isobench(
        "run",
        str(study),
        "--budget",
        "2m",
        "--no-progress",
        "--out",
        str(tmp_path / "res"),
        store=store,
        cwd=tmp_path,
        timeout=900,
    )
    wall = time.monotonic() - began
    assert isobench_containers() == [], out.stderr[-3000:]
    db = sqlite3.connect(store)
    status, facts = db.execute("SELECT status, host_facts FROM runs").fetchone()
    assert status == "complete", out.stderr[-3000:]
    record = json.loads(facts)["budget"]
    assert record["points"][0] == 6 and record["looks"] == len(record["points"])
    cases = record["cases"]
    # the 0.25-CPU container more than halves a single thread's throughput: resolved at the first look
    assert cases["compression/default"] == {**cases["compression/default"], "state": "resolved", "rounds": 6}
    rounds = [
        r
        for (r,) in db.execute(
            "SELECT DISTINCT round FROM samples WHERE workload='compression' AND status='ok' ORDER BY round"
        )
    ]
    assert rounds == list(range(6)), rounds  # not one round after it was resolved
    assert set(cases) == {"compression/default", "fio/randread"}
    assert all(c["state"] in ("resolved", "hopeless", "out of time") for c in cases.values()), cases
    # the time was not all spent when nothing more could be bought, and not overrun by much
    assert wall < 2 * 60 + 120, (wall, out.stderr[-2000:])
    assert "budget: " in out.stderr and "resolved" in out.stderr
    report = isobench("report", "--format", "md", store=store, cwd=tmp_path).stdout
    assert "Time budget 2 min" in report, report[-3000:]
    assert "tests at alpha = 0.05/" in report and "compression" in report
