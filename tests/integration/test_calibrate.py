"""isobench calibrate for real: Docker containers with a planted CPU quota,
single-threaded compression in each. A planted 60% slowdown is detected; the
rates are stored with the run and re-judged from the store alone."""

import json

import pytest

from integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "cal-tiny"
# 5 rounds after a warm-up: at 3 and none, a quiet run (2026-11-27, commit
# e4a66ee, nothing beside it) missed the planted 60% (a paired t-test of 2
# degrees of freedom, one slow first round away from a miss)
repetitions = 5
warmup = 1
baseline = "docker-host"

[environments.docker-host]

[workloads.compression]
size_mb = 4
threads = 1
level = 2
"""


def test_calibrate_detects_a_large_planted_slowdown(tmp_path):
    study = tmp_path / "cal.toml"
    study.write_text(STUDY)
    store = tmp_path / "r.sqlite"
    out = isobench(
        "calibrate",
        str(study),
        "--sizes",
        "60",
        "--copies",
        "1",
        "--no-progress",
        "--format",
        "json",
        "-o",
        str(tmp_path / "cal.json"),
        store=store,
        cwd=tmp_path,
    )
    assert isobench_containers() == [], out.stderr[-3000:]
    result = json.loads((tmp_path / "cal.json").read_text())
    rates = {r["label"]: r for r in result["rates"]}
    assert rates["planted 60%"]["hits"] == rates["planted 60%"]["n"] == 1, out.stdout
    # the quota took about what was planted from a CPU-bound single thread
    assert 40 < rates["planted 60%"]["measured_pct"] < 200, out.stdout
    assert rates["A/A"]["n"] == 1
    again = isobench("calibrate", "--show", result["run_id"], store=store, cwd=tmp_path).stdout
    assert "planted 60%" in again and "1 detected" in again


def test_an_environment_without_a_quota_is_refused_before_anything_starts(tmp_path):
    study = tmp_path / "cal.toml"
    study.write_text(
        STUDY.replace('baseline = "docker-host"', 'baseline = "native"').replace(
            "[environments.docker-host]", "[environments.native]"
        )
    )
    store = tmp_path / "r.sqlite"
    out = isobench("calibrate", str(study), store=store, cwd=tmp_path, check=False)
    assert out.returncode == 2
    assert "--env: native (native) has no CPU quota (cpus)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
