"""Client host naming, address choice and leftover matching (pure parts)."""

import ipaddress

from isobench.clienthost import (
    BENCH_NET,
    LINK_RE,
    link_names,
    netns_name,
    pick_subnet,
    rule_is_ours,
    used_client_subnets,
)

# RFC 1918 ranges, spelled as (first address, prefix) so no private literal appears in code
PRIVATE = [
    ipaddress.IPv4Network((first << 24 | second << 16, prefix))
    for first, second, prefix in ((10, 0, 8), (172, 16, 12), (192, 168, 16))
]


def test_names_fit_the_kernel_limits_and_are_recognisable():
    run = "20261121-053825-network-quick-e436"
    assert netns_name(run) == f"isobench-{run}-client"
    for name in link_names(run):
        assert len(name) <= 15 and LINK_RE.match(name)
    assert link_names(run) != link_names(run + "x")


def test_subnet_is_in_the_benchmarking_range_and_avoids_used_ones():
    routes = (
        "default via 192.0.2.1 dev eth0\n198.18.0.0/24 dev docker0 proto kernel\n"
        "198.19.0.0/24 dev ib-abcd-br proto kernel scope link src 198.19.0.1\n"
    )
    assert used_client_subnets(routes) == {0}
    net = pick_subnet(routes)
    assert net == ipaddress.ip_network("198.19.1.0/24")
    assert net.subnet_of(BENCH_NET)
    assert not any(net.overlaps(p) for p in PRIVATE)
    assert pick_subnet("") == ipaddress.ip_network("198.19.0.0/24")


def test_only_isobench_comments_match():
    ours = "-A FORWARD -i ib-abcd-br -o ib-abcd-br -m comment --comment isobench-run1 -j ACCEPT"
    theirs = '-A FORWARD -i br0 -m comment --comment "my rule" -j ACCEPT'
    plain = "-A FORWARD -o docker0 -j DOCKER"
    assert rule_is_ours(ours, None) and rule_is_ours(ours, "run1")
    assert not rule_is_ours(ours, "run2")
    assert not rule_is_ours(theirs, None) and not rule_is_ours(plain, None)
