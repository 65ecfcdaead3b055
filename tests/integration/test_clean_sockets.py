"""`isobench clean` finds a workload server that outlived its run's pidfile
(the case of an in-process environment ended by a signal): a real iperf3
bound to a benchmark address with parent pid 1 is killed; one bound to
loopback, not a benchmark address, is left alone."""

import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

LINK, ADDR, PORT = "ibcltest0", "198.19.253.1", 15987


def sh(*argv, check=True):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=check)


def iperf3_pids(bind: str) -> list[int]:
    out = sh("pgrep", "-f", f"iperf3 -s --bind {bind}", check=False).stdout
    return [int(p) for p in out.split()]


def test_clean_kills_a_server_bound_to_a_benchmark_address(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    sh("ip", "link", "add", LINK, "type", "veth", "peer", "name", LINK + "p")  # no dummy module here
    try:
        sh("ip", "addr", "add", f"{ADDR}/32", "dev", LINK)
        sh("ip", "link", "set", LINK, "up")
        # -D: iperf3 daemonises, its parent is pid 1 and no pidfile of isobench names it
        sh("iperf3", "-s", "--bind", ADDR, "-p", str(PORT), "-D")
        sh("iperf3", "-s", "--bind", "127.0.0.1", "-p", str(PORT), "-D")
        time.sleep(0.5)
        assert iperf3_pids(ADDR) and iperf3_pids("127.0.0.1")
        out = subprocess.run(
            [sys.executable, "-m", "isobench.cli.main", "clean"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "ISOBENCH_STORE": str(tmp_path / "s.sqlite")},
        )
        assert out.returncode == 0, out.stderr
        assert "bound to a benchmark address" in out.stdout
        time.sleep(0.3)
        assert iperf3_pids(ADDR) == []
        assert iperf3_pids("127.0.0.1"), "a server outside the benchmark range is not isobench's"
    finally:
        for pid in iperf3_pids(ADDR) + iperf3_pids("127.0.0.1"):
            os.kill(pid, 9)
        sh("ip", "link", "del", LINK, check=False)
