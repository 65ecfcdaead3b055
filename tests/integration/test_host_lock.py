"""One run lock per host, whatever ISOBENCH_HOME says (issue 47): a run
holding it under one home refuses a run and a `clean` under another.

Run under the machine's heavy lock: it takes the host's run lock."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

HOLD = """
import sys, time
from isobench.core.lock import RunLock
lock = RunLock()
lock.acquire("held-under-home-a")
lock.set_run_id("run-under-a")
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
        clean = isobench("clean", home=tmp_path / "b", cwd=tmp_path)
        assert clean.returncode == 2 and "clean would remove its environments" in clean.stderr, clean.stderr
    finally:
        holder.kill()
        holder.wait()
