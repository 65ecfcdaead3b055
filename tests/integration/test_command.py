"""Your own program as a workload, end to end against the real Docker Engine:
a study's command workload (a copied file, a setup step, a metric read from
the output) measured natively and in Docker, read back from the store and the
report; and `isobench try` with its saved study."""

import json
import sqlite3

import pytest
from tests.integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "own"
repetitions = 2
warmup = 0

[environments.native]
[environments.docker-nat]

[workloads.primes]
command = ["sysbench", "cpu", "--cpu-max-prime=3000", "--events=500", "--threads=1", "run"]

[workloads.primes.metrics.eps]
regex = 'events per second:\\s+(?P<eps>[0-9.]+)'
higher_is_better = true
unit = "ev/s"

[workloads.digest]
command = ["sha256sum", "-c", "input.sha256"]
setup = ["sh", "-c", "sha256sum input.bin > input.sha256"]
cleanup = ["rm", "-f", "input.sha256"]
files = ["input.bin"]
repeat = 2
"""


def test_a_command_workload_runs_natively_and_in_docker_and_is_stored(tmp_path):
    (tmp_path / "own.toml").write_text(STUDY)
    (tmp_path / "input.bin").write_bytes(bytes(range(256)) * 40_000)
    store = tmp_path / "r.sqlite"
    isobench("run", "own.toml", "--out", str(tmp_path / "out"), "--no-progress", store=store, cwd=tmp_path)
    db = sqlite3.connect(store)
    rows = db.execute("SELECT env, workload, status, vals, extra, error FROM samples").fetchall()
    assert len(rows) == 2 * 2 * 2 and all(r[2] == "ok" for r in rows), [r[5] for r in rows]
    for env, key, _, vals, extra, _ in rows:
        values, extra = json.loads(vals), json.loads(extra)
        assert values["wall_s"] > 0 and values["user_s"] >= 0 and values["peak_rss_mib"] > 0, (env, key, values)
        assert extra["program"]["sha256"] and extra["program"]["executable"].startswith("/usr/bin/")
        if key == "primes":
            assert values["eps"] > 0
        else:
            assert extra["runs"] == 2 and len(extra["program"]["files"]["input.bin"]) == 64
    # the same bytes everywhere: the copied file's digest, and here (the image
    # and the host are one Debian release) the executable's
    programs = {(env, key): json.loads(extra)["program"] for env, key, _, _, extra, _ in rows}
    for key in ("primes", "digest"):
        assert programs[("native", key)] == programs[("docker-nat", key)]
    primaries = db.execute("SELECT workload, metric FROM metric_defs WHERE is_primary = 1").fetchall()
    assert sorted(primaries) == [("digest", "wall_s"), ("primes", "wall_s")]
    md = isobench("report", "--format", "md", store=store, cwd=tmp_path).stdout.replace("\\_", "_")
    assert "| primes | wall_s (s) ↓ |" in md and "eps (ev/s) ↑" in md and "| digest |" in md
    assert not isobench_containers()


def test_try_measures_one_command_and_saves_its_study(tmp_path):
    store = tmp_path / "r.sqlite"
    proc = isobench(
        "try",
        "--env",
        "native",
        "--env",
        "docker-nat",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--save",
        "mine.toml",
        "--no-progress",
        "--",
        "sh",
        "-c",
        "echo hi; sleep 0.2",
        store=store,
        cwd=tmp_path,
    )
    assert "The answer" in proc.stdout and "wall_s" in proc.stdout and "stored as run " in proc.stdout
    saved = (tmp_path / "mine.toml").read_text()
    assert '[workloads.sh]\ncommand = [\n    "sh",\n    "-c",\n    "echo hi; sleep 0.2",\n]' in saved
    assert isobench("validate", "mine.toml", store=store, cwd=tmp_path).returncode == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM samples WHERE workload = 'sh' AND status = 'ok'").fetchone()[0] == 4
    assert not isobench_containers()
