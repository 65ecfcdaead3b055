"""The client host's lifecycle: a network namespace joined to the system
under test by a veth pair and a Linux bridge, and the load generators run
inside it.

::

    client netns  isobench-<run>-client          host (root netns)
    ┌──────────────────────────┐      ┌──────────────────────────────────────┐
    │ ib-XXXX-c  198.19.N.2/24 ├──────┤ ib-XXXX-h ── ib-XXXX-br 198.19.N.1/24 │
    └──────────────────────────┘ veth └──────────────────────────────────────┘

Every load generator runs in the namespace (``run``). Servers of native and
host-network environments bind the bridge address 198.19.N.1; Docker bridge
(NAT) environments publish their ports on that address, so the client
crosses Docker's DNAT exactly as a remote client would.
"""

from __future__ import annotations

import ipaddress
import os
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from isobench.clienthost.addresses import (
    BENCH_NET,
    COMMENT_PREFIX,
    ClientHostError,
    link_names,
    netns_name,
    pick_subnet,
)
from isobench.core.lifetime import die_with_parent
from isobench.core.lock import SUBNET_LOCK_PATH, moment
from isobench.core.proc import ExecResult, as_text, run_argv

MTU = 1500
STEP_TIMEOUT_S = 30
REACH_PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), 1).close()
except ConnectionRefusedError:
    pass
"""


def ip_step(argv: list[str], check: bool = True) -> ExecResult:
    """One `ip`/`iptables` step; with check, a failure raises ClientHostError."""
    r = run_argv(argv, STEP_TIMEOUT_S)
    if check and not r.ok:
        detail = r.describe() if r.timed_out else (r.stderr.strip() or r.stdout.strip())
        raise ClientHostError(f"{shlex.join(argv)}: {detail}")
    return r


@dataclass
class ClientRun:
    """A load generator's result plus the CPU its process used."""

    result: ExecResult
    cpu_s: float  # user + system seconds of the generator and its children


class ClientHost:
    """Context manager: ``with ClientHost(run_id) as ch: ch.run([...], 30)``."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.netns = netns_name(run_id)
        self.bridge, self.veth_host, self.veth_client = link_names(run_id)
        self.comment = f"{COMMENT_PREFIX}{run_id}"
        self.subnet: ipaddress.IPv4Network | None = None
        self._rules: list[list[str]] = []
        self.name = "client host"  # so the runner's teardown can list it beside environments

    # -- addresses ----------------------------------------------------------------
    @property
    def host_addr(self) -> str:
        """The system under test's address on the benchmark bridge."""
        if self.subnet is None:
            raise ClientHostError("client host not started")
        return str(self.subnet.network_address + 1)

    @property
    def client_addr(self) -> str:
        if self.subnet is None:
            raise ClientHostError("client host not started")
        return str(self.subnet.network_address + 2)

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> ClientHost:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        try:
            with moment(SUBNET_LOCK_PATH):  # until the bridge's address routes the /24 picked
                self.subnet = pick_subnet(ip_step(["ip", "-4", "route", "show", "table", "all"]).stdout)
                ip_step(["ip", "netns", "add", self.netns])
                ip_step(["ip", "link", "add", self.bridge, "type", "bridge"])
                ip_step(["ip", "link", "set", self.bridge, "mtu", str(MTU)])
                ip_step(["ip", "addr", "add", f"{self.host_addr}/{self.subnet.prefixlen}", "dev", self.bridge])
        except TimeoutError as exc:
            raise ClientHostError(str(exc)) from None
        plen = self.subnet.prefixlen
        ip_step(
            [
                "ip",
                "link",
                "add",
                self.veth_host,
                "mtu",
                str(MTU),
                "type",
                "veth",
                "peer",
                "name",
                self.veth_client,
                "mtu",
                str(MTU),
                "netns",
                self.netns,
            ]
        )
        ip_step(["ip", "link", "set", self.veth_host, "master", self.bridge])
        ip_step(["ip", "link", "set", self.veth_host, "up"])
        ip_step(["ip", "link", "set", self.bridge, "up"])
        ns = ["ip", "-n", self.netns]
        ip_step([*ns, "link", "set", "lo", "up"])
        ip_step([*ns, "addr", "add", f"{self.client_addr}/{plen}", "dev", self.veth_client])
        ip_step([*ns, "link", "set", self.veth_client, "up"])
        # Only the benchmarking range is routed out of the namespace: a load
        # generator cannot reach anything else (no default route).
        ip_step([*ns, "route", "add", str(BENCH_NET), "via", self.host_addr])
        # Docker sets FORWARD's policy to DROP and loads br_netfilter, so
        # frames bridged between ports of our bridge (a VM's tap and the
        # client) would be dropped; let the bridge talk to itself.
        self._add_rule(["FORWARD", "-i", self.bridge, "-o", self.bridge])
        self._wait_link()

    def _add_rule(self, spec: list[str]) -> None:
        full = [*spec, "-m", "comment", "--comment", self.comment, "-j", "ACCEPT"]
        ip_step(["iptables", "-w", "5", "-I", *full])
        self._rules.append(full)

    def _wait_link(self, timeout: float = 10) -> None:
        """The bridge port forwards once STP-less bridging settles; ping until it does."""
        deadline = time.monotonic() + timeout
        while True:
            # a refused TCP connection (RST) proves the path works without needing a listener
            r = self.run([sys.executable, "-c", REACH_PROBE, self.host_addr], timeout=5).result
            if r.ok:
                return
            if time.monotonic() > deadline:
                raise ClientHostError(f"client namespace cannot reach {self.host_addr}: {r.describe()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Delete rules, namespace (and its veth end), veth and bridge; safe twice."""
        for full in reversed(self._rules):
            ip_step(["iptables", "-w", "5", "-D", *full], check=False)
        self._rules.clear()
        ip_step(["ip", "netns", "del", self.netns], check=False)
        for link in (self.veth_host, self.bridge):
            ip_step(["ip", "link", "del", link], check=False)

    def __enter__(self) -> ClientHost:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- running load generators ----------------------------------------------------
    def argv(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def run(self, argv: list[str], timeout: float) -> ClientRun:
        """Run argv inside the namespace, killed (whole process group) after
        `timeout` s. Never raises on failure; returns the result and the
        generator's own CPU time (user + sys, from the kernel's rusage)."""
        full = self.argv(argv)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        try:
            # die_with_parent: a SIGKILLed run must not leave its load
            # generator running on (`ip netns exec` execs it in place)
            proc = subprocess.Popen(
                full,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        except FileNotFoundError as exc:
            return ClientRun(ExecResult(argv, 127, "", str(exc), 0.0), 0.0)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            out, err = proc.communicate()
        except BaseException:  # Ctrl-C: never leave a generator behind
            _kill_group(proc)
            proc.wait()
            raise
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        code = -9 if timed_out else proc.returncode
        return ClientRun(ExecResult(argv, code, as_text(out), as_text(err), wall, timed_out=timed_out), cpu)

    def wait_tcp(self, addr: str, port: int, timeout: float = 30) -> bool:
        """Until a TCP connection from the namespace to addr:port succeeds."""
        probe = [
            sys.executable,
            "-c",
            "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1).close()",
            addr,
            str(port),
        ]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.run(probe, timeout=5).result.ok:
                return True
            time.sleep(0.1)
        return False


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
