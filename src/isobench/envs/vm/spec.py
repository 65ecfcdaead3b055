"""The vm kind's study-file model, on its own so the environment and its
QEMU configuration read the same typed spec the kind validates (kind.py
imports the environment, which imports this)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from isobench.envs.kinds import INSTANCES, EnvSpec, Pin


class VmSpec(EnvSpec):
    """A QEMU guest (envs/vm/); docker = true runs the workloads in a
    container of the same image inside it (vm-docker)."""

    kind: Literal["vm"] = "vm"
    vcpus: int = Field(default=2, ge=1, le=512)
    memory_mb: int = Field(default=2048, ge=256, le=4 * 1024 * 1024)
    # default: QEMU's own CPU model (qemu64), what an untuned VM gets;
    # host: passthrough (under TCG, where host is impossible, "max")
    cpu_model: Literal["default", "host"] = "default"
    # "SxCxT" (sockets x cores x threads, product = vcpus), "auto" (one
    # socket of vcpus cores) or "none" (QEMU's default: one socket per vCPU)
    topology: str = Field(default="none", pattern=r"^(none|auto|[1-9][0-9]*x[1-9][0-9]*x[1-9][0-9]*)$")
    pin: Pin = False
    hugepages: Literal["off", "on"] = "off"
    disk_cache: Literal["none", "directsync", "writeback", "writethrough"] = "none"
    disk_aio: Literal["native", "io_uring", "threads"] = "native"
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    data_disk_mb: int = Field(default=4096, ge=256, le=16 * 1024 * 1024)
    tmpfs_mb: int | None = Field(default=None, ge=16, description="size of the RAM-backed /isobench/tmp")
    root_bus: Literal["nvme", "virtio"] = "nvme"
    guest_init: Literal["isobench", "systemd"] = "isobench"
    docker: bool = False
    instances: int = INSTANCES

    @model_validator(mode="after")
    def _consistent(self) -> VmSpec:
        if self.topology not in ("none", "auto"):
            s, c, t = (int(x) for x in self.topology.split("x"))
            if s * c * t != self.vcpus:
                raise ValueError(f"topology {self.topology} makes {s * c * t} CPUs, vcpus is {self.vcpus}")
        if self.disk_aio == "native" and self.disk_cache not in ("none", "directsync"):
            raise ValueError(f"disk_aio native needs disk_cache none or directsync, not {self.disk_cache}")
        return self
