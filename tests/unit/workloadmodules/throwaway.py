"""A throwaway server workload for test_workload_registry.py: one module,
found by the workload registry once its directory is on the workloads
package's path, exactly as a new module in src/isobench/workloads/ is."""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

from pydantic import Field

from isobench.core.metric import LATENCY, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadParams
from isobench.workloads.server import ServerWorkload


class ThrowawayParams(WorkloadParams):
    payload_bytes: int = Field(64, ge=1, le=4096)


class Throwaway(ServerWorkload):
    name: ClassVar[str] = "throwaway"
    Params: ClassVar[type[WorkloadParams]] = ThrowawayParams
    packages: ClassVar[tuple[str, ...]] = ("throwaway-server", "throwaway-client")
    ports: ClassVar[tuple[tuple[int, str], ...]] = ((19999, "tcp"),)
    # a real executable, so the test can leave a "server" behind for clean to kill
    server_exe: ClassVar[str] = os.path.realpath(shutil.which("sleep") or "/bin/sleep")

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric("ops", "op/s", True, "operations per second", role=THROUGHPUT),
            Metric("rtt_us", "µs", False, "round trip", role=LATENCY),
        ]

    def server_argv(self, case: str, env: Environment) -> list[str]:
        return ["600"]

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        return ["throwaway-client", addr, str(port), str(self.params.payload_bytes)]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        try:
            ops, rtt = (float(x) for x in result.stdout.split())
        except ValueError as exc:
            raise ParseError(f"throwaway output does not parse: {exc}") from None
        return Measurement({"ops": ops, "rtt_us": rtt}, raw=result.stdout)
