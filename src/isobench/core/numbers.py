"""How numbers are printed everywhere (reports, warnings, the command line):
significant figures without scientific notation, signed percentages, the
paper's typographic minus. In core so that analysis/ words its warnings as
the tables print their numbers."""

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


def fmt_bound(pct: float) -> str:
    """An interval's bound: as fmt_pct, but a bound lies on one side of zero,
    so one that rounds to 0.0% keeps its sign and first digit (−0.04%, not
    "±0.0%", which reads as a half-width: issue 55); exactly 0 is 0.0%."""
    text = fmt_pct(pct)
    if not text.startswith("\u00b1"):
        return text
    return "0.0%" if pct == 0 else ("+" if pct > 0 else MINUS) + f"{abs(pct):.1g}%"


def fmt_duration(seconds: float) -> str:
    """A wall time as people say it: seconds, minutes, hours."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plural(n: int, word: str, many: str | None = None) -> str:
    """ "1 environment", "2 environments" ("1 sample", "2 samples")."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def signed(x: float, decimals: int = 1) -> str:
    """+1.2 / \u22121.2: a signed statistic (a z score, a correlation) with the typographic minus."""
    return f"{x:+.{decimals}f}".replace("-", MINUS)
