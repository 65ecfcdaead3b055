"""Adaptive repetitions (``repetitions = "auto"``): when to run another block
of rounds, and what the final analysis must then do. Pure functions.

Why the final analysis needs a correction: a rule "stop as soon as the CI is
narrow enough" stops, more often than not, when the sample sd happens to be
small, which inflates every t statistic computed from that sample; simulated
A/A false alarms are 10-11% at a nominal 5% for one cell
(benchmarks/calibration.py, docs/statistics.md).

The rule here:

* Rounds are added in fixed blocks, and the run looks at its data only at
  the planned points min_rounds, min_rounds + block, ..., max_rounds:
  K = ``Schedule.looks`` possible looks, fixed before anything is measured.
* At a look, the run stops when every watched cell's 95% CI half-width
  (``stats.ci_halfwidth_pct``) is within the target, or when the cap is
  reached; otherwise it runs one more block. The runner watches the run's
  primary cells (results/primary.py): a descriptive metric never holds the
  run back. The correction below holds whichever cells are watched.
* The final analysis tests at ``sequential_alpha(K)`` = alpha / K instead
  of alpha (Bonferroni over the looks). Whatever the stop rule does, a
  false alarm at the look where the run stopped is a false alarm at one of
  the K looks, whose probability is at most K · alpha/K = alpha; the same
  bound holds for the FDR of BH over a table (the false-discovery
  proportion at the stopping look is at most the sum over looks). A compare
  of two adaptive runs unions over every pair of looks:
  ``sequential_alpha(K_A, K_B)`` = alpha / (K_A·K_B). A fixed run has K = 1.

The bound needs no simulation and holds for any noise, at a cost in power
(measured in docs/statistics.md, with the A/A rates of this rule and of the
naive one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from isobench.analysis.stats import ALPHA, ci_halfwidth_pct, summarize

# repetitions = "auto" without further settings: start at AUTO_MIN rounds, add
# blocks of as many, stop at AUTO_CAP_FACTOR times the minimum (PTS's cap)
AUTO_MIN = 3
AUTO_CAP_FACTOR = 4
AUTO_TARGET_CI_PCT = 5.0


@dataclass(frozen=True)
class Schedule:
    """When the run may look at its data: after min_rounds, then after every
    block of rounds, never beyond max_rounds (the last block may be short)."""

    min_rounds: int
    block: int
    max_rounds: int

    def __post_init__(self) -> None:
        if self.min_rounds < 2 or self.block < 1 or self.max_rounds < self.min_rounds:
            raise ValueError(f"need 2 <= min_rounds <= max_rounds and block >= 1, not {self}")

    @property
    def points(self) -> tuple[int, ...]:
        """Round counts at which the run looks, the last one being the cap."""
        inner = range(self.min_rounds, self.max_rounds, self.block)
        return (*inner, self.max_rounds)

    @property
    def looks(self) -> int:
        return len(self.points)


def schedule_of(meta: dict[str, Any]) -> Schedule:
    """The schedule a study's [study] table asks for (min_repetitions, block,
    max_repetitions, with the defaults above); validated by the study model."""
    minimum = int(meta.get("min_repetitions") or AUTO_MIN)
    return Schedule(
        minimum, int(meta.get("block") or minimum), int(meta.get("max_repetitions") or AUTO_CAP_FACTOR * minimum)
    )


def sequential_alpha(*looks: int, alpha: float = ALPHA) -> float:
    """The alpha the final analysis must use: alpha divided by the number of
    possible looks of every adaptive run involved (1 for a fixed run); one
    argument for a run's own table, two for a compare of two runs."""
    if any(k < 1 for k in looks):
        raise ValueError(f"looks must be >= 1, not {looks}")
    return alpha / math.prod(looks)


@dataclass(frozen=True)
class NextBlock:
    more: int  # rounds to run now; 0 = stop
    look: int  # 1-based index of the look taken now; 0 when not at a planned point
    converged: tuple[bool, ...]  # per cell, at this look (empty when no look was taken)
    text: str

    @property
    def stop(self) -> bool:
        return self.more == 0


def converged(values: Sequence[float], target_ci_pct: float) -> bool:
    """The cell's 95% CI half-width is within target_ci_pct of its mean."""
    a = np.asarray(values, dtype=float).ravel()
    if a.size < 2 or not np.all(np.isfinite(a)):
        return False
    return bool(ci_halfwidth_pct(summarize(a)) <= target_ci_pct)


def next_block(
    values_by_cell: Sequence[Sequence[float]],
    rounds_done: int,
    schedule: Schedule,
    target_ci_pct: float,
    what: str = "cell",
) -> NextBlock:
    """How many more rounds to run now. ``values_by_cell``: each watched
    cell's values so far (a cell with failed rounds simply has fewer; the
    runner watches a run's primary cells, results/primary.py); ``rounds_done``:
    rounds completed; ``what`` names a cell in the text. Off the planned
    points, it only completes the block."""
    pts = schedule.points
    if rounds_done >= schedule.max_rounds:
        return NextBlock(
            0,
            pts.index(schedule.max_rounds) + 1 if rounds_done == schedule.max_rounds else 0,
            _flags(values_by_cell, target_ci_pct),
            f"cap of {schedule.max_rounds} rounds reached",
        )
    if rounds_done not in pts:
        nxt = min(p for p in pts if p > rounds_done)
        return NextBlock(nxt - rounds_done, 0, (), f"completing the block: {nxt} rounds")
    look = pts.index(rounds_done) + 1
    flags = _flags(values_by_cell, target_ci_pct)
    if all(flags):
        return NextBlock(
            0,
            look,
            flags,
            f"every {what} within ±{target_ci_pct:g}% after {rounds_done} rounds (look {look} of {len(pts)})",
        )
    more = pts[look] - rounds_done
    waiting = len(flags) - sum(flags)
    return NextBlock(
        more, look, flags, f"{waiting} of {len(flags)} {what}s wider than ±{target_ci_pct:g}%: {more} more rounds"
    )


def _flags(values_by_cell: Sequence[Sequence[float]], target: float) -> tuple[bool, ...]:
    return tuple(converged(v, target) for v in values_by_cell)
