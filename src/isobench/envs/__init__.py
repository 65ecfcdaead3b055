"""Environment kinds, built from a study's environment specs."""

from __future__ import annotations

import os

from isobench.envs.base import Environment
from isobench.hostinfo import HostInfo, numa_nodes, parse_cpulist



def make_environment(name: str, spec, run_id: str, host: HostInfo, image: str | None) -> Environment:
    """One environment, or a group of ``spec.instances`` identical ones
    (members NAME-1 ... NAME-N)."""
    n = getattr(spec, "instances", 1)
    if n == 1:
        return _make_one(name, spec, run_id, host, image, 0)
    from isobench.envs.group import InstanceGroup
    members = [_make_one(f"{name}-{i + 1}", spec, run_id, host, image, i) for i in range(n)]
    return InstanceGroup(name=name, options=spec.model_dump(exclude={"kind"}), members=members)


def pinned_cpus(index: int, mode, cpus: list[int], nodes: list[list[int]]) -> list[int]:
    """The host CPUs instance `index` is pinned to: one core, round robin
    over the CPUs this process may use ("core", or true), or every allowed
    CPU of NUMA node index mod nodes ("node")."""
    if mode == "node":
        node = [c for c in nodes[index % len(nodes)] if c in cpus]
        return node or list(cpus)
    return [cpus[index % len(cpus)]]


def _make_one(name: str, spec, run_id: str, host: HostInfo, image: str | None, index: int) -> Environment:
    options = spec.model_dump(exclude={"kind", "instances"})
    cpus = sorted(os.sched_getaffinity(0))
    pin = options.get("pin")
    placed = ",".join(map(str, pinned_cpus(index, pin, cpus, numa_nodes()))) if pin else None
    if spec.kind == "native":
        from isobench.envs.native import NativeEnvironment
        if placed:
            options["cpu"] = placed
        return NativeEnvironment(name=name, options=options, run_id=run_id)
    if spec.kind == "docker":
        from isobench.envs.docker import DockerEnvironment
        if options.pop("pin", False):
            options["cpuset"] = placed
        return DockerEnvironment(name=name, options=options, run_id=run_id, image=image or "",
                                 host_cores=host.cores, host_mem_bytes=host.mem_bytes)
    if spec.kind == "vm":
        from isobench.envs.vm import VmEnvironment
        if pin == "node":
            options["pin_cpus"] = parse_cpulist(placed)
        # "core": instance i's vCPUs start where instance i-1's ended
        return VmEnvironment(name=name, options=options, run_id=run_id, host_cores=host.cores,
                             host_mem_bytes=host.mem_bytes, pin_offset=index * spec.vcpus)
    raise ValueError(f"unknown environment kind {spec.kind!r}")
