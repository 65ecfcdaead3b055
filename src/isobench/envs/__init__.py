"""Environment kinds, built from a study's environment specs."""

from __future__ import annotations

from isobench.envs.base import Environment
from isobench.workloads.base import HostInfo


def make_environment(name: str, spec, run_id: str, host: HostInfo, image: str | None) -> Environment:
    options = spec.model_dump(exclude={"kind"})
    if spec.kind == "native":
        from isobench.envs.native import NativeEnvironment
        return NativeEnvironment(name=name, options=options, run_id=run_id)
    if spec.kind == "docker":
        from isobench.envs.docker import DockerEnvironment
        return DockerEnvironment(name=name, options=options, run_id=run_id, image=image or "",
                                 host_cores=host.cores, host_mem_bytes=host.mem_bytes)
    raise ValueError(f"unknown environment kind {spec.kind!r}")
