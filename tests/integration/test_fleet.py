"""A fleet of three "hosts" on this machine: privileged containers from the
isobench image plus openssh-server, on an isobench-made bridge in
198.18.200.0/24, reached with a throwaway key. Real Ansible, real sshd, real
isobench runs on each. Run under the heavy lock:
  flock /tmp/isobench-heavy.lock env PYTHONPATH=$PWD/src python -m pytest tests/integration/test_fleet.py -q -s
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Three containers, each installing isobench and running a study: about 4
# minutes of a 2-core host (255 s for the four tests here on 2026-11-26), plus
# the dependency wheels and the sshd image the first time; part of the suite.
pytestmark = pytest.mark.integration

LABEL = "isobench.fleet-test=1"
NET, SUBNET = "isobench-fleet-test", "198.18.200.0/24"
HOSTS = {"h1": "198.18.200.11", "h2": "198.18.200.12", "h3": "198.18.200.13"}
ROOT = Path(__file__).resolve().parents[2]
WHEELS = Path(os.environ.get("ISOBENCH_FLEET_WHEELS", "/tmp/fleet/wheels"))

TINY = """
[study]
name = "fleet-tiny"
description = "native only, compression on a small input"
repetitions = 2
warmup = 0
baseline = "native"

[environments.native]

[workloads.compression]
size_mb = 4
threads = 1
level = 2
"""
# Rounds enough that a host killed once it has stored its first sample is
# still mid-run (each round takes seconds; the kill follows within one). Not
# bigger rounds: the two surviving hosts must measure all of them.
LONGER_ROUNDS = 8
LONGER = TINY.replace('name = "fleet-tiny"', 'name = "fleet-longer"').replace(
    "repetitions = 2", f"repetitions = {LONGER_ROUNDS}"
)


def sh(*argv, timeout=600, check=True, **kw):
    out = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, **kw)
    if check and out.returncode != 0:
        raise AssertionError(f"{argv}: {out.returncode}\n{out.stdout}\n{out.stderr}")
    return out


def base_image() -> str:
    tags = sh("docker", "images", "isobench/debian", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    if not tags:
        pytest.skip("no isobench/debian image; `isobench images build` first")
    return tags[0]


def lock_sha() -> str:
    """The lock file's digest, as run.yml marks a venv built from it."""
    return hashlib.sha256((ROOT / "requirements.lock").read_bytes()).hexdigest()


def sshd_image() -> str:
    """The isobench image plus sshd, and a venv already built from this lock
    file's wheels, marked the way run.yml marks one: hosts that start from it
    skip the dependency install (38 s a host here, three at once on 2 cores),
    which h1 still does for real (its venv removed at start, `fleet` below)."""
    base = base_image()
    lock, digest = ROOT / "requirements.lock", lock_sha()
    tag = f"isobench/fleet-sshd:{base.split(':')[1]}-{digest[:12]}"
    if not sh("docker", "images", "-q", tag).stdout.strip():
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(WHEELS, Path(d, "wheels"))
            shutil.copy(lock, Path(d, "requirements.lock"))
            venv = "/opt/isobench-fleet/venv"
            Path(d, "Dockerfile").write_text(
                f"FROM {base}\n"
                # the build's intermediate containers carry the image's labels: the base's
                # isobench=1 made one (`practical_murdock`, minutes of apt) look like a run's
                # leftover to the main lane's checks beside this lane (2026-11-29)
                "LABEL isobench=fleet-test-host\n"
                "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends"
                " openssh-server python3-venv && rm -rf /var/lib/apt/lists/* && mkdir -p /run/sshd\n"
                "COPY wheels /tmp/wheels\nCOPY requirements.lock /tmp/requirements.lock\n"
                f"RUN python3 -m venv {venv} && {venv}/bin/pip install -q --disable-pip-version-check --no-index"
                " --find-links /tmp/wheels -r /tmp/requirements.lock && rm -rf /tmp/wheels /tmp/requirements.lock"
                f" && printf %s {digest} > {venv}/isobench-lock.sha256\n"
                f"LABEL {LABEL}\n"
                'CMD ["/usr/sbin/sshd", "-D", "-e"]\n'
            )
            sh("docker", "build", "-q", "-t", tag, d, timeout=900)
    return tag


def wait_ssh(ip: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection((ip, 22), timeout=2) as s:
                if s.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"sshd on {ip} did not answer in {timeout}s")


def seed_pilot(container: str, hostname: str, scratch: Path) -> None:
    """This machine's noise pilot, when current, copied into a host as its
    own (a container shares the kernel, CPUs and boot: only the hostname in
    its identity differs). Three fresh hosts would otherwise each measure one
    (30 s, three at once on 2 cores) before their first sample; a stale
    pilot is left for them to measure, as on any new host."""
    from isobench.checks.noisepilot import CACHE_FILE, current, host_identity, load

    pilot = load(CACHE_FILE)
    if pilot is None or not current(pilot, host_identity(), time.time()):
        return
    data = pilot.to_dict()
    data["host"] = {**data["host"], "hostname": hostname}
    copy = scratch / f"pilot-{hostname}.json"
    copy.write_text(json.dumps(data))
    sh("docker", "exec", container, "mkdir", "-p", "/var/lib/isobench")
    sh("docker", "cp", str(copy), f"{container}:/var/lib/isobench/noise-pilot.json")


def isobench(*args, store, timeout=1800, check=False):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ISOBENCH_FLEET_WHEELS": str(WHEELS)}
    return sh(sys.executable, "-m", "isobench.cli.main", *args, "--store", store, timeout=timeout, check=check, env=env)


def missing_wheels() -> list[str]:
    """Lock-file pins with no wheel in WHEELS yet (a dependency added since
    the wheels were built included)."""

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    have = (
        {(norm(w.name.split("-")[0]), w.name.split("-")[1]) for w in WHEELS.glob("*.whl")} if WHEELS.exists() else set()
    )
    pins = [
        ln.strip().split("==")
        for ln in (ROOT / "requirements.lock").read_text().splitlines()
        if "==" in ln and not ln.startswith("#")
    ]
    return [f"{n}=={v}" for n, v in pins if (norm(n), v) not in have]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root and Docker Engine")
    if missing_wheels():
        WHEELS.mkdir(parents=True, exist_ok=True)
        sh(
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "-r",
            str(ROOT / "requirements.lock"),
            "-w",
            str(WHEELS),
            timeout=1800,
        )
    image = sshd_image()
    d = tmp_path_factory.mktemp("fleet")
    key = d / "id_ed25519"
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    wrong = d / "wrong_ed25519"
    sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(wrong))
    sh("docker", "network", "create", "--label", LABEL, "--subnet", SUBNET, NET)
    names = []
    try:
        for h, ip in HOSTS.items():
            name = f"isobench-fleet-{h}"
            names.append(name)  # before run: a container that fails to start is still created
            # not --privileged: this host's engine cannot grant every capability
            # ("unable to apply caps"), and a native study needs none of them
            sh(
                "docker",
                "run",
                "-d",
                "--shm-size",
                "512m",
                "--label",
                LABEL,
                # the isobench image's own label (isobench=1) would make the hosts
                # look like a run's containers to the tests beside this lane and to
                # `isobench clean`; a container's label overrides its image's
                "--label",
                "isobench=fleet-test-host",
                "--name",
                name,
                "--hostname",
                h,
                "--network",
                NET,
                "--ip",
                ip,
                "-v",
                f"{key}.pub:/root/.ssh/authorized_keys:ro",
                image,
                # h1 starts without the image's venv: the playbook's install from the shipped wheels runs for real there
                *(["sh", "-c", "rm -rf /opt/isobench-fleet && exec /usr/sbin/sshd -D -e"] if h == "h1" else []),
            )
        # what the other lane's leftover checks and `isobench clean` look for
        runs_containers = sh("docker", "ps", "-a", "--filter", "label=isobench=1", "--format", "{{.Names}}").stdout
        assert not set(runs_containers.split()) & set(names), runs_containers
        for ip in HOSTS.values():
            wait_ssh(ip)
        for name, h in zip(names, HOSTS, strict=True):
            seed_pilot(name, h, d)
        # a [group:vars] section takes one variable per line
        common = (
            "ansible_user=root\nansible_python_interpreter=/usr/bin/python3\n"
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'"
        )
        inv = d / "hosts.ini"
        inv.write_text(
            "[lab]\n"
            + "".join(f"{h} ansible_host={ip}\n" for h, ip in HOSTS.items())
            + f"\n[lab:vars]\nansible_ssh_private_key_file={key}\n{common}\n"
        )
        bad = d / "bad.ini"
        bad.write_text(
            f"[lab]\nh1 ansible_host={HOSTS['h1']} ansible_ssh_private_key_file={key}\n"
            f"gone ansible_host=198.18.200.99 ansible_ssh_private_key_file={key}\n"
            # no shared connection: the first test's ControlPersist socket to h2
            # would let the wrong key in
            f"wrongkey ansible_host={HOSTS['h2']} ansible_ssh_private_key_file={wrong} "
            "ansible_ssh_args='-o ControlMaster=no -o ControlPath=none'\n"
            f"busy ansible_host={HOSTS['h3']} ansible_ssh_private_key_file={key}\n"
            f"\n[lab:vars]\n{common}\n"
        )
        (d / "tiny.toml").write_text(TINY)
        # a value with a space on its way to the playbook (bundle and fetch paths)
        (d / "my studies").mkdir()
        (d / "my studies" / "tiny study.toml").write_text(TINY)
        hostile = d / "hostile.yml"  # YAML: INI would split these names at the space or comment
        hostile.write_text(
            "all:\n  hosts:\n    'h1;touch /tmp/isobench-pwned':\n"
            f"      ansible_host: {HOSTS['h1']}\n"
            "    'h2$(touch /tmp/isobench-pwned)':\n"
            f"      ansible_host: {HOSTS['h2']}\n"
        )
        (d / "longer.toml").write_text(LONGER)
        yield {"dir": d, "inv": str(inv), "bad": str(bad), "store": str(d / "results.sqlite"), "names": names}
    finally:
        for name in names:
            sh("docker", "rm", "-f", name, check=False)
        sh("docker", "network", "rm", NET, check=False)
        shutil.rmtree(d, ignore_errors=True)
        assert not sh("docker", "ps", "-aq", "--filter", f"label={LABEL}").stdout.strip()
        assert NET not in sh("docker", "network", "ls", "--format", "{{.Name}}").stdout.split()
        assert not d.exists()


def test_three_hosts_then_report(fleet):
    t0 = time.monotonic()
    out = isobench(
        "fleet",
        "run",
        str(fleet["dir"] / "my studies" / "tiny study.toml"),
        "-i",
        fleet["inv"],
        "--no-setup",
        "--forks",
        "3",
        "--poll",
        "2",
        "--timeout",
        "600",
        store=fleet["store"],
    )
    fleet_s = time.monotonic() - t0
    print(out.stdout, out.stderr)
    assert out.returncode == 0, out.stdout + out.stderr
    fleet_id = out.stdout.strip().splitlines()[-1].split()[1].rstrip(":")
    assert "3 of 3 host(s) complete" in out.stdout
    # h1 installed the locked dependencies and marked its venv as the image's hosts are
    for name in fleet["names"]:
        marker = sh("docker", "exec", name, "cat", "/opt/isobench-fleet/venv/isobench-lock.sha256").stdout
        assert marker.strip() == lock_sha(), name
    rep = isobench("report", fleet_id, store=fleet["store"], check=True)
    print(rep.stdout)
    for h in HOSTS:
        assert h in rep.stdout
    assert "Cross-host summary" in rep.stdout and "spread" in rep.stdout
    html = fleet["dir"] / "fleet.html"
    isobench("report", fleet_id, "--format", "html", "-o", str(html), store=fleet["store"], check=True)
    assert "<svg" in html.read_text()
    keep = Path("/tmp/fleet/report.html")
    keep.parent.mkdir(exist_ok=True)
    shutil.copy(html, keep)
    cmp = isobench("compare", f"{fleet_id}/h1", f"{fleet_id}/h2", store=fleet["store"])
    assert cmp.returncode == 0 and "error" not in cmp.stderr, cmp.stderr  # FLEET/HOST resolves to its run
    assert "A = " in cmp.stdout
    runs = isobench("runs", store=fleet["store"], check=True).stdout
    assert runs.count("fleet-tiny") >= 3
    print(f"TIMING three-host fleet {fleet_s:.1f}s")


def test_bad_hosts_one_line_each(fleet):
    # h3 holds isobench's run lock: a study is "already running" there
    hold = subprocess.Popen(
        [
            "docker",
            "exec",
            fleet["names"][2],
            "python3",
            "-c",
            "import fcntl,os,time; os.makedirs('/run/isobench',exist_ok=True);"
            "f=open('/run/isobench/run.lock','a+'); fcntl.flock(f,fcntl.LOCK_EX);"
            'f.write(\'{"pid": 1, "study": "other"}\'); f.flush(); time.sleep(300)',
        ]
    )
    try:
        time.sleep(2)
        out = isobench(
            "fleet",
            "run",
            str(fleet["dir"] / "tiny.toml"),
            "-i",
            fleet["bad"],
            "--no-setup",
            "--forks",
            "4",
            "--poll",
            "2",
            "--timeout",
            "300",
            store=fleet["store"],
        )
    finally:
        hold.kill()
        sh("docker", "exec", fleet["names"][2], "pkill", "-f", "fcntl.flock", check=False)
    print(out.stdout, out.stderr)
    assert out.returncode == 1
    lines = {ln.split(":")[0]: ln for ln in out.stdout.splitlines() if ":" in ln}
    assert "ok" in lines["h1"]
    assert "unreachable" in lines["gone"]
    assert "unreachable" in lines["wrongkey"] and "ermission denied" in lines["wrongkey"]
    assert "failed" in lines["busy"] and "another isobench run is in progress" in lines["busy"]
    assert "Traceback" not in out.stdout + out.stderr
    empty = fleet["dir"] / "empty.ini"
    empty.write_text("[lab]\n")
    out = isobench("fleet", "run", str(fleet["dir"] / "tiny.toml"), "-i", str(empty), store=fleet["store"])
    assert out.returncode == 2 and "no hosts" in out.stderr


# (round, started_at) of a run's measured samples in a host's fleet store
STORED_PY = """
import os, sqlite3, sys
p = "/var/lib/isobench-fleet/results.sqlite"
if os.path.exists(p):
    db = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
    for r, t in db.execute("SELECT round, started_at FROM samples WHERE run_id LIKE ? AND warmup=0"
                           " AND status='ok'", (sys.argv[1],)):
        print(f"{r}\\t{t}")
"""


def stored_samples(container: str, run_like: str) -> list[tuple[int, str]]:
    out = sh("docker", "exec", container, "python3", "-c", STORED_PY, run_like, check=False)
    if out.returncode != 0:  # the store is there but its tables are not yet
        return []
    return [(int(r), t) for r, t in (ln.split("\t") for ln in out.stdout.splitlines() if ln)]


def test_host_killed_mid_run_then_resume_then_clean(fleet):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ISOBENCH_FLEET_WHEELS": str(WHEELS)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "isobench.cli.main",
            "fleet",
            "run",
            str(fleet["dir"] / "longer.toml"),
            "-i",
            fleet["inv"],
            "--no-setup",
            "--forks",
            "3",
            "--poll",
            "2",
            "--timeout",
            "900",
            "--store",
            fleet["store"],
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    victim = fleet["names"][2]
    end = time.monotonic() + 600
    while time.monotonic() < end:  # wait until h3's study has stored a sample
        kept = stored_samples(victim, "%-fleet-longer-%")
        if kept:
            break
        time.sleep(0.5)
    else:
        proc.kill()
        raise AssertionError("h3 never stored a sample")
    sh("docker", "kill", victim)
    stdout, stderr = proc.communicate(timeout=1800)
    print(stdout, stderr)
    assert proc.returncode == 1
    fleet_id = stdout.strip().splitlines()[-1].split()[1].rstrip(":")
    lines = {ln.split(":")[0]: ln for ln in stdout.splitlines() if ":" in ln}
    assert "ok" in lines["h1"] and "ok" in lines["h2"]
    assert "unreachable" in lines["h3"] or "failed" in lines["h3"]
    sh("docker", "start", victim)
    wait_ssh(HOSTS["h3"])
    out = isobench(
        "fleet", "run", "--resume", fleet_id, "--no-setup", "--poll", "2", "--timeout", "900", store=fleet["store"]
    )
    print(out.stdout, out.stderr)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "h3: ok" in out.stdout and "h1:" not in out.stdout  # only the unfinished host is retried
    rep = isobench("report", fleet_id, store=fleet["store"], check=True)
    assert all(h in rep.stdout for h in HOSTS)
    # the resumed run kept the samples measured before the kill (the same
    # rounds, started when they were) and measured the rest: each round once
    import sqlite3

    db = sqlite3.connect(fleet["store"])
    run_id = db.execute("SELECT run_id FROM fleet_hosts WHERE fleet_id=? AND host='h3'", (fleet_id,)).fetchone()[0]
    rows = db.execute("SELECT round, started_at FROM samples WHERE run_id=? AND warmup=0", (run_id,)).fetchall()
    db.close()
    assert sorted(r for r, _ in rows) == list(range(LONGER_ROUNDS)), rows
    assert set(kept) <= set(rows) and len(kept) < LONGER_ROUNDS, (kept, rows)
    clean = sh(sys.executable, "-m", "isobench.cli.main", "fleet", "clean", "-i", fleet["inv"], env=env, check=False)
    print(clean.stdout, clean.stderr)
    assert clean.returncode == 0
    for name in fleet["names"]:
        left = sh(
            "docker",
            "exec",
            name,
            "sh",
            "-c",
            # [i]: pgrep -f would otherwise find this very shell, whose command line holds the pattern
            "ls -d /opt/isobench-fleet /var/lib/isobench-fleet 2>/dev/null; pgrep -f '[i]sobench run'",
            check=False,
        ).stdout.strip()
        assert left == "", f"{name}: {left}"


def test_a_hostname_with_shell_syntax_is_refused_before_ansible_runs(fleet):
    pwned = Path("/tmp/isobench-pwned")
    pwned.unlink(missing_ok=True)
    t0 = time.monotonic()
    out = isobench(
        "fleet",
        "run",
        str(fleet["dir"] / "tiny.toml"),
        "-i",
        str(fleet["dir"] / "hostile.yml"),
        "--no-setup",
        "--poll",
        "2",
        "--timeout",
        "120",
        store=fleet["store"],
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "bad host name 'h1;touch /tmp/isobench-pwned'" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert time.monotonic() - t0 < 30, "refused before any playbook ran"
    assert not pwned.exists()
    for name in fleet["names"][:2]:
        assert sh("docker", "exec", name, "test", "-e", str(pwned), check=False).returncode == 1
