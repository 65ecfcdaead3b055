"""How numbers are printed in every report: core/numbers.py's formatters
(re-exported for the report's modules), and rounds needed as a document
holds them (a suggestion is said by results/suggestion.py)."""

from __future__ import annotations

from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP
from isobench.core.numbers import DASH, MINUS, fmt_bound, fmt_duration, fmt_num, fmt_pct

__all__ = ["DASH", "MINUS", "fmt_bound", "fmt_duration", "fmt_num", "fmt_pct"]


def capped(n: int | None) -> int | None:
    """rounds_needed as a document holds it: null beyond the cap (the cap + 1
    stands for "more than the cap" inside; beyond_cap says it outside)."""
    return None if n is None or n > ROUNDS_NEEDED_CAP else n


def beyond_cap(n: int | None) -> bool:
    """rounds_needed stands for "more than the cap" (docs/output.md)."""
    return n is not None and n > ROUNDS_NEEDED_CAP
