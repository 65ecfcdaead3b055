"""Calibration of `isobench history`'s change points, by simulation (no
benchmark is run).

    .venv/bin/python benchmarks/history_calibration.py           # full, about two minutes on 2 cores
    .venv/bin/python benchmarks/history_calibration.py --quick   # fewer series, seconds

A series is N runs of one cell, each run's overhead an estimate on the log
scale with its standard error, as `isobench history` reads them from each
run's Table I. Per-run SEs of 0.02 to 0.10 are this host's range (2-5% in
`isobench report` of the stored quick runs; 10% for a noisy cell). Each
run's reported SE is itself estimated, from 5 rounds (4 degrees of freedom):
SE * sqrt(chi2_4 / 4).

For N in 8, 16, 32 and SE in 0.02, 0.05, 0.10 it measures, through the real
code (changepoints.find_steps, then changepoints.judge with the series
alone):

* the false-alarm rate: the share of A/A series (nothing changed) in which
  a step is confirmed;
* the detection rate of a step making the environment 10% and 20% slower
  halfway through: the share of series with a confirmed step for the worse
  within one run of the true place;

first when runs scatter exactly as their SEs say, then when they scatter
more (a between-run sd equal to the SE: what reboots and placement add),
and the false-alarm rate when one run in the series is wild (15 SEs off,
with an ordinary SE). Each rate with its 95% Wilson interval. Seeded: the
same tables every time. docs/history.md keeps the output.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from isobench.analysis import changepoints as cp

NS = (8, 16, 32)
SES = (0.02, 0.05, 0.10)
STEPS = (0.10, 0.20)  # slowdowns planted halfway
ROUND_DF = 4  # 5 paired rounds per run
WILD_SES = 15.0
SEED = 20261125


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, n: int) -> str:
    lo, hi = wilson(hits, n)
    return f"{hits / n * 100:.1f}% [{lo * 100:.1f}, {hi * 100:.1f}]"


def one_series(rng, n: int, se: float, slowdown: float, tau_factor: float, wild: bool) -> tuple[bool, bool]:
    """(any step confirmed, the planted step found) for one simulated series."""
    at = n // 2
    y = rng.normal(0.0, math.sqrt(se * se * (1 + tau_factor**2)), n)
    if slowdown:
        y[at:] += math.log(1 - slowdown)
    s = se * np.sqrt(rng.chisquare(ROUND_DF, n) / ROUND_DF)
    if wild:
        y[rng.integers(0, n)] += WILD_SES * se
    judged = cp.judge([cp.find_steps(y, s)])[0]
    confirmed = [j for j in judged if j.confirmed]
    found = slowdown > 0 and any(abs(j.step.index - at) <= 1 and j.step.shift < 0 for j in confirmed)
    return bool(confirmed), found


def table(trials: int, tau_factor: float, title: str) -> list[str]:
    lines = [
        f"### {title}",
        "",
        "| runs | per-run SE | false alarms (A/A) | detected: 10% step | detected: 20% step |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in NS:
        for se in SES:
            rng = np.random.default_rng([SEED, n, int(se * 1000), int(tau_factor * 10)])
            aa = sum(one_series(rng, n, se, 0.0, tau_factor, False)[0] for _ in range(trials))
            found = [sum(one_series(rng, n, se, step, tau_factor, False)[1] for _ in range(trials)) for step in STEPS]
            cells = [rate(aa, trials), *(rate(f, trials) for f in found)]
            lines.append(f"| {n} | {se:.2f} | " + " | ".join(cells) + " |")
    return lines + [""]


def wild_table(trials: int) -> list[str]:
    lines = [
        f"### One wild run ({WILD_SES:g} SEs off, ordinary SE) in an A/A series",
        "",
        "| runs | false alarms |",
        "|---:|---:|",
    ]
    for n in NS:
        rng = np.random.default_rng([SEED, n, 99])
        hits = sum(one_series(rng, n, 0.05, 0.0, 0.0, True)[0] for _ in range(trials))
        lines.append(f"| {n} | {rate(hits, trials)} |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 series per cell instead of 2000")
    parser.add_argument("--trials", type=int, help="series per cell of the tables")
    args = parser.parse_args()
    trials = args.trials or (300 if args.quick else 2000)
    start = time.monotonic()
    out = [
        f"{trials} simulated series per cell; MIN_SEGMENT {cp.MIN_SEGMENT}, penalty "
        f"{cp.PENALTY_PER_LOG_N:g} log n, alpha {cp.ALPHA:g}.",
        "",
    ]
    out += table(trials, 0.0, "Runs scatter as their SEs say")
    out += table(trials, 1.0, "Runs scatter more: a between-run sd equal to the SE")
    out += wild_table(trials)
    out.append(f"({time.monotonic() - start:.0f} s)")
    print("\n".join(out))


if __name__ == "__main__":
    main()
