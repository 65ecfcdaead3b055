"""Where instance i of a pinned group runs: the host CPUs it is given."""

from __future__ import annotations

import dataclasses
import os

from isobench.host.hostinfo import HostInfo, numa_nodes


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


def duet_sides(cpus: list[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two disjoint CPU sets of a duet: half the usable CPUs each (one
    each on two), the lower half first; an odd CPU out is left to the harness."""
    cpus = sorted(cpus)
    half = len(cpus) // 2
    return tuple(cpus[:half]), tuple(cpus[half : 2 * half])


def usable_cpus() -> list[int]:
    """The host CPUs this process may run on (its affinity, not the count)."""
    return sorted(os.sched_getaffinity(0))


def side_host(host: HostInfo) -> HostInfo:
    """The host as one side of a duet sees it: half its usable CPUs (what
    "all cores" means to a workload that duets)."""
    return dataclasses.replace(host, cores=max(len(duet_sides(usable_cpus())[0]), 1))
