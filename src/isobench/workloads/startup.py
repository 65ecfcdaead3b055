"""Startup time: from the start request to ready, for every environment kind
that can measure it (``Environment.measure_startup``; each kind measures its own):

- native: spawning a process (``true``) until it has exited;
- docker: creating and starting a container of the environment's image
  until its process runs (the engine answers the start request once it does);
- vm / vm-docker: booting a fresh guest with the environment's own
  configuration until the guest agent answers (vm-docker: until dockerd
  answers and the container runs, the one-off image import excluded),
  plus the guest kernel's own boot time (its uptime when init started) and
  the guest's uptime when the agent started.

Each sample starts a new instance beside the running one and removes it.
IBM reported "containers start in < 1 s, the VM in 11 s".
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from isobench.core.metric import STARTUP, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.workloads.base import Measurement, Workload, WorkloadError, WorkloadParams


class StartupParams(WorkloadParams):
    timeout_s: float = Field(300, gt=0, le=3600)


class Startup(Workload):
    name: ClassVar[str] = "startup"
    Params: ClassVar[type[WorkloadParams]] = StartupParams

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric(
                "ready_s",
                "s",
                False,
                "start request to ready (process running / guest agent answering)",
                role=STARTUP,
                primary=True,
            ),
            Metric("guest_kernel_s", "s", False, "guest kernel boot: guest uptime when init started", role=STARTUP),
            Metric("guest_agent_start_s", "s", False, "guest uptime when the guest agent started", role=STARTUP),
        ]

    def argv(self, case: str, paths: Paths) -> list[str]:
        return ["true"]

    def units(self, case: str, m: Measurement) -> list:
        return ["start", 1.0]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        return Measurement(values={"ready_s": result.wall_s})

    def cannot_reparse(self, case: str) -> str:
        return "its times are measured by the environment (measure_startup), not read from a tool's output"

    def run(self, case: str, env: Environment) -> Measurement:
        try:
            values = env.measure_startup(self.params.timeout_s)
        except Exception as exc:  # noqa: BLE001 - a failed start is a failed sample
            raise WorkloadError(f"start failed: {exc}") from None
        if values is None:
            raise WorkloadError(f"startup is not measurable in {env.kind} environments")
        keep = {m.name for m in self.metrics(case)}
        return Measurement(
            values={k: v for k, v in values.items() if k in keep},
            extra={k: v for k, v in values.items() if k not in keep},
        )
