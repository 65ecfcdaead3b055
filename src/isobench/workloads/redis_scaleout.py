"""The VMware scale-out study: N Redis instances (one per environment
instance) behind twemproxy (Debian's ``nutcracker``, consistent hashing),
driven through the proxy by redis-benchmark: 75% GET / 25% SET by
connections and requests, pipeline 30, AOF fsync'd every second.

The proxy runs on the client host with the load generators (drivers/
redis_mix.py), so every environment is reached the same way and the
proxy's cost is not charged to one of them. Cases are ``instances=N``:
the report draws aggregate throughput and the speedup over one instance
against N; each instance's share of the commands gives the fairness
(max/min and Jain's index).
"""

from __future__ import annotations

import json
import os
import posixpath
import secrets
import sys
from typing import ClassVar

from pydantic import Field

from isobench.core.metric import FAIRNESS, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.core.workspace import DATA_ROOT
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadParams, distinct_counts
from isobench.workloads.multi import MultiServerWorkload, per_instance_metrics, per_instance_values
from isobench.workloads.redis import parse_redis_csv_rows
from isobench.workloads.server import bounded_timeout, sweep_cases, sweep_value

BASE_PORT = 16400
PROXY_PORT = 22121  # on the client namespace's loopback


class RedisScaleoutParams(WorkloadParams):
    instances: tuple[int, ...] = (1, 2, 4)
    clients: int = Field(100, ge=2, le=10_000, description="connections to the proxy, GET and SET together")
    requests: int = Field(200_000, ge=100, le=100_000_000, description="GET and SET together, per run")
    pipeline: int = Field(30, ge=1, le=1000)
    get_ratio: float = Field(0.75, gt=0, lt=1)
    value_bytes: int = Field(32, ge=1, le=1_000_000)
    keyspace: int = Field(100_000, ge=1, le=100_000_000)
    appendfsync: str = Field(
        "everysec", pattern=r"^(no|everysec|always|off)$", description="AOF fsync policy, or off (no AOF)"
    )

    _instances = distinct_counts("instances", 64)


class RedisScaleout(MultiServerWorkload):
    name: ClassVar[str] = "redis-scaleout"
    Params: ClassVar[type[WorkloadParams]] = RedisScaleoutParams
    packages: ClassVar[tuple[str, ...]] = ("redis-server", "redis-tools", "nutcracker")
    server_exe: ClassVar[str] = "/usr/bin/redis-server"
    base_port: ClassVar[int] = BASE_PORT
    params: RedisScaleoutParams

    def __init__(self, params, host):
        super().__init__(params, host)
        self.password = secrets.token_hex(16)

    def secrets(self) -> tuple[str, ...]:
        return (self.password,)

    def max_instances(self) -> int:
        return max(self.params.instances)

    def cases(self) -> list[str]:
        return sweep_cases("instances", self.params.instances)

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric(
                "rps",
                "req/s",
                True,
                "aggregate GET+SET requests per second through the proxy",
                role=THROUGHPUT,
                primary=True,
            ),
            Metric("get_rps", "req/s", True, "GET requests per second", role=THROUGHPUT),
            Metric("set_rps", "req/s", True, "SET requests per second", role=THROUGHPUT),
            # through the proxy: not in the NAT vs host comparison (LATENCY's meaning)
            Metric("p99_ms", "ms", False, "99th percentile latency (max of GET's and SET's)"),
            Metric("imbalance", "x", False, "most over least commands served by one instance", role=FAIRNESS),
            Metric("jain", "", True, "Jain's fairness index of commands served per instance", role=FAIRNESS),
            *per_instance_metrics(
                "rps",
                "cmd/s",
                True,
                sweep_value(case, "instances"),
                lambda i: f"commands per second instance {i} served",
            ),
        ]

    def instance_argv(self, case: str, env: Environment, index: int) -> list[str]:
        d = posixpath.join(env.paths.data, f"redis-scaleout-{index}")
        aof = (
            ["--appendonly", "no"]
            if self.params.appendfsync == "off"
            else ["--appendonly", "yes", "--appendfsync", self.params.appendfsync]
        )
        return [
            "--bind",
            env.server_bind_addr(),
            "--port",
            str(BASE_PORT + index),
            "--protected-mode",
            "no",
            "--save",
            "",
            *aof,
            "--requirepass",
            self.password,
            "--daemonize",
            "no",
            "--dir",
            d,
        ]

    def start_instances(self, env: Environment, case: str, n: int) -> None:
        for i, member in enumerate(self.instances(env, n)):
            d = posixpath.join(member.paths.data, f"redis-scaleout-{i}")
            member.exec(["rm", "-rf", d], timeout=60)  # each run starts from an empty AOF
            member.exec(["mkdir", "-p", d], timeout=30)
        super().start_instances(env, case, n)

    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, 300)

    def _workdir(self) -> str:
        return os.path.join(DATA_ROOT, f"{self._client().run_id}-client", self.name)

    def instance_count(self, case: str) -> int:
        return sweep_value(case, "instances")

    def driver_argv(self, case: str, endpoints: list[tuple[str, int]]) -> list[str]:
        p = self.params
        cfg = {
            "servers": endpoints,
            "password": self.password,
            "proxy_port": PROXY_PORT,
            "clients": p.clients,
            "requests": p.requests,
            "pipeline": p.pipeline,
            "get_ratio": p.get_ratio,
            "value_bytes": p.value_bytes,
            "keyspace": p.keyspace,
            "timeout_s": self.client_timeout(case),
            "workdir": self._workdir(),
        }
        return [sys.executable, "-m", "isobench.drivers.redis_mix", json.dumps(cfg)]

    def units(self, case: str, m: Measurement) -> list:
        return ["request", float(self.params.requests)]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_scaleout(result.stdout)
        return Measurement(values=values, extra=extra, raw=self.hide(result.stdout))  # no password in the store


def parse_scaleout(stdout: str) -> tuple[dict[str, float], dict]:
    """redis_mix's JSON: two redis-benchmark CSVs run at once, the wall time
    over both, and the commands each server processed."""
    try:
        doc = json.loads(stdout)
        get = parse_redis_csv_rows(doc["get"])["GET"]
        set_ = parse_redis_csv_rows(doc["set"])["SET"]
        wall = float(doc["wall_s"])
        total = int(doc["get_requests"]) + int(doc["set_requests"])
        served = [float(x) for x in doc["served"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError(f"redis scale-out output does not parse ({type(exc).__name__}: {exc})") from exc
    if wall <= 0 or not served:
        raise ParseError("redis scale-out output has no wall time or no servers")
    values = {
        "rps": total / wall,
        "get_rps": get["rps"],
        "set_rps": set_["rps"],
        "p99_ms": max(get["p99_latency_ms"], set_["p99_latency_ms"]),
    }
    values.update(per_instance_values("rps", [n / wall for n in served]))
    if len(served) > 1:
        from isobench.analysis.stats import jain_index, max_min_ratio  # here: scipy would slow every `validate`

        values["imbalance"] = max_min_ratio(served)
        values["jain"] = jain_index(served)
    else:
        values["imbalance"], values["jain"] = 1.0, 1.0
    return values, {"served_per_instance": served, "per_command": {"GET": get, "SET": set_}}
