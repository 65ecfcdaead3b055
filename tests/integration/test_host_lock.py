"""One run lock per host, whatever ISOBENCH_HOME says (issue 47): a run
holding it under one home refuses a run under another, and a `clean` under
another home keeps what the live run owns (its owner file, its containers'
owner labels) while removing a dead owner's.

Run under the machine's heavy lock: it takes the host's run lock."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

HOLD = """
import os, sys, time
from isobench.core.lock import RunLock
from isobench.core.owner import owning
lock = RunLock()
lock.acquire("held-under-home-a")
lock.set_run_id("run-under-a")
with owning("run-under-a"):
    os.makedirs("/dev/shm/isobench/run-under-a-native", exist_ok=True)  # a native env's scratch
    print("held", flush=True)
    time.sleep(120)
"""


def isobench(*args, home, cwd):
    env = {**os.environ, "ISOBENCH_HOME": str(home), "ISOBENCH_STORE": str(home / "r.sqlite")}
    return subprocess.run(
        [sys.executable, "-m", "isobench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_two_homes_are_one_host(tmp_path):
    study = tmp_path / "tiny.toml"
    study.write_text(
        '[study]\nname = "second"\nrepetitions = 2\nwarmup = 0\n[environments.native]\n'
        '[workloads.w]\ncommand = ["true"]\n'
    )
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD],
        env={**os.environ, "ISOBENCH_HOME": str(tmp_path / "a")},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        run = isobench("run", str(study), "--no-progress", home=tmp_path / "b", cwd=tmp_path)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
        assert "another isobench run is in progress (run run-under-a, study held-under-home-a" in run.stderr
        assert time.monotonic() - started < 60  # refused, not measured
        clean = isobench("clean", home=tmp_path / "b", cwd=tmp_path)  # not refused, nor waiting for the run
        kept = f"kept directory /dev/shm/isobench/run-under-a-native: run run-under-a is live (pid {holder.pid})"
        assert clean.returncode == 0 and kept in clean.stdout, clean.stdout + clean.stderr
        assert os.path.isdir("/dev/shm/isobench/run-under-a-native")
    finally:
        holder.kill()
        holder.wait()
    clean = isobench("clean", home=tmp_path / "b", cwd=tmp_path)  # its owner is gone: removed now
    assert "removed directory /dev/shm/isobench/run-under-a-native" in clean.stdout, clean.stdout + clean.stderr
    assert "removed owner file /run/isobench/owners/run-under-a.json" in clean.stdout


def test_clean_keeps_a_live_owners_container_only(tmp_path):
    """Owner labels: a live pid on this boot keeps its container; a pid now
    another process's (its start time differs) or of another boot does not."""
    import docker

    from isobench.core import owner
    from isobench.core.dockerclient import engine
    from isobench.images import ensure_image

    image = ensure_image(engine(), log=lambda *a, **k: None)
    client = docker.from_env(timeout=60)
    sleeper = subprocess.Popen(["sleep", "120"])
    marks = {"pid": str(sleeper.pid), "boot": owner.boot_id(), "start": str(owner.started(sleeper.pid))}
    variants = {"live": marks, "reused": {**marks, "start": "1"}, "rebooted": {**marks, "boot": "another-boot"}}
    names = {v: f"isobench-owner-test-{v}" for v in variants}
    try:
        for v, m in variants.items():
            labels = {"isobench": "1", "isobench.run": f"owner-test-{v}", **{f"isobench.{k}": x for k, x in m.items()}}
            client.containers.create(image, ["true"], name=names[v], labels=labels)
        out = isobench("clean", home=tmp_path, cwd=tmp_path).stdout
        left = {c.name for c in client.containers.list(all=True, filters={"label": "isobench=1"})}
        assert f"kept container {names['live']}: run owner-test-live is live (pid {sleeper.pid})" in out, out
        assert f"removed container {names['reused']}" in out and f"removed container {names['rebooted']}" in out
        assert names["live"] in left and not {names["reused"], names["rebooted"]} & left
    finally:
        sleeper.kill()
        sleeper.wait()
        for name in names.values():
            with contextlib.suppress(docker.errors.NotFound):
                client.containers.get(name).remove(force=True)
