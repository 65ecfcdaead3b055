"""The study file: environments × workloads × repetitions, validated before
anything runs. Every error is one line naming the file, the field and what
is allowed."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from isobench.noise import NoiseSpec
from isobench.workloads import WORKLOADS
from isobench.workloads.base import WorkloadParams

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
NAME_RULE = "lower-case letters, digits and '-', starting with a letter, at most 31 characters"


class StudyError(ValueError):
    """A study file that cannot run; str() is the one-line message."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Every kind can be a group of identical instances (envs/group.py): N
# processes' worth of the host, N containers or N VMs, started one after
# another with the host's memory read between them (density). pin = true
# gives instance i its own core (i mod the host's cores) instead of leaving
# placement to the scheduler.
INSTANCES = Field(default=1, ge=1, le=64, description="identical instances (servers, containers, VMs)")
# true = "core"; "node": instance i gets NUMA node i mod nodes (all its CPUs)
Pin = Union[bool, Literal["core", "node"]]


class NativeSpec(_Strict):
    kind: Literal["native"] = "native"
    instances: int = INSTANCES
    pin: Pin = False


class DockerSpec(_Strict):
    kind: Literal["docker"] = "docker"
    network: Literal["bridge", "host"] = "bridge"
    storage: Literal["overlay", "volume"] = "overlay"
    cpuset: str | None = Field(default=None, pattern=r"^[0-9]+([-,][0-9]+)*$")
    cpus: float | None = Field(default=None, gt=0, le=1024)
    memory_mb: int | None = Field(default=None, ge=64)
    tmpfs_mb: int | None = Field(default=None, ge=16, description="size of the RAM-backed /isobench/tmp")
    instances: int = INSTANCES
    pin: Pin = False

    @model_validator(mode="after")
    def _consistent(self) -> "DockerSpec":
        if self.pin and self.cpuset:
            raise ValueError("pin and cpuset both place the container; set one of them")
        return self


class VmSpec(_Strict):
    """A QEMU guest (envs/vm.py); docker = true runs the workloads in a
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
    def _consistent(self) -> "VmSpec":
        if self.topology not in ("none", "auto"):
            s, c, t = (int(x) for x in self.topology.split("x"))
            if s * c * t != self.vcpus:
                raise ValueError(f"topology {self.topology} makes {s * c * t} CPUs, vcpus is {self.vcpus}")
        if self.disk_aio == "native" and self.disk_cache not in ("none", "directsync"):
            raise ValueError(f"disk_aio native needs disk_cache none or directsync, not {self.disk_cache}")
        return self


EnvSpec = Annotated[Union[NativeSpec, DockerSpec, VmSpec], Field(discriminator="kind")]

# Presets mirror the studies' configurations; a table named after a preset
# needs no body, and any field given overrides the preset's.
PRESETS: dict[str, dict[str, Any]] = {
    "native": {"kind": "native"},
    "docker-nat": {"kind": "docker", "network": "bridge", "storage": "overlay"},
    "docker-host": {"kind": "docker", "network": "host", "storage": "volume"},
    # IBM's KVM configurations: "stock" is a default OpenStack-like guest,
    # "tuned" passes the host CPU through, exposes a topology, pins vCPUs
    # and backs memory with huge pages.
    "vm-stock": {"kind": "vm", "cpu_model": "default", "topology": "none", "pin": False, "hugepages": "off"},
    "vm-tuned": {"kind": "vm", "cpu_model": "host", "topology": "auto", "pin": True, "hugepages": "on"},
    "vm-docker": {"kind": "vm", "docker": True},
}
ENV_KINDS = ("native", "docker", "vm")
SPEC_CLASSES: dict[str, type[BaseModel]] = {}


SPEC_CLASSES.update({"native": NativeSpec, "docker": DockerSpec, "vm": VmSpec})


class StudyMeta(_Strict):
    name: str
    description: str = ""
    repetitions: int = Field(default=5, ge=1, le=1000)
    warmup: int = Field(default=1, ge=0, le=100)
    baseline: str = "native"
    # interleaved: A B A B per cell, rotating who goes first each round, so
    # drift does not masquerade as overhead; blocked: all of A then all of B.
    order: Literal["interleaved", "blocked"] = "interleaved"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"must be {NAME_RULE}")
        return v


@dataclass(frozen=True)
class WorkloadEntry:
    key: str  # the study's name for it (the table name)
    workload: str  # the workload kind, a key of WORKLOADS
    params: WorkloadParams


@dataclass(frozen=True)
class Study:
    path: str
    text: str
    meta: StudyMeta
    environments: dict[str, NativeSpec | DockerSpec | VmSpec]
    workloads: list[WorkloadEntry]
    noise: NoiseSpec | None = None  # the stepped background load ([noise])

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


class _StudyFile(_Strict):
    study: StudyMeta
    environments: dict[str, EnvSpec]
    workloads: dict[str, dict[str, Any]]


def _one_line(path: str, exc: ValidationError, prefix: tuple, model: type[BaseModel] | None) -> str:
    """pydantic's errors as one line: file: field: what is wrong (and what is allowed)."""
    msgs = []
    for err in exc.errors():
        loc = prefix + tuple(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = _fields_of(model, loc)
            msg = "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        elif err["type"] == "missing":
            msg = "required field is missing"
        msgs.append(f"{'.'.join(str(p) for p in loc)}: {msg}")
    return f"{path}: " + "; ".join(msgs)


def _fields_of(model: type[BaseModel] | None, loc: tuple) -> list[str]:
    if loc[:1] == ("study",):
        model = StudyMeta
    return sorted(model.model_fields) if model is not None else []


def _expand_presets(path: str, raw_envs: Any) -> dict[str, Any]:
    if not isinstance(raw_envs, dict) or not raw_envs:
        raise StudyError(f"{path}: environments: at least one [environments.NAME] table is required")
    out = {}
    for name, body in raw_envs.items():
        if not NAME_RE.match(name):
            raise StudyError(f"{path}: environments.{name}: bad name; use {NAME_RULE}")
        if not isinstance(body, dict):
            raise StudyError(f"{path}: environments.{name}: must be a table")
        body = dict(body)
        preset = body.pop("preset", None)
        if preset is None and "kind" not in body and name in PRESETS:
            preset = name
        if preset is not None:
            if preset not in PRESETS:
                raise StudyError(f"{path}: environments.{name}.preset: unknown preset {preset!r}; "
                                 f"allowed: {', '.join(PRESETS)}")
            body = {**PRESETS[preset], **body}
        if body.get("kind") not in ENV_KINDS:
            raise StudyError(f"{path}: environments.{name}.kind: must be one of {', '.join(ENV_KINDS)} "
                             f"(or name a preset: {', '.join(PRESETS)})")
        out[name] = body
    return out


def _workload_entries(path: str, raw: Any) -> list[WorkloadEntry]:
    if not isinstance(raw, dict) or not raw:
        raise StudyError(f"{path}: workloads: at least one [workloads.NAME] table is required")
    entries = []
    for key, body in raw.items():
        if not NAME_RE.match(key):
            raise StudyError(f"{path}: workloads.{key}: bad name; use {NAME_RULE}")
        body = dict(body) if isinstance(body, dict) else {}
        kind = body.pop("workload", key)
        if kind not in WORKLOADS:
            raise StudyError(f"{path}: workloads.{key}: unknown workload {kind!r}; allowed: "
                             f"{', '.join(sorted(WORKLOADS))} (or set workload = \"...\")")
        cls = WORKLOADS[kind]
        try:
            params = cls.Params.model_validate(body)
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("workloads", key), cls.Params)) from None
        entries.append(WorkloadEntry(key, kind, params))
    return entries


def parse_study(text: str, path: str = "<study>") -> Study:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML: {exc}") from None
    unknown = set(raw) - {"study", "environments", "workloads", "noise"}
    if unknown:
        raise StudyError(f"{path}: {sorted(unknown)[0]}: unknown table; allowed: study, environments, "
                         "workloads, noise")
    if not isinstance(raw.get("study"), dict):
        raise StudyError(f"{path}: study: a [study] table with at least name = \"...\" is required")
    envs = _expand_presets(path, raw.get("environments"))
    workloads = _workload_entries(path, raw.get("workloads"))
    for name, body in envs.items():
        spec_cls = SPEC_CLASSES[body["kind"]]
        try:
            spec_cls.model_validate(body)
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("environments", name), spec_cls)) from None
    try:
        model = _StudyFile.model_validate({"study": raw.get("study"), "environments": envs, "workloads": {}})
    except ValidationError as exc:
        raise StudyError(_one_line(path, exc, (), None)) from None
    if model.study.baseline not in model.environments:
        raise StudyError(f"{path}: study.baseline: {model.study.baseline!r} is not one of the environments "
                         f"({', '.join(model.environments)})")
    noise = None
    if "noise" in raw:
        try:
            noise = NoiseSpec.model_validate(raw["noise"])
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("noise",), NoiseSpec)) from None
    return Study(path, text, model.study, dict(model.environments), workloads, noise)


def load_study(path: str | Path) -> Study:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise StudyError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_study(text, str(p))
