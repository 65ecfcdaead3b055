"""The study-file model of a Docker environment (envs/docker.py runs it)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from isobench.envs import runtimes as rt
from isobench.envs.kinds import INSTANCES, EnvSpec, Pin

MAX_CPUS = 8192  # Linux's NR_CPUS ceiling: a cpuset beyond it is a typo


class DockerSpec(EnvSpec):
    kind: Literal["docker"] = "docker"
    network: Literal["bridge", "host"] = "bridge"
    # where the workload's files live (/isobench/data): the container's own
    # overlay, a volume (the host's file system) or RAM (tmpfs, no disk at all)
    storage: Literal["overlay", "volume", "tmpfs"] = "overlay"
    # the engine's own isolation, in Docker's words: "host" shares this host's
    # namespace, "unconfined" runs without the profile (envs/docker_isolation.py)
    pid: Literal["private", "host"] = "private"
    ipc: Literal["private", "host"] = "private"
    seccomp: Literal["default", "unconfined"] = "default"
    apparmor: Literal["default", "unconfined"] = "default"
    cpuset: str | None = Field(default=None, pattern=r"^[0-9]+([-,][0-9]+)*$")
    cpus: float | None = Field(default=None, gt=0, le=1024)
    memory_mb: int | None = Field(default=None, ge=64, le=16 * 1024 * 1024)  # up to 16 TiB
    tmpfs_mb: int | None = Field(default=None, ge=16, description="size of the RAM-backed /isobench/tmp")
    instances: int = INSTANCES
    pin: Pin = False
    # the OCI runtime every container of this environment runs under
    # (envs/runtimes.py); gvisor_platform only with runsc (rt.platform_used)
    runtime: str = "runc"
    gvisor_platform: Literal[rt.GVISOR_PLATFORMS] | None = None  # type: ignore[valid-type]  # the one list

    @property
    def least_isolation(self) -> bool:
        """Every namespace the engine can share shared, both profiles off,
        the files on a volume under Docker's own runtime, and no limit: the
        placebo, whose change against native is the harness's own bias.
        Placement (cpuset, pin) is allowed: a native baseline can be pinned too."""
        shared = (self.network, self.pid, self.ipc) == ("host", "host", "host")
        unconfined = self.seccomp == self.apparmor == "unconfined"
        plain = self.storage == "volume" and self.runtime == "runc" and not (self.cpus or self.memory_mb)
        return shared and unconfined and plain

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str) -> str:
        if value not in rt.RUNTIMES:
            raise ValueError(f"unknown runtime {value!r}; isobench knows {', '.join(rt.RUNTIMES)}")
        return value

    @field_validator("cpuset")
    @classmethod
    def _real_cpus(cls, value: str | None) -> str | None:
        if value and max(int(n) for n in re.split(r"[-,]", value)) >= MAX_CPUS:
            raise ValueError(f"CPU numbers run from 0 to {MAX_CPUS - 1}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DockerSpec:
        if self.pin and self.cpuset:
            raise ValueError("pin and cpuset both place the container; set one of them")
        if self.gvisor_platform and self.runtime != "runsc":
            raise ValueError(f'gvisor_platform is for runtime = "runsc", not {self.runtime!r}')
        return self
