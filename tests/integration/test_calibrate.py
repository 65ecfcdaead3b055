"""isobench calibrate for real: Docker containers, single-threaded
compression in each, a slowed copy planted with work (its corpus twice as
long, its throughput counted over the base size). A planted 50% slowdown is
detected and delivers about its size; the rates are stored with the run and
re-judged from the store alone."""

import json

import pytest

from integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "cal-tiny"
# 5 rounds after a warm-up: at 3 and none, a quiet run (2026-11-27, commit
# e4a66ee, nothing beside it) missed a planted 60% CPU quota (a paired t-test
# of 2 degrees of freedom, one slow first round away from a miss)
repetitions = 5
warmup = 1
baseline = "docker-host"

[environments.docker-host]

[workloads.compression]
size_mb = 4
threads = 1
level = 2
"""


def test_calibrate_detects_a_large_planted_slowdown_and_reports_what_it_delivered(tmp_path):
    study = tmp_path / "cal.toml"
    study.write_text(STUDY)
    store = tmp_path / "r.sqlite"
    out = isobench(
        "calibrate",
        str(study),
        "--sizes",
        "50",
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
    assert result["plant"] == "work"
    assert rates["planted 50%"]["hits"] == rates["planted 50%"]["n"] == 1, out.stdout
    # twice the corpus counted as the base: the rate halved, whatever the host's scheduler
    (plant,) = rates["planted 50%"]["plants"]
    assert plant["planted_pct"] == pytest.approx(50) and 40 < plant["delivered_pct"] < 60, out.stdout
    assert rates["A/A"]["n"] == 1
    again = isobench("calibrate", "--show", result["run_id"], store=store, cwd=tmp_path).stdout
    assert "planted 50%" in again and "1 of 1" in again and "each plant" in again


def test_an_environment_without_a_quota_is_refused_before_anything_starts(tmp_path):
    study = tmp_path / "cal.toml"
    study.write_text(
        STUDY.replace('baseline = "docker-host"', 'baseline = "native"').replace(
            "[environments.docker-host]", "[environments.native]"
        )
    )
    store = tmp_path / "r.sqlite"
    out = isobench("calibrate", str(study), "--plant", "quota", store=store, cwd=tmp_path, check=False)
    assert out.returncode == 2
    assert "--env: native (native) has no CPU quota (cpus)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
