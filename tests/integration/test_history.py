"""isobench history for real: six runs of a tiny study (single-threaded
compression, native and docker-host), the docker-host CPU quota lowered
from 1.0 to 0.25 in the study file between the third and the fourth run.
History finds that one step, at that place, names the quota (and the study
edit) as what changed, and --fail-on-change 5 exits 1. About a minute on
2 cores."""

import xml.etree.ElementTree as ET

import pytest

from integration.test_cli_run import isobench, isobench_containers

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "hist-tiny"
repetitions = 4
warmup = 1
baseline = "native"

[environments.native]
[environments.docker-host]
cpus = {cpus}

# 1 MB: the step is the quota's (a quarter), not the corpus's; a sample's
# own noise is small beside the 20-30 points between runs the step's test
# counts, and the container's samples at a quarter CPU take 4x as long
# (2 MB took the six runs 78 s here, 1 MB 49 s)
[workloads.compression]
size_mb = 1
threads = 1
level = 2
"""

CELL = "compression throughput_mbs on docker-host"


def test_history_finds_the_quota_step_where_it_was_made(tmp_path):
    store = tmp_path / "r.sqlite"
    study = tmp_path / "hist.toml"
    for i in range(6):
        # a quarter, at 4 rounds: a 30% step (0.7) and a halving (0.5) at 3 rounds
        # were each missed once on this shared host, whose runs read the same
        # quota 20 to 30 points apart (the step's test counts that spread)
        study.write_text(STUDY.format(cpus="1.0" if i < 3 else "0.25"))
        isobench(
            "run",
            str(study),
            "--run-id",
            f"hist-{i}",
            "--out",
            str(tmp_path / "results"),
            "--no-progress",
            store=store,
            cwd=tmp_path,
        )
    assert isobench_containers() == []

    md = isobench("history", "hist-tiny", "--format", "md", store=store, cwd=tmp_path).stdout
    plain = md.replace("\\_", "_")
    steps = [line for line in plain.splitlines() if line.startswith("- **compression ")]
    assert len(steps) == 1, md  # one step, in the one series
    assert steps[0].startswith(f"- **{CELL}:** worse step"), md
    assert "between run hist-2 (" in steps[0] and ") and run hist-3 (" in steps[0], md
    assert "  - docker-host options.cpus 1.0 -> 0.25" in plain, md
    assert "  - study hash " in plain, md  # the edit is a fact of the step, not a new series
    assert "Study file edited" in plain and "hist-3" in plain

    junit = tmp_path / "history.xml"
    gate = isobench(
        "history", "hist-tiny", "--fail-on-change", "5", "--junit", str(junit), store=store, cwd=tmp_path, check=False
    )
    assert gate.returncode == 1, gate.stdout + gate.stderr
    failing = [line for line in gate.stderr.splitlines() if line.strip().startswith(CELL)]
    assert len(failing) == 1, gate.stderr
    assert "between run hist-2" in failing[0] and "docker-host options.cpus 1.0 -> 0.25" in failing[0]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    # a gate beyond the step's size passes
    assert (
        isobench("history", "hist-tiny", "--fail-on-change", "90", store=store, cwd=tmp_path, check=False).returncode
        == 0
    )
