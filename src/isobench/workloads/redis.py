"""Redis as in the IBM study: redis-server inside the environment,
redis-benchmark on the client host, 50% GET / 50% SET, ~50-byte values,
each client pipelining 10 requests, clients swept from 1 upward. Every
sweep point is its own case, ``clients=N``, with its own repetitions.

redis-benchmark cannot interleave two commands in one test, so one run is
``-t set,get``: N requests of SET then N of GET on the same random
keyspace, i.e. 50/50 by count, time-sliced rather than interleaved. The
combined throughput is total requests over total time (the harmonic mean
of the two rates), the mean latency the mean of the two means (equal
counts), and p99 the larger of the two p99s, an upper bound of the mix's
p99. Keys are ``key:`` + 12 digits (16 characters; redis-benchmark's
``__rand_int__`` always expands to 12 digits, so IBM's 10 cannot be had).
The server gets a random per-run password and binds only the benchmark
address; no persistence (``--save '' --appendonly no``).
"""

from __future__ import annotations

import csv
import io
import secrets
from typing import ClassVar

from pydantic import Field

from isobench.core.metric import LATENCY, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadParams, distinct_counts
from isobench.workloads.server import (
    SERVER_SAMPLE_S,
    ServerWorkload,
    bounded_timeout,
    servers_dir,
    sweep_cases,
    sweep_value,
)

PORT = 16379
EXPECTED_RPS = 200_000.0


class RedisParams(WorkloadParams):
    clients: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    requests: int = Field(100_000, ge=100, le=100_000_000, description="per command (SET, then GET)")
    pipeline: int = Field(10, ge=1, le=1000)
    value_bytes: int = Field(50, ge=1, le=1_000_000)
    keyspace: int = Field(100_000, ge=1, le=100_000_000)

    _clients = distinct_counts("clients", 10_000, sort=False)


class Redis(ServerWorkload):
    name: ClassVar[str] = "redis"
    Params: ClassVar[type[WorkloadParams]] = RedisParams
    packages: ClassVar[tuple[str, ...]] = ("redis-server", "redis-tools")
    ports: ClassVar[tuple[tuple[int, str], ...]] = ((PORT, "tcp"),)
    server_exe: ClassVar[str] = "/usr/bin/redis-server"
    params: RedisParams

    def __init__(self, params, host):
        super().__init__(params, host)
        self.password = secrets.token_hex(16)  # per run, never stored

    def secrets(self) -> tuple[str, ...]:
        return (self.password,)

    def expected_s(self, case: str) -> float:
        # SETs then GETs at about 200,000 a second, pipelined (tests/data's
        # redis-benchmark at 4 clients: 247k and 274k; one client is slower)
        return SERVER_SAMPLE_S + 2 * self.params.requests / EXPECTED_RPS

    def cases(self) -> list[str]:
        return sweep_cases("clients", self.params.clients)

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric("rps", "req/s", True, "requests per second, SET and GET together", role=THROUGHPUT, primary=True),
            Metric("mean_ms", "ms", False, "mean request latency (mean of SET's and GET's)", role=LATENCY),
            Metric("p99_ms", "ms", False, "99th percentile latency (max of SET's and GET's)", role=LATENCY),
        ]

    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, 120)

    def server_argv(self, case: str, env: Environment) -> list[str]:
        return [
            "--bind",
            env.server_bind_addr(),
            "--port",
            str(PORT),
            "--protected-mode",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
            "--requirepass",
            self.password,
            "--daemonize",
            "no",
            "--dir",
            servers_dir(env),
        ]

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        p = self.params
        return [
            "redis-benchmark",
            "-h",
            addr,
            "-p",
            str(port),
            "-a",
            self.password,
            "-t",
            "set,get",
            "-c",
            str(sweep_value(case, "clients")),
            "-n",
            str(p.requests),
            "-P",
            str(p.pipeline),
            "-d",
            str(p.value_bytes),
            "-r",
            str(p.keyspace),
            "--csv",
        ]

    def units(self, case: str, m: Measurement) -> list:
        return ["request", 2.0 * self.params.requests]  # N SETs then N GETs

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_redis_csv(result.stdout)
        return Measurement(values=values, extra=extra, raw=result.stdout)


def parse_redis_csv_rows(stdout: str) -> dict[str, dict[str, float]]:
    """redis-benchmark --csv rows by test name (Redis 7: test, rps,
    avg/min/p50/p95/p99/max latency in ms)."""
    rows = {}
    lines = [ln for ln in stdout.splitlines() if ln.startswith('"')]
    try:
        for row in csv.DictReader(io.StringIO("\n".join(lines))):
            rows[row["test"]] = {k: float(v) for k, v in row.items() if k != "test"}
    except (KeyError, ValueError, TypeError) as exc:
        raise ParseError(f"redis-benchmark CSV does not parse: {exc}") from exc
    return rows


def parse_redis_csv(stdout: str) -> tuple[dict[str, float], dict]:
    """The IBM mix: SET then GET, combined."""
    rows = parse_redis_csv_rows(stdout)
    missing = [t for t in ("SET", "GET") if t not in rows]
    if missing:
        raise ParseError(f"redis-benchmark CSV lacks {missing} (needs Redis ≥ 7 --csv with latency columns)")
    s, g = rows["SET"], rows["GET"]
    try:
        if s["rps"] <= 0 or g["rps"] <= 0:
            raise ParseError("redis-benchmark reported zero throughput")
        values = {
            "rps": 2.0 / (1.0 / s["rps"] + 1.0 / g["rps"]),
            "mean_ms": (s["avg_latency_ms"] + g["avg_latency_ms"]) / 2,
            "p99_ms": max(s["p99_latency_ms"], g["p99_latency_ms"]),
        }
    except KeyError as exc:
        raise ParseError(f"redis-benchmark CSV lacks column {exc} (Redis < 7?)") from exc
    return values, {"per_command": rows}
