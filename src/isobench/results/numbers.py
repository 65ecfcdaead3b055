"""How numbers are printed in every report: significant figures without
scientific notation, signed percentages, the paper's typographic minus."""

from __future__ import annotations

import math

MINUS = "\u2212"  # typographic minus, as in the paper
DASH = "\u2014"


def fmt_num(x: float, sig: int = 4) -> str:
    """``sig`` significant figures, but never scientific notation for large
    numbers: 110234 req/s stays 110234, 31.457 s is 31.46, 0.012634 is 0.01263."""
    if x is None or math.isnan(x):
        return DASH
    if math.isinf(x):
        return "\u221e" if x > 0 else MINUS + "\u221e"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (sig - 1):
        text = f"{x:.0f}"
    else:
        text = f"{x:.{sig}g}"
    return text.replace("-", MINUS)


def fmt_pct(pct: float) -> str:
    """Signed change: one decimal below 100%, whole percent above."""
    if math.isnan(pct):
        return DASH
    text = f"{abs(pct):.1f}" if abs(pct) < 100 else f"{abs(pct):.0f}"
    if float(text) == 0:
        return "\u00b1" + text + "%"
    return ("+" if pct > 0 else MINUS) + text + "%"


def fmt_duration(seconds: float) -> str:
    """A wall time as people say it: seconds, minutes, hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
