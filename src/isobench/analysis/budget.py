"""A time budget (``budget = "30m"`` in a study, ``--budget`` on run): after a
first block of rounds, rounds go to the workload cases that are unresolved
but can still resolve in the time left. Pure functions; the runner measures
and asks ``allocate`` at each planned look (docs/statistics.md#budget).

Error control. The run looks at its data only at round counts fixed before
anything is measured (``points``: the first block, then blocks growing by
half, each a whole number of Latin squares over the environments, up to a
cap); every case stops at one of them, whether resolved, hopeless or out of
time (a block is started only when it is expected to fit; it is finished
even when it overruns). So each cell's final test is its test at one of
K = len(points) looks, and the final analysis tests at alpha/K, the rule
adaptive repetitions use (``repetitions.sequential_alpha``): whatever drops
a case, a false alarm where it stopped is a false alarm at one of the K
looks. benchmarks/calibration.py measures the A/A rate of this rule.

At a look, a case is

* resolved: every primary cell is changed or equivalent (±tolerance) at the
  strictest level its final verdict can use, alpha/(K·m) for m primary cells
  (Bonferroni over the table: a cell resolved so is still resolved under the
  final Benjamini-Hochberg, whose level is never stricter);
* hopeless: the rounds each of its open cells needs (``rounds_needed``)
  are beyond the cap, or beyond what the time left buys even if the case
  had it all;
* open: some open cell can still resolve; the case needs the rounds of the
  slowest of those (a cell out of reach does not hold the others back). The
  next block goes to the open cases in order of the time they still need,
  as many as the time left pays for; the others are out of time (they
  would not finish before the cases ahead of them).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from isobench.analysis.settle import ROUNDS_NEEDED_CAP, rounds_to_resolve
from isobench.analysis.stats import Effect, ratio_interval
from isobench.core.ids import shown

# The first block: at least this many rounds (4 degrees of freedom: the
# quick study's fixed plan), rounded up to whole Latin squares.
BUDGET_FIRST_MIN = 5
BUDGET_CAP = 100  # rounds, unless the study sets max_repetitions
GROWTH = 1.5  # each block adds half the rounds so far: K grows with log(cap)

RESOLVED = "resolved"
OPEN = "open"
HOPELESS = "hopeless"
OUT_OF_TIME = "out of time"

# ASCII digits only ("\d" takes Arabic-Indic ones), few of them (int() of
# 5,000 digits is Python's own error)
_DURATION = re.compile(r"(?:([0-9]{1,6})h)?(?:([0-9]{1,6})m)?(?:([0-9]{1,6})s)?")
_SECONDS = re.compile(r"[0-9]{1,6}(?:\.[0-9]{1,6})?")
MAX_BUDGET_S = 24 * 3600


def duration_seconds(text: str) -> float:
    """Seconds in "30m", "1h30m", "90s", "2h" or plain seconds ("90");
    ValueError with what is allowed. Every time the command line asks for
    is read by this one function."""
    text = text.strip() if isinstance(text, str) else ""
    if _SECONDS.fullmatch(text):
        return float(text)
    m = _DURATION.fullmatch(text)
    if not m or not any(m.groups()):
        raise ValueError(f"{shown(text)} is not a duration; write it like 30m, 1h30m, 90s or 90 (seconds)")
    h, mi, s = (int(g or 0) for g in m.groups())
    return float(h * 3600 + mi * 60 + s)


def parse_duration(text: str) -> float:
    """A budget: duration_seconds, more than 0 and at most 24h."""
    seconds = duration_seconds(text)
    if not 0 < seconds <= MAX_BUDGET_S:
        raise ValueError(f"{shown(text)}: a budget is more than 0 s and at most 24h")
    return float(seconds)


def budget_text(seconds: float) -> str | None:
    """The `--budget` that pays for SECONDS, as ``duration_seconds`` reads it:
    whole minutes, rounded up ("50m", "1h", "2h5m"); None beyond the longest
    budget (24h) or for no time at all."""
    if not 0 < seconds <= MAX_BUDGET_S:
        return None
    hours, minutes = divmod(math.ceil(seconds / 60), 60)
    if not hours:
        return f"{minutes}m"
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def points(first: int, unit: int, cap: int) -> tuple[int, ...]:
    """Round counts at which a budgeted run looks: ``first``, then growing by
    GROWTH, each a multiple of ``unit`` (the environments, so every block is
    whole Latin squares) and at least one unit more, the last one ``cap``."""
    if not 2 <= first <= cap or unit < 1:
        raise ValueError(f"need 2 <= first <= cap and unit >= 1, not first={first}, unit={unit}, cap={cap}")
    out = [first]
    while out[-1] < cap:
        grown = math.ceil(out[-1] * GROWTH / unit) * unit
        out.append(min(max(grown, out[-1] + unit), cap))
    return tuple(out)


def first_block(rounds: int, unit: int) -> int:
    """The first block: the study's planned rounds, at least BUDGET_FIRST_MIN,
    rounded up to whole Latin squares."""
    return math.ceil(max(rounds, BUDGET_FIRST_MIN, 2) / unit) * unit


@dataclass(frozen=True)
class Plan:
    """What a budgeted run may do, fixed before it measures anything."""

    budget_s: float
    points: tuple[int, ...]

    @property
    def looks(self) -> int:
        return len(self.points)

    @property
    def first(self) -> int:
        return self.points[0]

    @property
    def cap(self) -> int:
        return self.points[-1]

    def next_point(self, rounds: int) -> int | None:
        return next((p for p in self.points if p > rounds), None)


def make_plan(budget_s: float, planned_rounds: int, environments: int, cap: int | None) -> Plan:
    first = first_block(planned_rounds, max(environments, 1))
    return Plan(budget_s, points(first, max(environments, 1), max(cap or BUDGET_CAP, first)))


@dataclass(frozen=True)
class Evidence:
    """One workload case at a look."""

    case: tuple[str, str]  # (workload key, case)
    effects: tuple[Effect, ...]  # its primary cells against the baseline
    rounds: int  # measured rounds so far
    round_s: float  # one round of this case in every environment, as measured


@dataclass(frozen=True)
class Call:
    case: tuple[str, str]
    state: str  # RESOLVED | OPEN | HOPELESS | OUT_OF_TIME
    rounds: int
    needed: int | None  # rounds its open cells need (None: resolved)
    why: str


@dataclass(frozen=True)
class Allocation:
    calls: tuple[Call, ...]
    more: int  # rounds in the next block; 0: stop
    measure: tuple[tuple[str, str], ...]  # the cases the next block measures
    text: str

    @property
    def stop(self) -> bool:
        return self.more == 0

    def count(self, state: str) -> int:
        return sum(c.state == state for c in self.calls)


def cell_resolved(e: Effect, q: float, tol_pct: float) -> bool:
    """Changed (beyond its noise floor) or equivalent within ±max(tol, floor)
    at level 1 - q, as ``verdicts`` decides, Bonferroni instead of BH."""
    if not e.tested:
        return False
    rejected = e.p <= q
    lo, hi = ratio_interval(e.log_ratio, e.se, e.df, q, exclude=rejected)

    def inside(pct: float) -> bool:
        return 1 - pct / 100 <= lo and hi <= 1 + pct / 100

    return (rejected and not inside(e.noise_pct)) or inside(max(tol_pct, e.noise_pct))


def cell_needs(e: Effect, q: float, tol_pct: float) -> int:
    """Rounds after which the cell would be resolved at its observed noise:
    the fewer of what settles it either way (``rounds_to_resolve``) and what
    calls the change it shows now (the interval's half-width below |log ratio|)."""
    if not e.tested:
        return ROUNDS_NEEDED_CAP + 1
    df_factor = e.df_factor
    either = (
        rounds_to_resolve(e.noise_sd, q, max(tol_pct, e.noise_pct), df_factor, df_lost=e.df_lost)
        or ROUNDS_NEEDED_CAP + 1
    )
    size = abs(e.log_ratio)
    if size > 0 and math.isfinite(size):
        # rounds_to_resolve aims at a half-width of log1p(margin)/2: this margin makes that |log ratio|
        called = rounds_to_resolve(e.noise_sd, q, math.expm1(min(2 * size, 700)) * 100, df_factor, df_lost=e.df_lost)
        if called is not None:
            either = min(either, called)
    return either


def allocate(evidence: Sequence[Evidence], plan: Plan, time_left_s: float, q: float, tol_pct: float) -> Allocation:
    """The call on every case at a look, and the next block."""
    calls: list[Call] = []
    for ev in evidence:
        open_cells = [e for e in ev.effects if not cell_resolved(e, q, tol_pct)]
        if not open_cells:
            calls.append(Call(ev.case, RESOLVED, ev.rounds, None, ""))
            continue
        untested = [e for e in open_cells if not e.tested]
        if len(untested) == len(open_cells):
            calls.append(Call(ev.case, HOPELESS, ev.rounds, None, f"cannot be tested: {untested[0].reason}"))
            continue
        needs = [cell_needs(e, q, tol_pct) for e in open_cells if e.tested]
        affordable = ev.rounds + (int(time_left_s // ev.round_s) if ev.round_s > 0 else 0)
        # a case's rounds serve all its cells: it stays open while any of them
        # can still resolve, for as many rounds as the reachable ones need (one
        # hopeless environment no longer stops the others' answers)
        reachable = [n for n in needs if n <= min(plan.cap, affordable)]
        needed = max(reachable) if reachable else max(needs)
        if plan.next_point(ev.rounds) is None:
            calls.append(Call(ev.case, HOPELESS, ev.rounds, max(needs), f"unresolved at the cap of {plan.cap} rounds"))
        elif reachable:
            out_of_reach = len(open_cells) - len(reachable)
            reach = f"{out_of_reach} of its {len(open_cells)} open cells out of reach" if out_of_reach else ""
            calls.append(Call(ev.case, OPEN, ev.rounds, needed, reach))
        elif needed > plan.cap:
            calls.append(
                Call(
                    ev.case,
                    HOPELESS,
                    ev.rounds,
                    needed,
                    f"needs about {_needs(needed)} rounds, beyond the cap of {plan.cap}",
                )
            )
        else:
            calls.append(
                Call(
                    ev.case,
                    HOPELESS,
                    ev.rounds,
                    needed,
                    f"needs about {needed} rounds; the time left allows about {affordable}",
                )
            )
    opened = [c for c in calls if c.state == OPEN]
    if not opened:
        return Allocation(tuple(calls), 0, (), _text(calls, 0, time_left_s))
    rounds = opened[0].rounds
    more = (plan.next_point(rounds) or rounds) - rounds
    round_s = {ev.case: ev.round_s for ev in evidence}
    # the cases nearest to an answer first, while the block is paid for
    chosen, spent = [], 0.0
    for c in sorted(opened, key=lambda c: ((c.needed or 0) - c.rounds) * round_s[c.case]):
        cost = more * round_s[c.case]
        if spent + cost <= time_left_s:
            chosen.append(c.case)
            spent += cost
    final = tuple(
        c
        if c.state != OPEN or c.case in chosen
        else Call(c.case, OUT_OF_TIME, c.rounds, c.needed, "the time left went to cases nearer an answer")
        for c in calls
    )
    more = more if chosen else 0
    return Allocation(
        final, more, tuple(c for c in (ev.case for ev in evidence) if c in chosen), _text(final, more, time_left_s)
    )


def _needs(n: int) -> str:
    return f">{ROUNDS_NEEDED_CAP}" if n > ROUNDS_NEEDED_CAP else str(n)


def _text(calls: Sequence[Call], more: int, time_left_s: float) -> str:
    counts = {s: sum(c.state == s for c in calls) for s in (RESOLVED, OPEN, HOPELESS, OUT_OF_TIME)}
    parts = [f"{counts[RESOLVED]} resolved", f"{counts[OPEN]} open", f"{counts[HOPELESS]} hopeless"]
    if counts[OUT_OF_TIME]:
        parts.append(f"{counts[OUT_OF_TIME]} out of time")
    left = f"{max(time_left_s, 0) / 60:.1f} min left"
    nxt = f"{more} more rounds of {counts[OPEN]} case(s)" if more else "stopping"
    return f"{', '.join(parts)} of {len(calls)} cases; {left}; {nxt}"
