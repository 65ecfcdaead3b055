"""Where instance i of a pinned group runs: the host CPUs it is given."""

from __future__ import annotations

import os

from isobench.host.hostinfo import numa_nodes


def pinned_cpus(index: int, mode, cpus: list[int], nodes: list[list[int]]) -> list[int]:
    """The host CPUs instance `index` is pinned to: one core, round robin
    over the CPUs this process may use ("core", or true), or every allowed
    CPU of NUMA node index mod nodes ("node")."""
    if mode == "node":
        node = [c for c in nodes[index % len(nodes)] if c in cpus]
        return node or list(cpus)
    return [cpus[index % len(cpus)]]


def placement(pin, index: int) -> str | None:
    """Instance `index`'s CPUs as a cpulist ("3" or "0,1,2,3"), or None when
    the spec leaves placement to the scheduler."""
    if not pin:
        return None
    return ",".join(map(str, pinned_cpus(index, pin, sorted(os.sched_getaffinity(0)), numa_nodes())))
