"""The webstore workload's study-file parameters (workloads/webstore.py runs
them): sizes of the data set, the operation mix, the swept instance counts
and the response-time limits."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from isobench.workloads import webstore_data
from isobench.workloads.base import WorkloadParams, distinct_counts
from isobench.workloads.webstore_metrics import LIMITS_MS, OPS

DEFAULT_MIX = {"login": 10, "newcust": 2, "browse": 30, "product": 30, "purchase": 18, "history": 10}


class WebstoreParams(WorkloadParams):
    instances: tuple[int, ...] = Field((1,), description="instance counts, one case each (instances=N)")
    customers: int = Field(20_000, ge=100, le=10_000_000)
    products: int = Field(10_000, ge=100, le=1_000_000)
    seed: int = Field(1, ge=0, le=2**31 - 1)
    stock: int = Field(
        webstore_data.INITIAL_STOCK,
        ge=0,
        le=1_000_000_000,
        description="initial stock per product; purchases beyond it roll back",
    )
    mode: str = Field("closed", pattern=r"^(closed|open)$")
    users: int = Field(8, ge=1, le=2000, description="closed loop: users per instance")
    think_s: float = Field(0.1, ge=0, le=60, description="closed loop: mean think time")
    rate: float = Field(20, gt=0, le=100_000, description="open loop: arrivals per second per instance")
    connections: int = Field(32, ge=1, le=2000, description="open loop: connections per instance")
    duration_s: float = Field(60, ge=1, le=86_400)
    warmup_s: float = Field(10, ge=0, le=3600)
    mix: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_MIX), validate_default=True)
    max_lines: int = Field(9, ge=1, le=50, description="order lines per purchase, 1..max_lines")
    php_workers: int = Field(4, ge=1, le=256)
    shared_buffers_mb: int = Field(64, ge=16, le=65_536)
    max_error_rate: float = Field(0.05, ge=0, le=1)
    rates: tuple[int, ...] = Field((), description="open-loop load sweep: one case rate=R each, per instance")
    peak: bool = Field(False, description="add a case 'peak': Weathervane-style bounded search of the rate")
    peak_min_rate: int = Field(5, ge=1, le=100_000)
    peak_max_rate: int = Field(400, ge=1, le=100_000)
    peak_steps: int = Field(6, ge=2, le=30, description="probes of the peak search, duration_s each")
    peak_limit_ms: float = Field(250, gt=0, le=60_000, description="every operation's p90 must stay under it")
    limits_ms: tuple[float, ...] = Field(
        LIMITS_MS,
        description="response-time limits (CloudStone's 250 and 500 "
        "ms): each L is a metric pass_L, 1 when every operation's worst-instance "
        "p90 stayed under L ms, and a line on the p90 figure",
    )

    _rates = distinct_counts("rates", 100_000, what="arrivals per second", allow_empty=True)
    _instances = distinct_counts("instances", 64)

    @field_validator("mix")
    @classmethod
    def _mix(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(set(v) - set(OPS))
        if bad:
            raise ValueError(f"unknown operations {bad} in mix; known: {list(OPS)}")
        if any(w < 0 for w in v.values()) or sum(v.values()) <= 0:
            raise ValueError("mix weights must be >= 0 with a positive sum")
        return {op: float(w) for op, w in v.items() if w > 0}

    @field_validator("limits_ms")
    @classmethod
    def _limits(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not 1 <= len(v) <= 4 or len(set(v)) != len(v) or not all(0 < x <= 60_000 for x in v):
            raise ValueError(f"limits_ms {list(v)}: one to four distinct limits, each above 0 and at most 60000 ms")
        return tuple(sorted(v))

    @model_validator(mode="after")
    def _peak_range(self) -> WebstoreParams:
        if self.peak_min_rate > self.peak_max_rate:
            raise ValueError(
                f"peak_min_rate ({self.peak_min_rate}) is above peak_max_rate "
                f"({self.peak_max_rate}); the search runs from the lower to the upper"
            )
        return self
