"""A real guest under TCG: boot, run commands through the guest agent,
timeouts, write_file, and nothing left behind after stop, SIGINT or SIGKILL.
Each boot takes ~4-10 s on 2 cores."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest

from isobench.core.owner import owning
from isobench.core.workspace import DATA_ROOT
from isobench.envs.vm.environment import SOCKET_ROOT, VmEnvironment
from isobench.envs.vm.kind import is_isobench_qemu
from isobench.envs.vm.spec import VmSpec
from isobench.run.clean import clean

pytestmark = pytest.mark.integration

SPEC = VmSpec(vcpus=1, memory_mb=1024, accel="tcg", data_disk_mb=512)


def isobench_qemus(run_id: str, study: str = "") -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        argv = [a.decode() for a in argv if a]
        if is_isobench_qemu(argv, run_id) and study in argv[argv.index("-name") + 1]:
            found.append(pid)
    return found


def leftovers(run_id: str) -> list[str]:
    files = [
        e for root in (DATA_ROOT, SOCKET_ROOT) if os.path.isdir(root) for e in os.listdir(root) if e.startswith(run_id)
    ]
    return isobench_qemus(run_id) + files


@pytest.fixture(scope="module")
def vm():
    env = VmEnvironment(name="itest", spec=SPEC, run_id=f"itest{os.getpid()}")
    with owning(env.run_id):  # a global `isobench clean` beside it keeps it
        env.start()
        yield env
        env.stop()
    assert leftovers(env.run_id) == []


@pytest.mark.beside
def test_boot_facts(vm):
    f = vm.facts()
    assert f["accel"] == "tcg" and f["emulated"] is True
    assert f["cpu_model_used"] == "qemu64"
    assert 0 < f["boot"]["guest_kernel_s"] < f["boot"]["ready_s"] < 120


@pytest.mark.beside
def test_exec_output_and_exit_code(vm):
    r = vm.exec(["sh", "-c", "echo out; echo err >&2; exit 7"], timeout=30)
    assert (r.returncode, r.stdout, r.stderr, r.timed_out) == (7, "out\n", "err\n", False)
    r = vm.exec(["pwd"], timeout=30, cwd="/isobench/data")
    assert r.ok and r.stdout == "/isobench/data\n"
    assert vm.exec(["no-such-tool-isobench"], timeout=30).returncode != 0


@pytest.mark.beside
def test_exec_timeout_kills(vm):
    t0 = time.monotonic()
    r = vm.exec(["sleep", "60"], timeout=2)
    assert r.timed_out and not r.ok and time.monotonic() - t0 < 20
    assert vm.exec(["pgrep", "-x", "sleep"], timeout=30).returncode == 1


@pytest.mark.beside
def test_write_file_and_mounts(vm):
    data = os.urandom(5 * 1024 * 1024 + 3)
    vm.write_file("/isobench/tmp/sub/blob", data)
    r = vm.exec(["sha256sum", "/isobench/tmp/sub/blob"], timeout=60)
    assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    mounts = vm.exec(["cat", "/proc/mounts"], timeout=30).stdout
    assert " /isobench/tmp tmpfs " in mounts and " /isobench/data ext4 " in mounts


def test_interrupted_run_leaves_nothing(tmp_path):
    """SIGINT of `isobench run` stops the VM; SIGKILL leaves files that
    `isobench clean` removes (QEMU dies with its parent)."""
    study = tmp_path / "s.toml"
    study.write_text(
        '[study]\nname = "vmint"\nrepetitions = 1\nwarmup = 0\n'
        '[environments.native]\n[environments.v]\nkind = "vm"\nvcpus = 1\nmemory_mb = 1024\n'
        'accel = "tcg"\ndata_disk_mb = 512\n'
        "[workloads.fio]\nsize_mb = 16\nruntime_s = 30\nramp_s = 0\n"
    )
    env = {**os.environ, "ISOBENCH_STORE": str(tmp_path / "s.sqlite")}
    isobench = os.path.join(os.path.dirname(sys.executable), "isobench")
    for sig in (signal.SIGINT, signal.SIGKILL):
        before = set(isobench_qemus("", "-vmint-"))
        log = tmp_path / f"run-{sig}.log"
        proc = subprocess.Popen(
            [isobench, "run", str(study), "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w")
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not set(isobench_qemus("", "-vmint-")) - before:
            time.sleep(0.2)
        mine = set(isobench_qemus("", "-vmint-")) - before
        assert mine, f"the run never started its VM: {log.read_text()[-500:]}"
        names = [open(f"/proc/{p}/cmdline", "rb").read().split(b"\0") for p in mine]
        run_ids = {n[n.index(b"-name") + 1].decode().split(",")[0][len("isobench-") : -len("-v")] for n in names}
        time.sleep(3)
        proc.send_signal(sig)
        proc.wait(120)
        if sig == signal.SIGKILL:
            for run_id in run_ids:
                clean(run_id)
        t_end = time.monotonic() + 15
        while time.monotonic() < t_end and mine & set(isobench_qemus("", "-vmint-")):
            time.sleep(0.2)
        assert not (mine & set(isobench_qemus("", "-vmint-"))), f"qemu left after {sig!r}"
        left = [
            e
            for root in (DATA_ROOT, SOCKET_ROOT)
            if os.path.isdir(root)
            for e in os.listdir(root)
            if "vmint" in e and e.endswith((".vm", "-v"))
        ]
        assert left == [], f"files left after {sig!r}: {left}"
