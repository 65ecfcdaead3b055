"""The client host's address scheme: names of its namespace and links, the
/24 it takes in 198.19.0.0/16, and the addresses and MACs of VM guests on
its bridge. Pure functions of the run id and the routes already in use.

Addresses come only from the RFC 2544 benchmarking range 198.18.0.0/15 (N
is the first /24 of 198.19.0.0/16 no route on the host uses yet).
Everything is named after the run (namespace) or a 4-hex tag derived from
it (links, at most 15 characters), and iptables rules carry the comment
``isobench-<run>``, so ``clean`` can find them after a crash.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re

NETNS_PREFIX = "isobench-"
NETNS_SUFFIX = "-client"
LINK_RE = re.compile(r"^ib-[0-9a-f]{4}-(br|h|c|t[0-9]{1,2})$")
GUEST_HOST_OFFSET = 10  # guest i of a run is 198.19.N.(10 + i) on the bridge
MAX_GUESTS = 100
COMMENT_PREFIX = "isobench-"
BENCH_NET = ipaddress.IPv4Network("198.18.0.0/15")
CLIENT_NETS = ipaddress.IPv4Network("198.19.0.0/16")  # Docker's bip/pools use 198.18/16


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
    addr = ipaddress.IPv4Interface(f"{net.network_address + GUEST_HOST_OFFSET + index}/{net.prefixlen}")
    if addr.ip not in BENCH_NET or addr.ip not in net:
        raise ValueError(f"{addr} is outside the benchmarking range")
    return addr


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
            net = ipaddress.IPv4Network(f"198.19.{n}.0/24")
            assert net.subnet_of(CLIENT_NETS)
            return net
    raise ClientHostError("no free /24 left in 198.19.0.0/16 for a client host")
