"""Network bandwidth with its CPU cost, as the IBM study's Figure 2: one
TCP stream, 1500-byte MTU, between the environment (iperf3 server) and the
client host (iperf3 client), in both directions.

Cases: ``tx`` the environment transmits (client runs ``iperf3 -R``),
``rx`` the environment receives. Metrics: Gbps (bits received per second,
as iperf3 reports at the receiver) and the system under test's CPU-seconds
per GB moved: host /proc/stat busy time over the client's run minus the
iperf3 client's own CPU time, divided by the bytes received. See
docs/workloads/netbw.md for what that includes on a single machine.
"""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import Field, field_validator

from isobench.core.metric import CPU_COST, THROUGHPUT, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadParams
from isobench.workloads.server import (
    SERVER_SAMPLE_S,
    CpuWindow,
    ServerWorkload,
    bounded_timeout,
    known_cases,
    per_gb,
)

PORT = 15201
CASES = ("tx", "rx")


class NetbwParams(WorkloadParams):
    duration_s: int = Field(10, ge=1, le=3600, description="seconds per iperf3 run")
    cases: tuple[str, ...] = CASES

    @field_validator("cases")
    @classmethod
    def _cases(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return known_cases(v, CASES, "netbw")


class Netbw(ServerWorkload):
    name: ClassVar[str] = "netbw"
    Params: ClassVar[type[WorkloadParams]] = NetbwParams
    packages: ClassVar[tuple[str, ...]] = ("iperf3",)
    ports: ClassVar[tuple[tuple[int, str], ...]] = ((PORT, "tcp"),)
    server_exe: ClassVar[str] = "/usr/bin/iperf3"
    params: NetbwParams

    def expected_s(self, case: str) -> float:
        return self.params.duration_s + 0.1 + SERVER_SAMPLE_S  # its connection and parameter exchange

    def cases(self) -> list[str]:
        return list(self.params.cases)

    def metrics(self, case: str) -> list[Metric]:
        who = "environment transmits" if case == "tx" else "environment receives"
        return [
            Metric("gbps", "Gbit/s", True, f"one TCP stream, {who}", role=THROUGHPUT, primary=True),
            Metric(
                "cpu_s_per_gb",
                "CPU-s/GB",
                False,
                "host CPU-seconds per 10^9 bytes, minus the client's own process",
                role=CPU_COST,
            ),
            Metric(
                "server_cpu_s_per_gb",
                "CPU-s/GB",
                False,
                "the iperf3 server process's own CPU-seconds per 10^9 bytes",
                role=CPU_COST,
            ),
        ]

    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, self.params.duration_s + 30)

    def server_argv(self, case: str, env: Environment) -> list[str]:
        return ["--server", "--bind", env.server_bind_addr(), "--port", str(PORT)]

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        argv = [
            "iperf3",
            "--client",
            addr,
            "--port",
            str(port),
            "--time",
            str(self.params.duration_s),
            "--json",
            "--connect-timeout",
            "5000",
        ]
        if case == "tx":
            argv.append("--reverse")  # the server (environment) sends
        return argv

    def units(self, case: str, m: Measurement) -> list:
        return ["MB", float(m.extra.get("bytes", 0.0)) / 1e6]  # received, as iperf3 counts it

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_iperf3(result.stdout, reverse=(case == "tx"))
        return Measurement(values=values, extra=extra, raw=result.stdout)

    def add_cpu_metrics(self, case: str, m: Measurement, window: CpuWindow) -> None:
        nbytes = m.extra["bytes"]
        m.values["cpu_s_per_gb"] = per_gb(window.sut_cpu_s, nbytes)
        m.extra["host_cpu_s_per_gb"] = per_gb(window.host_busy_s, nbytes)
        m.extra["client_cpu_s_per_gb"] = per_gb(window.client_cpu_s, nbytes)
        if window.server_cpu_s is not None:
            m.values["server_cpu_s_per_gb"] = per_gb(window.server_cpu_s, nbytes)


def parse_iperf3(stdout: str, reverse: bool) -> tuple[dict[str, float], dict]:
    """iperf3 --json: Gbps at the receiver, bytes received, and iperf3's own
    per-process CPU figures (kept as detail)."""
    try:
        doc = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise ParseError(f"iperf3 output is not JSON: {exc}") from exc
    if doc.get("error"):
        raise ParseError(f"iperf3: {doc['error']}")
    try:
        test = doc["start"]["test_start"]
        if bool(test.get("reverse")) != reverse:
            raise ParseError(f"iperf3 output has reverse={test.get('reverse')}, expected {int(reverse)}")
        if test.get("protocol") != "TCP" or test.get("num_streams") != 1:
            raise ParseError("expected one TCP stream")
        received = doc["end"]["sum_received"]
        sent = doc["end"]["sum_sent"]
        nbytes = float(received["bytes"])
        gbps = float(received["bits_per_second"]) / 1e9
    except (KeyError, TypeError) as exc:
        raise ParseError(f"iperf3 JSON lacks {exc}") from exc
    if nbytes <= 0:
        raise ParseError("iperf3 moved no data")
    extra = {
        "bytes": nbytes,
        "seconds": float(received.get("seconds", 0)),
        "retransmits": sent.get("retransmits"),
        "iperf3_cpu": doc["end"].get("cpu_utilization_percent", {}),
    }
    return {"gbps": gbps}, extra
