"""Environment kinds, built from a study's environment specs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from isobench.envs.base import Environment

if TYPE_CHECKING:  # workloads.base imports envs.base; avoid the cycle at run time
    from isobench.workloads.base import HostInfo


def make_environment(name: str, spec, run_id: str, host: "HostInfo", image: str | None) -> Environment:
    options = spec.model_dump(exclude={"kind"})
    if spec.kind == "native":
        from isobench.envs.native import NativeEnvironment
        return NativeEnvironment(name=name, options=options, run_id=run_id)
    if spec.kind == "docker":
        from isobench.envs.docker import DockerEnvironment
        return DockerEnvironment(name=name, options=options, run_id=run_id, image=image or "",
                                 host_cores=host.cores, host_mem_bytes=host.mem_bytes)
    if spec.kind == "vm":
        from isobench.envs.vm import VmEnvironment
        return VmEnvironment(name=name, options=options, run_id=run_id, host_cores=host.cores,
                             host_mem_bytes=host.mem_bytes)
    raise ValueError(f"unknown environment kind {spec.kind!r}")
