"""A duet swaps the native side's CPUs ten times a second: every process of
its sample moves, and /proc is walked at most once a second (what forks in
between inherits its parent's CPUs)."""

import os
import threading
import time

import pytest

from isobench.envs import native as native_mod
from isobench.envs.native import NativeEnvironment

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs")


def test_the_sample_moves_and_the_tree_is_walked_once_a_second(monkeypatch):
    env = NativeEnvironment(name="native")
    walks = []
    real_tree = native_mod.tree
    monkeypatch.setattr(native_mod, "tree", lambda pid: walks.append(pid) or real_tree(pid))
    ran = threading.Thread(target=env.exec, args=(["sh", "-c", "sleep 2.5 & sleep 2.5; wait"], 10))
    ran.start()
    for _ in range(100):
        if env._live:
            break
        time.sleep(0.01)
    time.sleep(0.2)  # sh has forked both sleeps
    cpus = sorted(os.sched_getaffinity(0))
    for k in range(5):
        env.move((cpus[k % 2],))
    assert len(walks) == 1  # five moves within a second, one walk
    (found,) = env._walked[1].values()
    assert len(found) >= 3  # sh and its two sleeps
    assert all(os.sched_getaffinity(pid) == {cpus[0]} for pid in found)
    ran.join()
