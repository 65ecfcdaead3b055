"""HPL's own result lines in hpcc's output: a run that solves several times
(hpcc's `hpl_runs`) is reported as their combined rate, where hpcc's
summary keeps only the best solve. Pure."""

from __future__ import annotations

import re

# HPL's result line: T/V, N, NB, P, Q, time (s, 2 decimals), Gflops (4 digits)
_HPL_RESULT_RE = re.compile(r"^W[RC]\S+\s+(\d+)\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+([\d.]+e[+-]\d+)\s*$", re.M)


def parse_hpl_results(text: str) -> list[tuple[int, float]]:
    """(N, Gflops) of each HPL solve in the last hpcc run of hpccoutf.txt."""
    last = text.rsplit("Begin of HPL section.", 1)[-1].split("End of HPL section.", 1)[0]  # hpcc appends
    return [(int(n), float(g)) for n, g in _HPL_RESULT_RE.findall(last)]


def hpl_flops(n: int) -> float:
    return 2.0 / 3.0 * n**3 + 1.5 * n**2  # HPL's own count (HPL_pdtest.c)


def combined_gflops(solves: list[tuple[int, float]]) -> float:
    """The solves' flops over their time: what one longer solve would report.
    From each solve's Gflops, which HPL prints to 4 digits where it prints
    the time to 0.01 s."""
    flops = sum(hpl_flops(n) for n, _ in solves)
    seconds = sum(hpl_flops(n) / (g * 1e9) for n, g in solves)
    return flops / seconds / 1e9
