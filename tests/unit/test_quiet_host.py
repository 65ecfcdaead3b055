"""tests/conftest.py's measured load: the share of the CPUs other work kept
busy between two /proc/stat snapshots, from which a test that needs a quiet
host is skipped. Real /proc/stat lines of the 2-core development VM, a
second apart."""

import pytest

from conftest import busy_share
from isobench.host.counters import parse_stat

# 183 user + 17 system + 1 softirq + 1 steal of 203 ticks busy, 1 iowait
BUSY = ("cpu  257463 0 25548 46456 928 0 646 345 0 0\n", "cpu  257646 0 25565 46456 929 0 647 346 0 0\n")
# one core of two idle throughout
HALF = ("cpu  1000 0 0 1000 0 0 0 0 0 0\n", "cpu  1100 0 0 1100 0 0 0 0 0 0\n")


def test_busy_share_of_real_snapshots():
    before, after = (parse_stat(t, 100) for t in BUSY)
    assert busy_share(before, after) == pytest.approx(202 / 203)
    assert busy_share(*(parse_stat(t, 100) for t in HALF)) == pytest.approx(0.5)


def test_guest_time_is_not_counted_twice_and_no_time_is_no_load():
    # guest ticks are inside user already: 100 user of which 80 guest, 100 idle
    before = parse_stat("cpu  0 0 0 0 0 0 0 0 0 0\n", 100)
    after = parse_stat("cpu  100 0 0 100 0 0 0 0 80 0\n", 100)
    assert busy_share(before, after) == pytest.approx(0.5)
    assert busy_share(before, before) == 0.0
