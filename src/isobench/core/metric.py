"""What a workload measures: a metric's name, unit, direction, role and
whether it is one of its case's primaries.

The role tells reports what a metric is without guessing from its name:
which figures draw it, which comparisons it enters. ``primary`` says the
metric answers the case's question (its throughput, or the latency that
defines the workload): Table I judges the primaries in a family of their
own, and the compare gate and adaptive stopping look at them; every other
metric is descriptive (docs/statistics.md). Workloads declare both; the
store keeps them with the run so reports work from the store alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Roles (a metric has at most one; "" = a plain value, drawn only in Table I
# and the normalised figure).
THROUGHPUT = "throughput"  # work per unit of time (higher is better)
LATENCY = "latency"  # time per operation; enters the NAT vs host comparison
DURATION = "duration"  # time for a whole job (compression)
STARTUP = "startup"  # from a start request to ready: an environment's startup, drawn as bars
PER_INSTANCE = "per-instance"  # one instance's value of a multi-instance run
FAIRNESS = "fairness"  # balance across instances (Jain's index, max/min)
CPU_COST = "cpu-cost"  # CPU time per unit of work (per GB ...)
CPU_UTIL = "cpu-util"  # share of the CPUs busy while measuring
ROLES = ("", THROUGHPUT, LATENCY, DURATION, STARTUP, PER_INSTANCE, FAIRNESS, CPU_COST, CPU_UTIL)
# Units that say a metric is a time (µs with the micro sign or the Greek mu):
# reports show its spread, and draw it on a latency axis.
TIME_UNITS = frozenset({"ns", "us", "\u00b5s", "\u03bcs", "ms", "s"})


def is_time_unit(unit: str) -> bool:
    return unit.strip() in TIME_UNITS


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool
    description: str = ""
    role: str = ""
    primary: bool = False  # one of the case's primaries (a study's ``primary`` list overrides)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"metric {self.name}: unknown role {self.role!r}; one of {ROLES}")


# One instance's value in a multi-instance run: instance_<i>_<name>, i from 1.
# Workloads name them with instance_metric, reports read them back with
# parse_instance_metric; nothing else spells the pattern.
_INSTANCE_RE = re.compile(r"^instance_(?P<index>[0-9]+)_(?P<name>.+)$")


def instance_metric(index: int, name: str) -> str:
    """The name of instance `index`'s (1-based) value of metric `name`."""
    return f"instance_{index}_{name}"


def parse_instance_metric(metric: str) -> tuple[int, str] | None:
    """(index, name) of a per-instance metric name, or None for any other metric."""
    m = _INSTANCE_RE.match(metric)
    return (int(m["index"]), m["name"]) if m else None


# A response-time limit a workload checks, as a metric: pass_<L> is 1 when
# every operation's p90 stayed under L ms. The limits come from the
# workload's parameters; reports find them back here (the lines of the p90
# figure) and never know which workload set them.
_LIMIT_RE = re.compile(r"^pass_(?P<ms>[0-9]+(?:\.[0-9]+)?)$")


def limit_metric(ms: float) -> str:
    """The name of the metric that checks a limit of `ms` milliseconds."""
    return f"pass_{ms:g}"


def parse_limit_metric(metric: str) -> float | None:
    """The limit in ms a pass_<L> metric checks, or None for any other metric."""
    m = _LIMIT_RE.match(metric)
    return float(m["ms"]) if m else None


# What a measured value may be: finite, and within a range where a ratio, a
# square or a sum of thousands of them stays finite (a subnormal 1e-320
# divides to infinity; 4e307 squares to it). Every tool's output is inside.
VALUE_MAX = 1e18
VALUE_MIN = 1e-18  # smallest magnitude other than 0


def value_problem(v: object) -> str:
    """Why V cannot be a measured value ("" when it can)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "not a number"
    if isinstance(v, float) and not math.isfinite(v):  # an int is finite (and may be too big for a float)
        return "not a finite number"
    if v != 0 and not VALUE_MIN <= abs(v) <= VALUE_MAX:
        return f"outside the range a measured value has ({VALUE_MIN:g} to {VALUE_MAX:g} in magnitude)"
    return ""
