"""MariaDB + sysbench OLTP, as the IBM study's MySQL test: the server runs
inside the environment with its data directory on the environment's own
storage (``env.paths.data``: host disk, container overlay or volume, VM
disk), the buffer pool holding the whole data set; ``sysbench
oltp_read_write`` runs on the client host with threads swept (cases
``threads=N``), each run bounded by ``--time``.

Metrics: transactions per second, 95th-percentile transaction latency, and
the system under test's CPU utilisation over the run: host /proc/stat busy
time minus sysbench's own CPU time, as % of all host CPUs (throughput vs
CPU, the IBM study's Figure 11).

The data set is created once per environment in prepare() (mariadb-install-db,
a database and a user with a generated password, ``sysbench prepare``);
each measured run starts the server, runs an unmeasured warm-up of
``warmup_s`` seconds (the buffer pool is also reloaded from its dump at
start), measures, and stops the server.
"""

from __future__ import annotations

import math
import posixpath
import re
import secrets
from typing import ClassVar

from pydantic import Field

from isobench.core.metric import LATENCY, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadError, WorkloadParams, check, distinct_counts
from isobench.workloads.server import (
    SERVER_SAMPLE_S,
    CpuWindow,
    ServerWorkload,
    bounded_timeout,
    servers_dir,
    sweep_cases,
    sweep_value,
)

PORT = 13306
MARIADB_START_STOP_S = 1.2
DB = "sbtest"
USER = "isobench"
ROW_BYTES = 400  # generous: sbtest row (~190 B) plus primary and secondary index

TPS = re.compile(r"transactions:\s+(\d+)\s+\(([0-9.]+) per sec\.\)")
QPS = re.compile(r"queries:\s+(\d+)\s+\(([0-9.]+) per sec\.\)")
PCT = re.compile(r"(\d+)(?:st|nd|rd|th) percentile:\s+([0-9.]+)")
AVG = re.compile(r"avg:\s+([0-9.]+)")
ERRORS = re.compile(r"ignored errors:\s+(\d+)")
TOTAL_TIME = re.compile(r"total time:\s+([0-9.]+)s")


class OltpParams(WorkloadParams):
    threads: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    table_size: int = Field(100_000, ge=100, le=100_000_000, description="rows per table")
    tables: int = Field(1, ge=1, le=64)
    time_s: int = Field(10, ge=1, le=3600, description="measured seconds per run")
    warmup_s: int = Field(2, ge=0, le=600, description="unmeasured seconds after each server start")
    buffer_pool_mb: int = Field(0, ge=0, le=1_048_576, description="0: twice the data set, at least 128")

    _threads = distinct_counts("threads", 4096, sort=False)


class Oltp(ServerWorkload):
    name: ClassVar[str] = "oltp"
    Params: ClassVar[type[WorkloadParams]] = OltpParams
    packages: ClassVar[tuple[str, ...]] = ("mariadb-server", "sysbench")
    ports: ClassVar[tuple[tuple[int, str], ...]] = ((PORT, "tcp"),)
    server_exe: ClassVar[str] = "/usr/sbin/mariadbd"
    params: OltpParams

    def __init__(self, params, host):
        super().__init__(params, host)
        self.password = secrets.token_hex(16)  # per run
        # a datadir of its own: a study's second oltp table (other lengths, say)
        # prepared after this one would otherwise replace its data and password
        self.instance = secrets.token_hex(4)

    def secrets(self) -> tuple[str, ...]:
        return (self.password,)

    def expected_s(self, case: str) -> float:
        # mariadbd's start (InnoDB, its buffer pool reloaded) and shutdown, beside the server's usual
        return self.params.time_s + self.params.warmup_s + MARIADB_START_STOP_S + SERVER_SAMPLE_S

    def cases(self) -> list[str]:
        return sweep_cases("threads", self.params.threads)

    def metrics(self, case: str) -> list[Metric]:
        return [
            Metric(
                "tps", "tx/s", True, "sysbench oltp_read_write transactions per second", role=THROUGHPUT, primary=True
            ),
            Metric("p95_ms", "ms", False, "95th percentile transaction latency", role=LATENCY),
            # no role (not CPU_UTIL): the report has never drawn these against
            # throughput, its cpu_util* naming rule did not match them
            Metric("cpu_pct", "% host CPU", False, "host CPU busy minus sysbench's own, as % of all host CPUs"),
            Metric("server_cpu_pct", "% host CPU", False, "the mariadbd process's own CPU time, as % of all host CPUs"),
        ]

    # -- sizes and places ---------------------------------------------------------------
    def buffer_pool_mb(self) -> int:
        if self.params.buffer_pool_mb:
            return self.params.buffer_pool_mb
        data_mb = self.params.table_size * self.params.tables * ROW_BYTES / 2**20
        return max(128, int(math.ceil(2 * data_mb)))

    def datadir(self, env: Environment) -> str:
        return posixpath.join(env.paths.data, "oltp", f"mariadb-{self.instance}")

    @staticmethod
    def socket(env: Environment) -> str:
        return posixpath.join(servers_dir(env), "oltp.sock")

    # -- server ------------------------------------------------------------------------
    def server_argv(self, case: str, env: Environment) -> list[str]:
        tmp = servers_dir(env)
        return [
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir(env)}",
            f"--socket={self.socket(env)}",
            f"--pid-file={tmp}/mariadbd.pid",
            f"--port={PORT}",
            f"--bind-address={env.server_bind_addr()}",
            "--skip-name-resolve",
            f"--innodb-buffer-pool-size={self.buffer_pool_mb()}M",
            "--max-connections=2000",
            "--max-connect-errors=1000000",
            f"--log-error={tmp}/mariadbd.err",
        ]

    def sysbench_argv(self, addr: str, port: int, *extra: str) -> list[str]:
        p = self.params
        return [
            "sysbench",
            "oltp_read_write",
            "--db-driver=mysql",
            f"--mysql-host={addr}",
            f"--mysql-port={port}",
            f"--mysql-user={USER}",
            f"--mysql-password={self.password}",
            f"--mysql-db={DB}",
            f"--tables={p.tables}",
            f"--table-size={p.table_size}",
            *extra,
        ]

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        return self.sysbench_argv(
            addr,
            port,
            f"--threads={sweep_value(case, 'threads')}",
            f"--time={self.params.time_s}",
            "--percentile=95",
            "--report-interval=0",
            "run",
        )

    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, self.params.time_s + 60)

    # -- once per environment -------------------------------------------------------------
    def prepare(self, env: Environment) -> None:
        d = self.datadir(env)
        check(env.exec(["rm", "-rf", d], timeout=120))
        check(env.exec(["mkdir", "-p", d], timeout=30))
        check(
            env.exec(
                [
                    "mariadb-install-db",
                    "--no-defaults",
                    f"--datadir={d}",
                    "--user=root",
                    "--auth-root-authentication-method=socket",
                    "--skip-test-db",
                ],
                timeout=300,
            )
        )
        self.start_server(env, "setup")
        try:
            sql = (
                f"CREATE DATABASE {DB}; CREATE USER '{USER}'@'%' IDENTIFIED BY '{self.password}'; "
                f"GRANT ALL ON {DB}.* TO '{USER}'@'%';"
            )
            check(
                env.exec(
                    ["mariadb", "--no-defaults", f"--socket={self.socket(env)}", "-u", "root", "-e", sql], timeout=60
                )
            )
            addr, port = env.endpoint(PORT)
            rows = self.params.table_size * self.params.tables
            run = self._client().run(
                self.sysbench_argv(addr, port, "--threads=1", "prepare"), timeout=120 + rows / 1000
            )
            if not run.result.ok:
                raise WorkloadError(f"sysbench prepare: {run.result.describe()}", run.result)
        finally:
            self.stop_server(env)

    def before_measure(self, case: str, env: Environment) -> None:
        if self.params.warmup_s <= 0:
            return
        addr, port = env.endpoint(PORT)
        argv = self.sysbench_argv(
            addr, port, f"--threads={sweep_value(case, 'threads')}", f"--time={self.params.warmup_s}", "run"
        )
        run = self._client().run(argv, timeout=self.params.warmup_s + 60)
        if not run.result.ok:
            raise WorkloadError(f"sysbench warm-up: {run.result.describe()}", run.result)

    def units(self, case: str, m: Measurement) -> list:
        return ["transaction", m.values.get("tps", 0.0) * self.params.time_s]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_sysbench(result.stdout)
        return Measurement(values=values, extra=extra, raw=result.stdout)

    def add_cpu_metrics(self, case: str, m: Measurement, window: CpuWindow) -> None:
        m.values["cpu_pct"] = window.pct(window.sut_cpu_s)
        m.extra["host_cpu_pct"] = window.pct(window.host_busy_s)
        m.extra["client_cpu_pct"] = window.pct(window.client_cpu_s)
        if window.server_cpu_s is not None:
            m.values["server_cpu_pct"] = window.pct(window.server_cpu_s)

    def cleanup(self, env: Environment) -> None:
        self.stop_server(env)
        env.exec(["rm", "-rf", posixpath.join(env.paths.data, "oltp")], timeout=120)


def parse_sysbench(stdout: str) -> tuple[dict[str, float], dict]:
    """sysbench 1.0's final report: transactions per second, the percentile
    line (--percentile=95) and the mean latency, in ms."""
    tps = TPS.search(stdout)
    pct = PCT.search(stdout)
    if tps is None:
        raise ParseError("no 'transactions: N (X per sec.)' line in sysbench output")
    if pct is None:
        raise ParseError("no percentile latency line in sysbench output (run with --percentile=95)")
    if int(pct.group(1)) != 95:
        raise ParseError(f"sysbench reported the {pct.group(1)}th percentile, expected the 95th")
    if int(tps.group(1)) == 0:
        raise ParseError("sysbench completed no transactions")
    extra: dict = {"transactions": int(tps.group(1))}
    for name, rx in (("qps", QPS), ("avg_ms", AVG), ("total_s", TOTAL_TIME)):
        m = rx.search(stdout)
        if m:
            extra[name] = float(m.groups()[-1])
    if m := ERRORS.search(stdout):
        extra["ignored_errors"] = int(m.group(1))
    return {"tps": float(tps.group(2)), "p95_ms": float(pct.group(2))}, extra
