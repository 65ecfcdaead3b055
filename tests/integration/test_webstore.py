"""The webstore against the real nginx, php-fpm 8.2 and PostgreSQL 15,
natively and in Docker, through `isobench run` (heavy: run under
/tmp/isobench-heavy.lock). Two instances each, a small data set, a few
seconds of load: every sample succeeds, orders are committed on every
instance, and no server or file of the workload is left afterwards."""

import json
import os
import sqlite3
import subprocess
import sys

STUDY = """
[study]
name = "webstore-it"
repetitions = 1
warmup = 0
baseline = "native"

[environments.native]
instances = 2

[environments.docker-nat]
instances = 2

[workloads.webstore]
instances = [1, 2]
customers = 1000
products = 500
users = 2
think_s = 0.05
duration_s = 4
warmup_s = 1
"""


def webstore_processes() -> list[str]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().decode(errors="replace").replace("\0", " ")
        except OSError:
            continue
        if "webstore-" in cmd and any(s in cmd for s in ("nginx", "php-fpm", "postgres")):
            out.append(f"{pid}: {cmd}")
    return out


def test_webstore_native_and_docker(tmp_path):
    (tmp_path / "study.toml").write_text(STUDY)
    store = tmp_path / "r.sqlite"
    env = {**os.environ, "ISOBENCH_STORE": str(store)}
    proc = subprocess.run([sys.executable, "-m", "isobench.cli", "run", "study.toml", "--out", "results"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    db = sqlite3.connect(store)
    rows = db.execute("SELECT env, ccase, status, error, vals FROM samples WHERE workload = 'webstore'").fetchall()
    assert {(r[0], r[1]) for r in rows} == {(e, f"instances={n}") for e in ("native", "docker-nat") for n in (1, 2)}
    assert [r for r in rows if r[2] != "ok"] == []
    for env_name, case, _, _, metrics in rows:
        values = json.loads(metrics)
        assert values["orders_per_min"] > 0, (env_name, case)
        assert 0 < values["purchase_p50_ms"] <= values["purchase_p90_ms"]
        if case == "instances=2":
            assert values["instance_1_orders_per_min"] > 0 and values["instance_2_orders_per_min"] > 0
    assert webstore_processes() == []
