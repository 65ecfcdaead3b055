"""Request/response latency, the netperf TCP_RR / UDP_RR test of the IBM and
VMware studies: one small message in flight, the client waits for the
reply before sending the next. netperf is not in Debian main; sockperf
(ping-pong mode) is: maintained, packaged, and it reports every
transaction's round trip as percentiles, where qperf's tcp_lat/udp_lat give
only a mean. See docs/workloads/netlat.md.

sockperf echoes the request, so request and response have the same size
(``msg_bytes``, default 100) where netperf used 100 B / 200 B. Latency is
the full round trip (``--full-rtt``), i.e. 1 / transaction rate, as
netperf's RR figures. Cases ``tcp`` and ``udp``.
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field, field_validator

from isobench.core.metric import LATENCY, Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads.base import Measurement, ParseError, WorkloadParams
from isobench.workloads.server import SERVER_SAMPLE_S, ServerWorkload, bounded_timeout, known_cases

PORT = 11111
CASES = ("tcp", "udp")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
AVG = re.compile(r"avg-(rtt|latency)=\s*([0-9.]+)")
PCT = re.compile(r"percentile\s+([0-9.]+)\s*=\s*([0-9.]+)")
VALID = re.compile(r"\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)")
MINMAX = re.compile(r"<(MAX|MIN)> observation =\s*([0-9.]+)")
# sockperf's own warm-up, the first part of its --time: round trips it does
# not count ("[Total Run] RunTime=2.001 sec; Warm up time=400 msec", then
# "[Valid Duration] RunTime=1.550 sec" at --time 2, tests/data/sockperf-tcp.txt)
WARMUP_S = 0.4


class NetlatParams(WorkloadParams):
    duration_s: int = Field(5, ge=1, le=3600, description="seconds per sockperf run")
    msg_bytes: int = Field(100, ge=14, le=65_000, description="request = response size")
    cases: tuple[str, ...] = CASES

    @field_validator("duration_s", mode="before")
    @classmethod
    def _duration(cls, v):
        # before the type check, so that 0.3 gets why, not "a valid integer"
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 1:
            short = f"is shorter than sockperf's own {WARMUP_S:g} s warm-up" if v < WARMUP_S else "is under a second"
            raise ValueError(
                f"{v:g} s {short}; sockperf runs whole seconds (--time), its first {WARMUP_S:g} s a warm-up it "
                "does not count: give 1 or more"
            )
        return v

    @field_validator("cases")
    @classmethod
    def _cases(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return known_cases(v, CASES, "netlat")


class Netlat(ServerWorkload):
    name: ClassVar[str] = "netlat"
    Params: ClassVar[type[WorkloadParams]] = NetlatParams
    packages: ClassVar[tuple[str, ...]] = ("sockperf",)
    ports: ClassVar[tuple[tuple[int, str], ...]] = ((PORT, "tcp"), (PORT, "udp"))
    server_exe: ClassVar[str] = "/usr/bin/sockperf"
    params: NetlatParams

    def expected_s(self, case: str) -> float:
        return self.params.duration_s + SERVER_SAMPLE_S  # the warm-up is within --time

    def cases(self) -> list[str]:
        return list(self.params.cases)

    def metrics(self, case: str) -> list[Metric]:
        proto = case.upper()
        return [
            Metric("mean_us", "µs", False, f"{proto} round trip, mean", role=LATENCY, primary=True),
            Metric("p50_us", "µs", False, f"{proto} round trip, median", role=LATENCY, primary=True),
            Metric("p99_us", "µs", False, f"{proto} round trip, 99th percentile", role=LATENCY),
        ]

    def server_port(self, case: str) -> tuple[int, str]:
        return PORT, case

    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, self.params.duration_s + 30)

    def server_argv(self, case: str, env: Environment) -> list[str]:
        argv = ["server", "--ip", env.server_bind_addr(), "--port", str(PORT)]
        return argv + (["--tcp"] if case == "tcp" else [])

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        argv = [
            "sockperf",
            "ping-pong",
            "--ip",
            addr,
            "--port",
            str(port),
            "--msg-size",
            str(self.params.msg_bytes),
            "--time",
            str(self.params.duration_s),
            "--full-rtt",
        ]
        return argv + (["--tcp"] if case == "tcp" else [])

    def units(self, case: str, m: Measurement) -> list:
        """Round trips sockperf completed; from the mean when it did not say."""
        if m.extra.get("transactions"):
            return ["round trip", float(m.extra["transactions"])]
        mean = m.values.get("mean_us") or 0.0
        return ["round trip", self.params.duration_s * 1e6 / mean if mean > 0 else 0.0]

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_sockperf(result.stdout + "\n" + result.stderr)
        return Measurement(values=values, extra=extra, raw=result.stdout + result.stderr)


def parse_sockperf(text: str) -> tuple[dict[str, float], dict]:
    """sockperf ping-pong's summary (ANSI colours stripped): mean and
    percentiles in µs, full round trip when run with --full-rtt."""
    text = ANSI.sub("", text)
    m = AVG.search(text)
    if m is None:
        raise ParseError("no avg-rtt/avg-latency in sockperf output")
    if m.group(1) != "rtt":
        raise ParseError("sockperf reported one-way latency; run it with --full-rtt")
    pct = {float(q): float(v) for q, v in PCT.findall(text)}
    for q in (50.0, 99.0):
        if q not in pct:
            raise ParseError(f"no {q:g}th percentile in sockperf output")
    valid = VALID.search(text)
    extra: dict = {"percentiles_us": sorted([q, v] for q, v in pct.items())}
    if valid:
        run_s, sent, received = float(valid.group(1)), int(valid.group(2)), int(valid.group(3))
        if received == 0:
            raise ParseError("sockperf received no replies")
        extra.update({"valid_s": run_s, "transactions": received, "sent": sent})
    extra.update({k.lower() + "_us": float(v) for k, v in MINMAX.findall(text)})
    values = {"mean_us": float(m.group(2)), "p50_us": pct[50.0], "p99_us": pct[99.0]}
    return values, extra
