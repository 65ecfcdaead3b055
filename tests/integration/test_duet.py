"""A duet study end to end against the real Docker Engine: the baseline's
sample and each container's run at the same time on their own CPUs, both
stored with their duet's record, and nothing is left behind."""

import json
import sqlite3
from datetime import datetime

import pytest
from tests.integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

DUET = """
[study]
name = "duet"
repetitions = 2
warmup = 0
schedule = "duet"

[environments.native]
[environments.docker-nat]
[environments.docker-host]

# 4 MB: 1.0 to 1.9 s a sample on one CPU here, above the 0.6 s the rotation
# check below needs of the four compression duets (8 MB made each twice as long)
[workloads.compression]
size_mb = 4

[workloads.hpcc]
n = 400
nb = 80
"""


def test_a_duet_study_runs_both_sides_at_once_and_leaves_nothing(tmp_path):
    study = tmp_path / "duet.toml"
    study.write_text(DUET)
    store = tmp_path / "r.sqlite"
    out = isobench("run", str(study), "--out", str(tmp_path / "results"), store=store, cwd=tmp_path)
    assert isobench_containers() == [], out.stderr[-3000:]
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "complete"
    rows = db.execute(
        "SELECT env, workload, round, started_at, wall_s, extra FROM samples WHERE status='ok' ORDER BY id"
    ).fetchall()
    # 2 duets (native beside each container) x 2 samples x 2 workloads x 2 rounds
    assert len(rows) == 16, out.stderr[-2000:]
    duets = {}
    for env, workload, round_, started, wall, extra in rows:
        record = json.loads(extra)["duet"]
        start = record["started"]
        assert abs(start - datetime.fromisoformat(started).timestamp()) < 1.5
        duets.setdefault((workload, round_, frozenset({env, record["partner"]})), []).append(
            (env, start, start + wall, record)
        )
    assert len(duets) == 8
    rotated = 0
    for pair in duets.values():
        (env_a, s_a, e_a, rec_a), (env_b, s_b, e_b, rec_b) = pair
        assert "native" in (env_a, env_b)
        assert max(s_a, s_b) < min(e_a, e_b), f"the two samples did not overlap: {pair}"
        assert rec_a["cpus"] != rec_b["cpus"]
        assert rec_a["skew_s"] < 1.0 and min(rec_a["overlap"], rec_b["overlap"]) > 0.5
        # the sides swapped CPUs while both ran (every 0.1 s): the docker one
        # by its cpuset, native's running processes by their affinity
        assert "rotate_error" not in rec_a and "rotate_error" not in rec_b
        if min(e_a - s_a, e_b - s_b) > 0.6:
            assert rec_a["swaps"] >= 2 and 0.15 < rec_a["home_share"] < 0.85, pair
            rotated += 1
    assert rotated >= 4, duets  # compression's four duets take over a second a sample
    facts = json.loads(db.execute("SELECT host_facts FROM runs").fetchone()[0])
    assert facts["schedule"]["name"] == "duet"
    assert set(facts["schedule"]["cells"].values()) == {"duet"}
    report = isobench("report", "--format", "md", store=store, cwd=tmp_path).stdout
    assert "duet" in report
    # each side's libraries under the tools, read inside it: pixz's liblzma5 and libc6
    for env in ("native", "docker-nat"):
        (kept,) = db.execute("SELECT facts FROM env_facts WHERE env = ?", (env,)).fetchone()
        libraries = json.loads(kept)["library_versions"]
        assert libraries["libc6"] and libraries["liblzma5"], (env, libraries)
