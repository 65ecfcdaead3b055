"""The client host: a network namespace on a veth + bridge in 198.19.0.0/16,
the studies' second machine (docs/clienthost.md). addresses.py names and
numbers it, namespace.py creates it and runs load generators in it,
leftovers.py finds and removes what a crashed run left of it."""

from isobench.clienthost.addresses import (
    BENCH_NET,
    LINK_RE,
    MAX_GUESTS,
    ClientHostError,
    guest_addr,
    guest_mac,
    link_names,
    netns_name,
    pick_subnet,
    tag_of,
    tap_name,
    used_client_subnets,
)
from isobench.clienthost.leftovers import clean_network, leftovers, rule_is_ours
from isobench.clienthost.namespace import ClientHost, ClientRun

__all__ = [
    "BENCH_NET",
    "LINK_RE",
    "MAX_GUESTS",
    "ClientHost",
    "ClientHostError",
    "ClientRun",
    "clean_network",
    "guest_addr",
    "guest_mac",
    "link_names",
    "leftovers",
    "netns_name",
    "pick_subnet",
    "rule_is_ours",
    "tag_of",
    "tap_name",
    "used_client_subnets",
]
