"""The client host: a network namespace joined to the system under test by a
veth pair and a Linux bridge, as the studies' second machine.

::

    client netns  isobench-<run>-client          host (root netns)
    ┌──────────────────────────┐      ┌──────────────────────────────────────┐
    │ ib-XXXX-c  198.19.N.2/24 ├──────┤ ib-XXXX-h ── ib-XXXX-br 198.19.N.1/24 │
    └──────────────────────────┘ veth └──────────────────────────────────────┘

Every load generator runs in the namespace (``run``). Servers of native and
host-network environments bind the bridge address 198.19.N.1; Docker bridge
(NAT) environments publish their ports on that address, so the client
crosses Docker's DNAT exactly as a remote client would. Addresses come only
from the RFC 2544 benchmarking range 198.18.0.0/15 (N is the first /24 of
198.19.0.0/16 no route on the host uses yet).

Everything created here is named after the run (namespace) or a 4-hex tag
derived from it (links, at most 15 characters), and iptables rules carry the
comment ``isobench-<run>``, so ``clean`` can find them after a crash.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from isobench.proc import ExecResult, as_text

NETNS_PREFIX = "isobench-"
NETNS_SUFFIX = "-client"
LINK_RE = re.compile(r"^ib-[0-9a-f]{4}-(br|h|c|t[0-9]{1,2})$")
GUEST_HOST_OFFSET = 10  # guest i of a run is 198.19.N.(10 + i) on the bridge
MAX_GUESTS = 100
COMMENT_PREFIX = "isobench-"
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
CLIENT_NETS = ipaddress.ip_network("198.19.0.0/16")  # Docker's bip/pools use 198.18/16
MTU = 1500
STEP_TIMEOUT_S = 30
REACH_PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], 9), 1).close()
except ConnectionRefusedError:
    pass
"""


class ClientHostError(RuntimeError):
    pass


def tag_of(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()[:4]


def netns_name(run_id: str) -> str:
    return f"{NETNS_PREFIX}{run_id}{NETNS_SUFFIX}"


def link_names(run_id: str) -> tuple[str, str, str]:
    """(bridge, host-side veth, client-side veth); all ≤ 15 characters."""
    t = tag_of(run_id)
    return f"ib-{t}-br", f"ib-{t}-h", f"ib-{t}-c"


def tap_name(run_id: str, index: int) -> str:
    """The tap of the run's guest number `index` (0-99): ``ib-XXXX-tI``."""
    if not 0 <= index < MAX_GUESTS:
        raise ValueError(f"guest index {index} out of range")
    return f"ib-{tag_of(run_id)}-t{index}"


def guest_mac(run_id: str, index: int) -> str:
    """A deterministic locally administered MAC in QEMU's 52:54:00 prefix:
    the run's tag and the guest index."""
    t = tag_of(run_id)
    return f"52:54:00:{t[:2]}:{t[2:]}:{index:02x}"


def guest_addr(host_addr: str, index: int) -> ipaddress.IPv4Interface:
    """Guest `index`'s address on the bridge whose host side is host_addr
    (198.19.N.1): 198.19.N.(10 + index)/24, inside the benchmarking range."""
    if not 0 <= index < MAX_GUESTS:
        raise ValueError(f"guest index {index} out of range")
    net = ipaddress.ip_interface(f"{host_addr}/24").network
    addr = ipaddress.ip_interface(f"{net.network_address + GUEST_HOST_OFFSET + index}/{net.prefixlen}")
    if addr.ip not in BENCH_NET or addr.ip not in net:
        raise ValueError(f"{addr} is outside the benchmarking range")
    return addr


def _ip(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise ClientHostError(f"{shlex.join(argv)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def used_client_subnets(routes: str) -> set[int]:
    """Third octets N of 198.19.N.0/24 that `ip -4 route` output already uses."""
    used = set()
    for m in re.finditer(r"\b198\.19\.(\d+)\.\d+", routes):
        used.add(int(m.group(1)))
    return used


def pick_subnet(routes: str) -> ipaddress.IPv4Network:
    used = used_client_subnets(routes)
    for n in range(256):
        if n not in used:
            net = ipaddress.ip_network(f"198.19.{n}.0/24")
            assert net.subnet_of(CLIENT_NETS)
            return net
    raise ClientHostError("no free /24 left in 198.19.0.0/16 for a client host")


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
    def start(self) -> "ClientHost":
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.subnet = pick_subnet(_ip(["ip", "-4", "route", "show", "table", "all"]).stdout)
        plen = self.subnet.prefixlen
        _ip(["ip", "netns", "add", self.netns])
        _ip(["ip", "link", "add", self.bridge, "type", "bridge"])
        _ip(["ip", "link", "set", self.bridge, "mtu", str(MTU)])
        _ip(["ip", "addr", "add", f"{self.host_addr}/{plen}", "dev", self.bridge])
        _ip(["ip", "link", "add", self.veth_host, "mtu", str(MTU), "type", "veth",
             "peer", "name", self.veth_client, "mtu", str(MTU), "netns", self.netns])
        _ip(["ip", "link", "set", self.veth_host, "master", self.bridge])
        _ip(["ip", "link", "set", self.veth_host, "up"])
        _ip(["ip", "link", "set", self.bridge, "up"])
        ns = ["ip", "-n", self.netns]
        _ip([*ns, "link", "set", "lo", "up"])
        _ip([*ns, "addr", "add", f"{self.client_addr}/{plen}", "dev", self.veth_client])
        _ip([*ns, "link", "set", self.veth_client, "up"])
        # Only the benchmarking range is routed out of the namespace: a load
        # generator cannot reach anything else (no default route).
        _ip([*ns, "route", "add", str(BENCH_NET), "via", self.host_addr])
        # Docker sets FORWARD's policy to DROP and loads br_netfilter, so
        # frames bridged between ports of our bridge (a VM's tap and the
        # client) would be dropped; let the bridge talk to itself.
        self._add_rule(["FORWARD", "-i", self.bridge, "-o", self.bridge])
        self._wait_link()

    def _add_rule(self, spec: list[str]) -> None:
        full = [*spec, "-m", "comment", "--comment", self.comment, "-j", "ACCEPT"]
        _ip(["iptables", "-w", "5", "-I", *full])
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
            _ip(["iptables", "-w", "5", "-D", *full], check=False)
        self._rules.clear()
        _ip(["ip", "netns", "del", self.netns], check=False)
        for link in (self.veth_host, self.bridge):
            _ip(["ip", "link", "del", link], check=False)

    def __enter__(self) -> "ClientHost":
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
            proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
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
        probe = [sys.executable, "-c", "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1).close()",
                 addr, str(port)]
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


# -- clean-up of leftovers (isobench clean, next start after a crash) -------------------

def leftovers(run_id: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """(namespaces, links, iptables rule lines) that are isobench's (of one run, or all)."""
    ns_out = _ip(["ip", "netns", "list"], check=False).stdout
    namespaces = []
    for line in ns_out.splitlines():
        name = line.split()[0] if line.split() else ""
        if run_id is not None:
            if name == netns_name(run_id):
                namespaces.append(name)
        elif name.startswith(NETNS_PREFIX) and name.endswith(NETNS_SUFFIX):
            namespaces.append(name)
    link_out = _ip(["ip", "-o", "link", "show"], check=False).stdout
    prefix = f"ib-{tag_of(run_id)}-" if run_id is not None else None
    links = []
    for line in link_out.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        name = parts[1].strip().split("@")[0]
        if LINK_RE.match(name) and (prefix is None or name.startswith(prefix)):
            links.append(name)
    rules = [line for line in _iptables_save().splitlines()
             if line.startswith("-A ") and _rule_is_ours(line, run_id)]
    return namespaces, links, rules


def _iptables_save() -> str:
    try:
        return _ip(["iptables-save", "-t", "filter"], check=False).stdout
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return ""


def _rule_is_ours(line: str, run_id: str | None) -> bool:
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if "--comment" not in words:
        return False
    comment = words[words.index("--comment") + 1]
    if run_id is not None:
        return comment == f"{COMMENT_PREFIX}{run_id}"
    return comment.startswith(COMMENT_PREFIX)


def clean_network(run_id: str | None = None) -> list[str]:
    """Remove isobench's namespaces, links and iptables rules; returns what went."""
    removed = []
    try:
        namespaces, links, rules = leftovers(run_id)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return removed
    for line in rules:
        words = shlex.split(line)
        proc = _ip(["iptables", "-w", "5", "-D", *words[1:]], check=False)
        if proc.returncode == 0:
            removed.append(f"iptables rule {line}")
    for name in namespaces:
        if _ip(["ip", "netns", "del", name], check=False).returncode == 0:
            removed.append(f"network namespace {name}")
    for name in sorted(links, key=lambda n: n.endswith("-br")):  # veths and taps before bridges
        if _ip(["ip", "link", "del", name], check=False).returncode == 0:
            removed.append(f"link {name}")
    return removed


def attach(run_id: str, workloads, envs) -> ClientHost | None:
    """The runner's hook: when any workload serves from the environment,
    create the client host, tell every environment its benchmark address
    and the ports to expose (before they start), and hand the client host
    to the workloads. Returns None when no workload needs one."""
    from isobench.workloads.server import ServerWorkload

    servers = [w for w in workloads if isinstance(w, ServerWorkload)]
    if not servers:
        return None
    ch = ClientHost(run_id).start()
    ports = sorted({p for w in servers for p in w.ports})
    for env in envs:
        env.expose(ch.host_addr, ports)
    for w in servers:
        w.client = ch
    return ch


SERVER_EXES = ("/usr/bin/iperf3", "/usr/bin/sockperf", "/usr/bin/redis-server", "/usr/sbin/mariadbd")


def is_server_process(exe: str, argv: list[str]) -> bool:
    """One of the workloads' servers: a server executable, or python3 running
    isobench's api server script."""
    if exe in SERVER_EXES:
        return True
    return os.path.basename(exe).startswith("python3") and any(a.endswith("/api_server.py") for a in argv)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def kill_leftover_servers(tmp_root: str, run_id: str | None = None) -> list[str]:
    """SIGKILL servers that native runs started (pidfiles in
    <tmp_root>/<run>-<env>/servers/), only if the pid still runs one of the
    server executables (a recycled pid is left alone)."""
    killed = []
    if not os.path.isdir(tmp_root):
        return killed
    for entry in sorted(os.listdir(tmp_root)):
        if run_id is not None and not entry.startswith(run_id):
            continue
        d = os.path.join(tmp_root, entry, "servers")
        if not os.path.isdir(d):
            continue
        for f in os.listdir(d):
            if not f.endswith(".pid"):
                continue
            try:
                with open(os.path.join(d, f)) as fh:
                    pid = int(fh.read().split()[0])
                exe = os.readlink(f"/proc/{pid}/exe")
            except (OSError, ValueError, IndexError):
                continue
            if is_server_process(exe, _cmdline(pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(f"server process {pid} ({exe})")
                except OSError:
                    pass
    return killed
