"""Servers a killed run left running on the host (``isobench clean``, and the
runner's teardown): native servers keep their pidfiles in
``<TMP_ROOT>/<run>-<env>/servers/``, and a pid is killed only if it still
runs the server of a registered server workload (a recycled pid is left
alone). Each ServerWorkload says which processes are its own
(``owns_process``, from its ``server_exe``): nothing here names a server."""

from __future__ import annotations

import ipaddress
import os
import signal
from functools import partial

from isobench.clienthost.addresses import BENCH_NET
from isobench.core.owner import Keeper
from isobench.core.workspace import of_run
from isobench.workloads.registry import WORKLOADS
from isobench.workloads.server import SERVERS_DIR, ServerWorkload


def server_workloads() -> list[type[ServerWorkload]]:
    return [cls for cls in WORKLOADS.values() if issubclass(cls, ServerWorkload)]


def is_server_process(exe: str, argv: list[str]) -> bool:
    """One of the workloads' servers: exe is /proc/PID/exe's target, argv its command line."""
    return any(cls.owns_process(exe, argv) for cls in server_workloads())


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def kill_leftover_servers(tmp_root: str, run_id: str | None = None, keeper: Keeper | None = None) -> list[str]:
    """SIGKILL the servers native runs started (of one run, or all) that
    still run, but none of a live run (`keeper`'s)."""
    keeper = keeper or Keeper()
    killed: list[str] = []
    if not os.path.isdir(tmp_root):
        return killed
    for entry in sorted(os.listdir(tmp_root)):
        if run_id is not None and not of_run(entry, run_id):
            continue
        d = os.path.join(tmp_root, entry, SERVERS_DIR)
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
            if not is_server_process(exe, _cmdline(pid)):
                continue
            if not keeper.keeps_run(f"server process {pid} ({exe})", partial(of_run, entry)):
                try:
                    # start-stop-daemon --background gave the server a session of
                    # its own: its whole process group goes, so the workers a
                    # master forked (nginx, php-fpm) do not outlive it
                    if os.getsid(pid) != os.getsid(0):
                        os.killpg(os.getpgid(pid), signal.SIGKILL)
                    else:
                        os.kill(pid, signal.SIGKILL)
                    killed.append(f"server process {pid} ({exe})")
                except OSError:
                    pass
    return killed


# -- servers found by their sockets --------------------------------------------------
# A server an in-process environment started can outlive its pidfile (the run
# was ended by a signal after its scratch directory went): it is still found
# by what it holds, a socket bound to a benchmark address, and killed only if
# it is a registered workload's server.


def bench_socket_inodes(table: str) -> set[int]:
    """Inodes of the sockets in a /proc/net/{tcp,udp}[6] table bound to an
    address in the benchmarking range. Pure."""
    inodes = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10:
            continue
        addr_hex = fields[1].split(":")[0]
        try:
            raw = bytes.fromhex(addr_hex)
            addr: ipaddress.IPv4Address | ipaddress.IPv6Address
            if len(raw) == 4:  # little-endian u32
                addr = ipaddress.IPv4Address(raw[::-1])
            elif len(raw) == 16:  # four little-endian u32 words
                v6 = ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))
                addr = v6.ipv4_mapped or v6
            else:
                continue
            inode = int(fields[9])
        except ValueError:
            continue
        if addr.version == 4 and addr in BENCH_NET and inode:
            inodes.add(inode)
    return inodes


def _bench_inodes() -> set[int]:
    inodes: set[int] = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{name}") as fh:
                inodes |= bench_socket_inodes(fh.read())
        except OSError:
            continue
    return inodes


def _holders(inodes: set[int]) -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                link = os.readlink(f"/proc/{entry}/fd/{fd}")
                if link.startswith("socket:[") and int(link[8:-1]) in inodes:
                    pids.add(int(entry))
                    break
        except (OSError, ValueError):
            continue
    return pids


def kill_servers_on_bench_addresses(keeper: Keeper | None = None) -> list[str]:
    """SIGKILL every registered workload server holding a socket bound to a
    benchmark address on the host (198.18.0.0/15): nothing else binds there.
    A socket does not say whose server it is: while a run is live (`keeper`),
    all are kept."""
    keeper = keeper or Keeper()
    killed: list[str] = []
    inodes = _bench_inodes()
    if not inodes:
        return killed
    for pid in sorted(_holders(inodes)):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        what = f"server process {pid} ({exe}) bound to a benchmark address"
        if pid == os.getpid() or not is_server_process(exe, _cmdline(pid)):
            continue
        if not keeper.keeps_run(what, lambda run: True):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(what)
            except OSError:
                pass
    return killed
