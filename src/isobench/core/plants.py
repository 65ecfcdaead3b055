"""The arithmetic of a planted slowdown (isobench calibrate,
docs/calibrate.md): a planted side does a known extra share of the same
work in each sample while its figures count only the base work, so its
rate of base work falls by the planted size on any host. Pure.

A planted slowdown of P percent is the quota's convention: the rate falls
to (1 - P/100) of the base's, so the planted side does 1 / (1 - P/100)
times the work, an extra share of P / (100 - P): 5.26% more for 5%, twice
the work for 50%, the largest plant (beyond it the planted side's extra
work outweighs its base work)."""

from __future__ import annotations

import math

MAX_PLANT_PCT = 50.0
PLANT_RULE = f"a planted slowdown is a percentage above 0 and at most {MAX_PLANT_PCT:g}"


class CannotPlant(ValueError):
    """A workload that cannot do a known extra share of its work; str() is
    one line saying why."""


def plant_problem(pct: float) -> str:
    """Why ``pct`` is no planted slowdown ("" when it is one)."""
    if not math.isfinite(pct) or not 0 < pct <= MAX_PLANT_PCT:
        return f"{pct:g} is outside (0, {MAX_PLANT_PCT:g}]: {PLANT_RULE}"
    return ""


def extra_share(pct: float) -> float:
    """The extra share of work a planted slowdown of ``pct`` percent needs:
    5 -> 0.0526..., 50 -> 1.0."""
    return pct / (100.0 - pct)


def slowdown_of(base: float, planted: float) -> float:
    """The slowdown, percent of the rate, of doing ``planted`` units of work
    where ``base`` units are counted: 100, 105.26 -> 5.0."""
    return (1.0 - base / planted) * 100.0


def planted_amount(base: int, pct: float) -> int:
    """Whole units (bytes, runs) that carry a planted slowdown of ``pct``
    over ``base`` units: the nearest whole number to base x (1 + share)."""
    return max(base, round(base * (1.0 + extra_share(pct))))


def rate_slowdown(overhead_pct: float, higher_is_better: bool) -> float:
    """A measured overhead (analysis.stats.Effect.overhead_pct: a throughput
    50% lower is +50, a time twice as long +100) as the slowdown of the
    rate of work, the unit a plant is planted in: the time's +100 is 50."""
    if higher_is_better or math.isnan(overhead_pct):
        return overhead_pct
    return (1.0 - 1.0 / (1.0 + overhead_pct / 100.0)) * 100.0
