"""The Korea University study's API servers: N identical HTTP servers, one
per instance, each answering GET /task with a fixed write task (``writes``
write() calls of ``chunk_bytes``, ~30 MB in 2 million writes by default,
to a file in the instance's tmpfs) and the task's own time. The client
host hits all N at once, ``rounds`` times per sample.

The study used node.js express; Debian's python3 (in the image, standard
library only: data/api_server.py) plays the server here. What is compared
is the same task under each isolation, so the language sets the scale,
not the ratios (see docs/workloads/api.md).

Metrics: the mean task time over instances and rounds, the slowest
instance's mean, the spread across instances (max/min of per-instance mean
task times, and Jain's index of per-instance task rates 1/t), the client's
round-trip, and each instance's mean task time.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from importlib import resources
from typing import ClassVar

from pydantic import Field

from isobench.core.metric import DURATION, FAIRNESS, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Footprint, Measurement, ParseError, WorkloadParams
from isobench.workloads.multi import MultiServerWorkload, per_instance_metrics, per_instance_values
from isobench.workloads.server import bounded_timeout

BASE_PORT = 18080
SERVER_FILE = "api_server.py"


class ApiParams(WorkloadParams):
    instances: int = Field(4, ge=1, le=64, description="servers driven at once, one per environment instance")
    writes: int = Field(2_000_000, ge=1, le=100_000_000, description="write() calls per task")
    chunk_bytes: int = Field(15, ge=1, le=1024 * 1024, description="bytes per write()")
    rounds: int = Field(5, ge=1, le=10_000, description="rounds of N simultaneous requests per sample")


class Api(MultiServerWorkload):
    name: ClassVar[str] = "api"
    Params: ClassVar[type[WorkloadParams]] = ApiParams
    packages: ClassVar[tuple[str, ...]] = ("python3-minimal",)
    server_exe: ClassVar[str] = "/usr/bin/python3"
    base_port: ClassVar[int] = BASE_PORT
    params: ApiParams

    def max_instances(self) -> int:
        return self.params.instances

    def metrics(self, case: str) -> list[Metric]:
        n = self.params.instances
        # the study's question: the task's time (task_rate says the same per second)
        return [
            Metric("task_s", "s", False, "mean task time over instances and rounds", role=DURATION, primary=True),
            Metric("task_s_slowest", "s", False, "mean task time of the slowest instance", role=DURATION),
            Metric("imbalance", "x", False, "slowest over fastest instance's mean task time", role=FAIRNESS),
            Metric("jain", "", True, "Jain's fairness index of per-instance task rates (1 = fair)", role=FAIRNESS),
            # a latency, but not one the NAT vs host comparison takes (LATENCY's meaning)
            Metric("latency_s", "s", False, "client round-trip per request"),
            Metric("task_rate", "tasks/s", True, "aggregate: the instances' task rates 1/t summed", role=THROUGHPUT),
            *per_instance_metrics("task_s", "s", False, n, lambda i: f"instance {i}'s mean task time"),
        ]

    @classmethod
    def owns_process(cls, exe: str, argv: list[str]) -> bool:
        # every Python is /usr/bin/python3: the server script tells ours from the others
        return os.path.basename(exe).startswith("python3") and any(a.endswith(f"/{SERVER_FILE}") for a in argv)

    def footprint(self) -> list[Footprint]:
        # the task file lives in the instance's tmpfs while it is written
        return [Footprint("writes", "memory", self.params.writes * self.params.chunk_bytes)]

    def _script(self, env: Environment) -> str:
        return posixpath.join(env.paths.tmp, SERVER_FILE)

    def prepare(self, env: Environment) -> None:
        code = resources.files("isobench.data").joinpath(SERVER_FILE).read_bytes()
        for member in self.instances(env, self.params.instances):
            member.write_file(self._script(member), code)

    def instance_argv(self, case: str, env: Environment, index: int) -> list[str]:
        p = self.params
        return [
            self._script(env),
            env.server_bind_addr(),
            str(BASE_PORT + index),
            posixpath.join(env.paths.tmp, f"api-{index}"),
            str(p.writes),
            str(p.chunk_bytes),
        ]

    def client_timeout(self, case: str) -> float:
        # a round waits for its slowest task; generous for emulated guests
        return bounded_timeout(self.params, 60 + self.params.rounds * 120)

    def instance_count(self, case: str) -> int:
        return self.params.instances

    def driver_argv(self, case: str, endpoints: list[tuple[str, int]]) -> list[str]:
        urls = [f"http://{addr}:{port}/task" for addr, port in endpoints]
        return [
            sys.executable,
            "-m",
            "isobench.drivers.api_client",
            str(self.params.rounds),
            str(self.client_timeout(case)),
            *urls,
        ]

    def cleanup(self, env: Environment) -> None:
        for member in self.instances(env, self.params.instances):
            member.exec(["rm", "-f", self._script(member)], timeout=30)

    def units(self, case: str, m: Measurement) -> list:
        return ["task", float(self.params.instances * self.params.rounds)]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_api_rounds(result.stdout, self.params.instances)
        return Measurement(values=values, extra=extra, raw=result.stdout)


def parse_api_rounds(stdout: str, n: int) -> tuple[dict[str, float], dict]:
    """The api_client's JSON: per round, one {task_s, latency_s} per instance."""
    try:
        rounds = json.loads(stdout)["rounds"]
        per_instance = [[float(r[i]["task_s"]) for r in rounds] for i in range(n)]
        latency = [float(r[i]["latency_s"]) for r in rounds for i in range(n)]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParseError(f"api client output does not parse ({type(exc).__name__}: {exc})") from exc
    if not rounds or any(t <= 0 for ts in per_instance for t in ts):
        raise ParseError("api client reported no rounds or a non-positive task time")
    from isobench.analysis.stats import jain_index, max_min_ratio  # here: scipy would slow every `validate` by ~1 s

    means = [sum(ts) / len(ts) for ts in per_instance]
    values = {
        "task_s": sum(means) / n,
        "task_s_slowest": max(means),
        "imbalance": max_min_ratio(means),
        "jain": jain_index([1.0 / m for m in means]),
        "latency_s": sum(latency) / len(latency),
        "task_rate": sum(1.0 / m for m in means),
    }
    values.update(per_instance_values("task_s", means))
    return values, {"task_s_per_round": per_instance}
