"""A throwaway environment kind in one module, written as a new kind would
be: test_env_registry.py puts this directory on the envs package's path, and
the registry finds the module like any other. Its environment runs
commands on the host, under a scratch root the test chooses."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from isobench.core.proc import ExecResult, run_argv
from isobench.envs.base import Environment, Paths
from isobench.envs.kinds import INSTANCES, EnvKind, EnvProbe, EnvSpec, Footprint

EVENTS: list[tuple[str, str]] = []  # (what, environment or run id), for the test to read
EXECS: list[tuple[str, list[str]]] = []  # (environment, argv) of every exec
DISCARDING: set[str] = set()  # environments whose stop() says it takes their contents with it


class FakeSpec(EnvSpec):
    kind: Literal["fake"] = "fake"
    reserve_mb: int = Field(default=1, ge=1, description="host memory it holds (preflight)")
    refuse: tuple[str, ...] = Field(default=(), description="workloads it cannot run (EnvKind.unsupported)")
    instances: int = INSTANCES


class FakeKind(EnvKind):
    name = "fake"
    spec = FakeSpec
    presets = {"fake": {}, "fake-big": {"reserve_mb": 4096}}
    scratch_roots = ("/nonexistent/isobench-fake",)  # the test points it at a temporary directory

    def make(self, name, spec, *, run_id, host, image, index) -> Environment:
        return FakeEnvironment(name=name, spec=spec, run_id=run_id, root=self.scratch_roots[0])

    def probe(self) -> EnvProbe:
        return EnvProbe("fake", True, "host commands, for the registry test")

    def clean(self, run_id: str | None, keeper) -> list[str]:
        EVENTS.append(("clean", str(run_id)))
        return [f"fake leftovers of {run_id}"]

    def unsupported(self, spec: FakeSpec, workload: str) -> str | None:
        return "the fake sandbox has no such system call" if workload in spec.refuse else None

    def footprint(self, spec: FakeSpec) -> list[Footprint]:
        return [Footprint("reserve_mb", "memory", spec.reserve_mb * 2**20 * spec.instances)]


@dataclass
class FakeEnvironment(Environment):
    spec: FakeSpec = field(default_factory=FakeSpec)
    kind: str = "fake"
    unrecorded = frozenset({"kind", "instances", "refuse"})  # the study's, not the environment's
    run_id: str = "adhoc"
    root: str = ""

    @property
    def paths(self) -> Paths:
        base = os.path.join(self.root, f"{self.run_id}-{self.name}")
        return Paths(data=os.path.join(base, "data"), tmp=os.path.join(base, "tmp"))

    def start(self) -> None:
        EVENTS.append(("start", self.name))
        os.makedirs(self.paths.data, exist_ok=True)
        os.makedirs(self.paths.tmp, exist_ok=True)

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        EVENTS.append(("exec", self.name))
        EXECS.append((self.name, list(argv)))
        return run_argv(argv, timeout, cwd)

    def write_file(self, path: str, content: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(content)

    def measure_startup(self, timeout: float) -> dict[str, float]:
        EVENTS.append(("startup", self.name))
        return {"ready_s": run_argv(["true"], timeout).wall_s}

    def discards_contents(self) -> bool:
        return self.name in DISCARDING  # it does remove its whole root below either way

    def stop(self) -> None:
        EVENTS.append(("stop", self.name))
        shutil.rmtree(os.path.join(self.root, f"{self.run_id}-{self.name}"), ignore_errors=True)
