"""The webstore against the real nginx, php-fpm 8.2 and PostgreSQL 15,
through `isobench run` (heavy: run under /tmp/isobench-heavy.lock):
natively and in Docker with two instances, and in one emulated VM, a small
data set, a few seconds of load: every sample succeeds, orders are
committed on every instance, and no server or file of the workload is left
afterwards. Also: a load PostgreSQL refuses, and a SIGKILLed run that
`isobench clean` tidies."""

import json
import os
import sqlite3
import subprocess
import sys
import time


def study(name: str, baseline: str, environments: str, workload: str) -> str:
    """A one-round study of the webstore, every operation equally often (a
    rare one, newcust at 2% by default, could draw no request at all in a
    few seconds, which fails the sample)."""
    return (
        f'[study]\nname = "{name}"\nrepetitions = 1\nwarmup = 0\nbaseline = "{baseline}"\n\n'
        f"{environments}\n[workloads.webstore]\n{workload}"
        "mix = { login = 1, newcust = 1, browse = 1, product = 1, purchase = 1, history = 1 }\n"
    )


STUDY = study(
    "webstore-it",
    "native",
    """
[environments.native]
instances = 2

[environments.docker-nat]
instances = 2
""",
    """instances = [1, 2]
customers = 1000
products = 500
users = 2
think_s = 0.05
duration_s = 4
warmup_s = 1
""",
)


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


def isobench_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "isobench.cli.main", *args]


def study_env(tmp_path, study: str) -> dict:
    """The study written into tmp_path; the environment of a run storing there."""
    (tmp_path / "study.toml").write_text(study)
    return {**os.environ, "ISOBENCH_STORE": str(tmp_path / "r.sqlite")}


def run_study(tmp_path, study: str, timeout: float) -> sqlite3.Connection:
    """`isobench run` of the study to its end; its store."""
    proc = subprocess.run(
        isobench_argv("run", "study.toml", "--out", "results"),
        cwd=tmp_path,
        env=study_env(tmp_path, study),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sqlite3.connect(tmp_path / "r.sqlite")


def test_webstore_native_and_docker(tmp_path):
    db = run_study(tmp_path, STUDY, 900)
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


VM_STUDY = study(
    "webstore-vm-it",
    "vm-stock",
    """
[environments.vm-stock]
vcpus = 1
memory_mb = 768
data_disk_mb = 512
""",
    """customers = 200
products = 100
users = 2
think_s = 0.05
duration_s = 4
warmup_s = 1
""",
)


def test_webstore_in_one_emulated_vm(tmp_path):
    # the whole stack inside one guest (TCG here), loaded from the client host
    # over the guest's tap: orders are committed and the guest leaves nothing
    db = run_study(tmp_path, VM_STUDY, 1500)
    rows = db.execute(
        "SELECT status, error, vals FROM samples WHERE workload = 'webstore' AND env = 'vm-stock'"
    ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [("ok", None)]
    values = json.loads(rows[0][2])
    assert values["orders_per_min"] > 0 and values["error_rate"] < 0.05
    assert 0 < values["login_p50_ms"] <= values["login_p90_ms"]
    assert subprocess.run(["pgrep", "-f", "qemu-system.*webstore-vm-it"], capture_output=True).returncode == 1


def test_a_load_that_fails_is_a_prepare_failure_not_a_hang(monkeypatch):
    # a row PostgreSQL's COPY refuses (text in an integer column): prepare
    # ends at once with one line naming the step, and the temporary server
    # it started for the load is stopped
    from isobench.envs.native import NativeEnvironment
    from isobench.host.hostinfo import HostInfo
    from isobench.workloads import get, webstore_data
    from isobench.workloads.base import WorkloadError

    real = webstore_data.tables

    def broken(*args, **kw):
        t = real(*args, **kw)
        t["inventory.tsv"] += "not-a-number\t1\t0\n"
        return t

    monkeypatch.setattr(webstore_data, "tables", broken)
    env = NativeEnvironment(name="native", run_id=f"wsload{os.getpid()}")
    env.expose("127.0.0.1", [])  # nginx's config needs an address; no server listens in prepare
    env.start()
    try:
        cls = get("webstore")
        w = cls(cls.Params(customers=100, products=100), HostInfo(cores=2, mem_bytes=1 << 30, disk_free_bytes=0))
        t0 = time.monotonic()
        try:
            w.prepare(env)
            raise AssertionError("prepare loaded a malformed inventory row")
        except WorkloadError as exc:
            text = str(exc)
        assert time.monotonic() - t0 < 120
        assert "webstore prepare in native: loading the database failed" in text, text
        assert "COPY inventory, line 101, column prod_id" in text, text  # names the table, row and column
        assert "\n" not in text.splitlines()[0] and webstore_processes() == []
        w.cleanup(env)
    finally:
        env.stop()
    assert webstore_processes() == []


def test_the_database_is_loaded_once_and_copied_to_every_instance(monkeypatch):
    # with a client host, prepare loads the data set once on it and unpacks a
    # copy of the cluster in each instance: one load for three instances, and
    # each copy is a working database of the full data set, owned by postgres
    from types import SimpleNamespace

    from isobench.envs.native import NativeEnvironment
    from isobench.host.hostinfo import HostInfo
    from isobench.workloads import get
    from isobench.workloads.webstore import Webstore

    run_id = f"wsseed{os.getpid()}"
    members = [NativeEnvironment(name=f"native-{i}", run_id=run_id) for i in range(3)]
    cls = get("webstore")
    w = cls(
        cls.Params(customers=300, products=200, instances=(3,)), HostInfo(cores=2, mem_bytes=1 << 30, disk_free_bytes=0)
    )
    w.client = SimpleNamespace(run_id=run_id)
    monkeypatch.setattr(w, "instances", lambda env, n: members[:n])
    loads = []
    real_load = Webstore._load
    monkeypatch.setattr(w, "_load", lambda member, i: (loads.append(member.name), real_load(w, member, i)))
    for m in members:
        m.expose("127.0.0.1", [])
        m.start()
    try:
        w.prepare(members[0])
        assert loads == ["webstore-seed"]
        assert not [e for e in os.listdir(os.path.dirname(members[0].paths.data)) if e.endswith("webstore-seed")]
        for i, m in enumerate(members):
            w._start_servers(m, i, ("pg",))
            try:
                r = m.exec(
                    ["psql", "-h", w._run(m, i), "-U", "postgres", "-X", "-At", "-c", "SELECT count(*) FROM customers"],
                    timeout=60,
                )
                assert r.ok and r.stdout.strip() == "300", r.describe()
            finally:
                w._stop_servers(m, i, ("pg",))
        w.cleanup(members[0])
    finally:
        for m in members:
            m.stop()
    assert webstore_processes() == []


KILL_STUDY = study(
    "webstore-kill-it",
    "native",
    """
[environments.native]
instances = 2
""",
    """instances = [2]
customers = 500
products = 200
users = 2
duration_s = 60
warmup_s = 1
""",
)


def test_sigkill_mid_load_then_clean_leaves_nothing(tmp_path):
    # the run is SIGKILLed while both stacks serve: their six servers (nginx,
    # php-fpm and PostgreSQL, with their workers) outlive it; `isobench clean`
    # finds them by their pidfiles and removes every file. The load generator
    # dies with the run (it kept loading for its whole duration before)
    from isobench.core.workspace import DATA_ROOT, TMP_ROOT

    env = study_env(tmp_path, KILL_STUDY)
    proc = subprocess.Popen(
        isobench_argv("run", "study.toml", "--out", "results"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not [p for p in webstore_processes() if "nginx" in p and "webstore-1" in p]:
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "the second instance's nginx did not start within 300 s"
            time.sleep(0.5)
        time.sleep(3)  # under load
    finally:
        proc.kill()
        proc.wait(30)
    survivors = webstore_processes()
    assert any("postgres" in p for p in survivors) and any("php-fpm" in p for p in survivors), survivors
    out = subprocess.run(isobench_argv("clean"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert webstore_processes() == [], out.stdout
    drivers = subprocess.run(["pgrep", "-f", "isobench.drivers.webstore_load"], capture_output=True, text=True)
    assert drivers.stdout == "", "the load generator outlived the killed run: " + drivers.stdout
    left = [
        os.path.join(root, e, f)
        for root in (DATA_ROOT, TMP_ROOT)
        if os.path.isdir(root)
        for e in os.listdir(root)
        for f in os.listdir(os.path.join(root, e))
        if "webstore" in f
    ]
    assert left == [], left
