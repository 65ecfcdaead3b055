"""Many instances for real: groups of native processes and Docker
containers (pinned and not), both multi-instance workloads through the
client host (twemproxy in its namespace), a stepped stress-ng neighbour,
and nothing left behind."""

import json
import os
import sqlite3
import subprocess
import sys

import docker
import pytest

from isobench.clienthost import leftovers
from isobench.host.noise import leftover_stressors

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "many"
repetitions = 1
warmup = 0

[environments.native]
instances = 2
pin = "core"

[environments.docker-nat]
instances = 2

[workloads.api]
instances = 2
writes = 20000
rounds = 2

[workloads.redis-scaleout]
instances = [1, 2]
clients = 10
requests = 4000

[noise]
stressor = "cpu"
steps = [0, 1]
settle_s = 0.5
"""


def run_study(tmp_path, text: str) -> tuple[sqlite3.Connection, dict]:
    """`isobench run` of the study text with a store of its own; asserts it
    succeeded and returns the store and the environment the CLI ran with."""
    (tmp_path / "study.toml").write_text(text)
    store = tmp_path / "r.sqlite"
    env = {**os.environ, "ISOBENCH_STORE": str(store)}
    proc = subprocess.run(
        [sys.executable, "-m", "isobench.cli.main", "run", "study.toml", "--out", "results"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sqlite3.connect(store), env


def test_groups_noise_and_multi_instance_workloads(tmp_path):
    db, env = run_study(tmp_path, STUDY)
    rows = db.execute("SELECT env, workload, ccase, status, error FROM samples").fetchall()
    assert [r for r in rows if r[3] != "ok"] == []
    cases = {(r[0], r[1], r[2]) for r in rows}
    for env_name in ("native", "docker-nat"):
        for step in (0, 1):
            assert (env_name, "api", f"noise={step}") in cases
            for n in (1, 2):
                assert (env_name, "redis-scaleout", f"instances={n},noise={step}") in cases
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    facts = {
        env_name: json.loads(f)
        for env_name, f in db.execute("SELECT env, facts FROM env_facts WHERE run_id = ?", (run_id,))
    }
    assert facts["native"]["instances"] == 2
    cpus = sorted(os.sched_getaffinity(0))
    assert [p["host_cpu"] for p in facts["native"]["pinning"]] == [str(cpus[0]), str(cpus[1 % len(cpus)])]
    density = facts["docker-nat"]["density"]
    assert [p["n"] for p in density] == [1, 2] and all(p["startup_s"] > 0 for p in density)
    vals = json.loads(
        db.execute(
            "SELECT vals FROM samples WHERE env = 'docker-nat' AND "
            "workload = 'redis-scaleout' AND ccase = 'instances=2,noise=0'"
        ).fetchone()[0]
    )
    assert vals["rps"] > 0
    assert 0.5 <= vals["jain"] <= 1.0
    extra = db.execute("SELECT extra FROM samples WHERE workload = 'api' AND ccase = 'noise=1' LIMIT 1").fetchone()[0]
    assert json.loads(extra)["noise"]["argv"][:1] == ["stress-ng"]
    # the HTML report draws the many-instance figures
    html = tmp_path / "r.html"
    subprocess.run(
        [sys.executable, "-m", "isobench.cli.main", "report", run_id, "--format", "html", "-o", str(html)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    text = html.read_text()
    for slug in ("sweep-redis-scaleout-instances-2-noise", "per-instance-api-noise", "fairness-api-noise", "density"):
        assert f'id="fig-{slug}' in text, slug
    # nothing left: containers, stressors, client host, servers
    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"isobench.run={run_id}"}) == []
    assert leftover_stressors() == []
    assert leftovers(run_id) == ([], [], [])
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "api_server.py" not in ps and "nutcracker -c" not in ps


VM_STUDY = """
[study]
name = "many-vms"
baseline = "kvm"
repetitions = 1
warmup = 0

[environments.kvm]
preset = "vm-stock"
instances = 2
vcpus = 1
memory_mb = 512
data_disk_mb = 256
pin = "core"

[workloads.api]
instances = 2
writes = 2000
rounds = 1
"""


def test_two_pinned_guests_serve_the_api_and_report_their_footprint(tmp_path):
    db, _ = run_study(tmp_path, VM_STUDY)
    status, vals = db.execute("SELECT status || ' ' || coalesce(error, ''), vals FROM samples").fetchone()
    assert status.strip() == "ok"
    assert json.loads(vals)["instance_2_task_s"] > 0
    facts = json.loads(db.execute("SELECT facts FROM env_facts").fetchone()[0])
    assert facts["instances"] == 2 and len(facts["members"]) == 2
    density = facts["density"]
    assert [p["n"] for p in density] == [1, 2]
    assert all(p["vmm_pss_bytes"] > 50 * 2**20 for p in density)  # a booted guest's QEMU holds more than this
    cpus = sorted(os.sched_getaffinity(0))
    first_vcpu = [p["vcpu0"]["host_cpu"] for p in facts["pinning"]]
    assert first_vcpu == [cpus[0], cpus[1 % len(cpus)]]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "isobench-" not in " ".join(line for line in ps.splitlines() if "qemu-system" in line)
