"""Issue 55, 18: a native duet sample's processes never outlive isobench.
After SIGTERM (or SIGINT) mid-duet, the teardown kills them with their
cgroups; after SIGKILL, `isobench clean` does. Real runs of a command
table as a duet of two native environments, stopped while its samples run."""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from tests.integration.test_cli_run import isobench, ok_samples

pytestmark = pytest.mark.integration

STUDY = """
[study]
name = "outlive"
repetitions = 20
warmup = 0
schedule = "duet"

[environments.native]
[environments.native-b]
kind = "native"

[workloads.spin]
command = ["sh", "-c", "i=0; while [ $i -lt 2500000 ]; do i=$((i+1)); done", "{marker}"]
duet = true
"""


def marked(marker: str) -> list[int]:
    """Live processes whose command line holds the marker (zombies are gone)."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    with open(f"/proc/{pid}/stat") as st:
                        if st.read().rsplit(")", 1)[1].split()[0] != "Z":
                            out.append(int(pid))
        except OSError:
            continue
    return out


def start(tmp_path, marker: str):
    study = tmp_path / "outlive.toml"
    study.write_text(STUDY.format(marker=marker))
    store = tmp_path / "r.sqlite"
    log = open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "isobench.cli.main", "run", str(study), "--out", str(tmp_path / "results")],
        cwd=tmp_path,
        env={**os.environ, "ISOBENCH_STORE": str(store)},
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.time() + 300
    # the probe sample alone, then duets: stop it while a duet's two commands run
    while time.time() < deadline and proc.poll() is None and (ok_samples(store) < 3 or len(marked(marker)) < 2):
        time.sleep(0.1)
    assert proc.poll() is None and len(marked(marker)) >= 2, (tmp_path / "stderr.log").read_text()[-1500:]
    return proc, store


def test_a_signal_mid_duet_leaves_no_native_process(tmp_path):
    """SIGTERM (SIGINT takes the same way: core/lifetime.interrupt_on_signals)."""
    marker = f"isobench-outlive-{uuid.uuid4().hex[:8]}"
    proc, _ = start(tmp_path, marker)
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 130, (tmp_path / "stderr.log").read_text()[-1500:]
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.5)
    assert marked(marker) == []


def test_sigkill_mid_duet_then_clean_leaves_no_native_process(tmp_path):
    marker = f"isobench-outlive-{uuid.uuid4().hex[:8]}"
    proc, store = start(tmp_path, marker)
    proc.kill()
    proc.wait(30)
    left = marked(marker)
    out = isobench("clean", store=store, cwd=tmp_path).stdout
    time.sleep(0.5)
    assert marked(marker) == [], (left, out)
