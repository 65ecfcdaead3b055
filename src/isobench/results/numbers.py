"""How numbers are printed in every report: core/numbers.py's formatters
(re-exported for the report's modules), and rounds said with their time."""

from __future__ import annotations

from isobench.analysis.budget import BUDGET_CAP, budget_text
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP
from isobench.core.numbers import DASH, MINUS, fmt_duration, fmt_num, fmt_pct

__all__ = ["DASH", "MINUS", "fmt_duration", "fmt_num", "fmt_pct", "rounds_text", "rounds_time"]


def rounds_text(
    rounds: int | None, seconds_per_round: float | None, cap: int, warmup: int = 0, fixed_s: float = 0.0
) -> str:
    """ "about 72 rounds (about 47 min here, --budget 47m)": the rounds that
    would settle a cell and, at a pace known, their time (``rounds_time``);
    "more than CAP rounds" beyond the cap. The one sentence validate, the
    report and the gates say it with."""
    if rounds is None:
        return "more rounds than can be said"
    if rounds > cap:
        return f"more than {cap} rounds"
    when = rounds_time(rounds, seconds_per_round, warmup, fixed_s)
    return f"about {rounds} rounds" + (f" ({when})" if when else "")


def rounds_time(rounds: int, seconds_per_round: float | None, warmup: int = 0, fixed_s: float = 0.0) -> str:
    """ "about 47 min here, --budget 47m": at a pace (seconds per round of
    every case in every environment: a run's own, or validate's estimate),
    the wall time of a run of ROUNDS measured rounds after WARMUP warm-up
    rounds and FIXED_S of starts, and the `--budget` that pays for it
    (analysis.budget.budget_text); "" when the pace is unknown."""
    if not seconds_per_round or seconds_per_round <= 0:
        return ""
    wall = seconds_per_round * (warmup + rounds) + fixed_s
    budget = budget_text(wall)
    if budget is None:
        buys = "more than any --budget (24h)"
    elif rounds > BUDGET_CAP:  # a budget stops at its cap unless the study raises it
        buys = f"--budget {budget} with max_repetitions = {rounds}"
    else:
        buys = f"--budget {budget}"
    return f"about {fmt_duration(wall)} here, {buys}"


def capped(n: int | None) -> int | None:
    """rounds_needed as a document holds it: null beyond the cap (the cap + 1
    stands for "more than the cap" inside; beyond_cap says it outside)."""
    return None if n is None or n > ROUNDS_NEEDED_CAP else n


def beyond_cap(n: int | None) -> bool:
    """rounds_needed stands for "more than the cap" (docs/output.md)."""
    return n is not None and n > ROUNDS_NEEDED_CAP
