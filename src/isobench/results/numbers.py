"""How numbers are printed in every report: core/numbers.py's formatters
(re-exported for the report's modules), and rounds said with their time."""

from __future__ import annotations

from isobench.core.numbers import DASH, MINUS, fmt_duration, fmt_num, fmt_pct

__all__ = ["DASH", "MINUS", "fmt_duration", "fmt_num", "fmt_pct", "rounds_text"]


def rounds_text(rounds: int | None, seconds_per_round: float | None, cap: int) -> str:
    """ "about 72 rounds (about 47 min)": rounds that would settle a cell, and
    their wall time at a run's own pace when known; "more than CAP rounds"
    beyond the cap."""
    if rounds is None:
        return "more rounds than can be said"
    if rounds > cap:
        return f"more than {cap} rounds"
    when = f" (about {fmt_duration(rounds * seconds_per_round)})" if seconds_per_round else ""
    return f"about {rounds} rounds{when}"
