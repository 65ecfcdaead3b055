"""Servers found by their sockets: the /proc/net parser picks only sockets
bound to the benchmarking range (198.18.0.0/15), in IPv4 and v4-mapped IPv6
tables, from the kernel's own format."""

from isobench.workloads.leftovers import bench_socket_inodes

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
# 198.19.0.1:15201 listening (inode 4242), 127.0.0.1:6379 (4243), 0.0.0.0:22 (4244), 198.20.0.1 (4245: outside)
TCP = HEADER + (
    "   0: 010013C6:3B61 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n"
    "   1: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4243 1 0 100 0 0 10 0\n"
    "   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4244 1 0 100 0 0 10 0\n"
    "   3: 010014C6:3B61 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4245 1 0 100 0 0 10 0\n"
)
# ::ffff:198.18.5.9 (inode 77) and :: (78)
TCP6 = HEADER + (
    "   0: 0000000000000000FFFF0000090512C6:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 77 1 0 100 0 0 10 0\n"
    "   1: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 "
    "00:00000000 00000000     0        0 78 1 0 100 0 0 10 0\n"
)


def test_only_sockets_on_benchmark_addresses_are_picked():
    assert bench_socket_inodes(TCP) == {4242}
    assert bench_socket_inodes(TCP6) == {77}


def test_a_malformed_table_picks_nothing():
    assert bench_socket_inodes(HEADER + "garbage line\n   0: zz:00 00:00 0A x x x x 0 0 9\n") == set()
