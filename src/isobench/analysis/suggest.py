"""What would settle an inconclusive cell, as every place that says so
says it: the rounds of a fixed run, at the fixed run's level, and the
`--budget` of a budgeted one, at the level its looks test at. Pure; the
rounds are ``settle.rounds_to_settle``'s (4 times in 5, whatever the true
change, allowing for the noise estimate's own uncertainty).

A budgeted run (``analysis.budget``) looks at K round counts fixed before it
starts and tests at alpha/K: a cell needs more rounds there than in a fixed
run, and a case stops only at a look, so the budget must pay for the first
look at or after those rounds. Its looks depend on the study (its first
block, its environments, its cap: max_repetitions, else 100 rounds), not on
the budget; rounds past the cap ask for a larger max_repetitions, which adds
looks (and lowers the level): the smallest cap whose own level the rounds
fit under is the one named.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from isobench.analysis.budget import BUDGET_CAP, MAX_BUDGET_S, budget_text, first_block, points
from isobench.analysis.settle import rounds_to_settle
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP

MAX_REPETITIONS = 1000  # the most a study's max_repetitions may be (study.StudyMeta)


@dataclass(frozen=True)
class Looks:
    """The looks a `--budget` run of the study would take: a first block of
    ``first`` rounds in whole Latin squares of ``unit`` environments, then
    blocks growing by half up to ``cap``."""

    first: int
    unit: int
    cap: int

    def points(self, cap: int | None = None) -> tuple[int, ...]:
        return points(self.first, self.unit, max(cap or self.cap, self.first))


def looks_of(repetitions: int, environments: int, max_repetitions: int | None) -> Looks:
    """A study's budget looks, as ``budget.make_plan`` lays them out."""
    unit = max(environments, 1)
    first = first_block(repetitions, unit)
    return Looks(first, unit, max(max_repetitions or BUDGET_CAP, first))


@dataclass(frozen=True)
class Pace:
    """A run's wall time: seconds a round of every case in every environment
    (a run's own, or validate's estimate), its warm-up rounds and the fixed
    seconds of starting its instances."""

    seconds_per_round: float
    warmup: int = 0
    fixed_s: float = 0.0

    def wall_s(self, rounds: int) -> float:
        return self.seconds_per_round * (self.warmup + rounds) + self.fixed_s


@dataclass(frozen=True)
class BudgetRun:
    """A `--budget` run that settles the cell: the rounds it needs at its
    level, reached at its look ``look`` of ``looks``; the study's cap raised to
    ``max_repetitions`` when its own is short (None: its own holds); the wall
    time to that look (None: no pace)."""

    rounds: int
    looks: int
    look: int
    max_repetitions: int | None
    wall_s: float | None

    @property
    def budget(self) -> str | None:
        """The `--budget` that pays for ``wall_s`` in whole minutes; None
        beyond the longest budget (24h) or without a pace."""
        return None if self.wall_s is None else budget_text(self.wall_s)

    @property
    def beyond_24h(self) -> bool:
        return self.wall_s is not None and self.wall_s > MAX_BUDGET_S


@dataclass(frozen=True)
class Suggestion:
    """``rounds``: a fixed run's (> ROUNDS_NEEDED_CAP: beyond the cap; None:
    nothing can be said, the margin 0 or the noise unknown), ``wall_s`` their
    time (None: no pace); ``budget``: the budgeted run's (None when the study
    cannot take a budget or the rounds are beyond every cap; ``budget_beyond``
    says which: it could, but it would need more than MAX_REPETITIONS)."""

    rounds: int | None
    wall_s: float | None
    budget: BudgetRun | None
    budget_beyond: bool = False

    @property
    def beyond_cap(self) -> bool:
        return self.rounds is not None and self.rounds > ROUNDS_NEEDED_CAP


@dataclass(frozen=True)
class Noise:
    """A cell's observed noise: the per-round SD of its log ratio, the
    degrees of freedom it was estimated on, and its test's df at n rounds,
    df_factor·(n - 1) - df_lost; ``now`` the rounds it has (a suggestion
    never asks for fewer: unequal sides make the equal-n figure approximate)."""

    sd: float
    df: float
    df_factor: float = 1.0
    df_lost: float = 0.0
    now: int = 0

    def rounds(self, q: float, margin_pct: float, cap: int = ROUNDS_NEEDED_CAP) -> int | None:
        """``settle.rounds_to_settle`` at level 1 - q, as a verdict's
        ``rounds_needed`` asks it."""
        return rounds_to_settle(self.sd, self.df, q, margin_pct, self.df_factor, self.df_lost, cap, now=self.now)


def suggest(
    noise: Noise,
    q: float,
    margin_pct: float,
    looks: Looks | None = None,
    pace: Pace | None = None,
) -> Suggestion:
    """The fixed run's rounds at level 1 - q (q the fixed run's: alpha/m for m
    cells, no looks), and, with ``looks``, the budgeted run's at 1 - q/K."""
    rounds = noise.rounds(q, margin_pct)
    wall = pace.wall_s(rounds) if pace is not None and rounds is not None and rounds <= ROUNDS_NEEDED_CAP else None
    budget = None if looks is None or rounds is None else budget_run(noise, q, margin_pct, looks, pace)
    return Suggestion(rounds, wall, budget, looks is not None and rounds is not None and budget is None)


def budget_run(noise: Noise, q: float, margin_pct: float, looks: Looks, pace: Pace | None) -> BudgetRun | None:
    """The budgeted run's rounds at alpha/K and its first look at or after
    them, under the study's cap or the smallest max_repetitions that holds
    them (the module docstring); None beyond MAX_REPETITIONS rounds."""

    @functools.cache
    def needed(k: int) -> int | None:
        return noise.rounds(q / k, margin_pct, MAX_REPETITIONS)

    cap = looks.cap
    while cap <= MAX_REPETITIONS:
        pts = looks.points(cap)
        n = needed(len(pts))
        if n is None or n > MAX_REPETITIONS:
            return None
        if n <= pts[-1]:
            look = next(p for p in pts if p >= n)
            wall = pace.wall_s(look) if pace is not None else None
            return BudgetRun(n, len(pts), look, cap if cap > looks.cap else None, wall)
        # a larger cap adds looks, so the rounds only grow: no cap below them holds them
        cap = max(cap + 1, n)
    return None
