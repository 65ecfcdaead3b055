"""The compare gate on a host whose runs shift as a whole (issue 23): its
A/A rate and power with and without the between-run spread
(results/between.py), raw and --overhead, by simulation through the real API.

    .venv/bin/python benchmarks/between_calibration.py [--sims 400]

Each simulated host has 7 primary cases x 2 environments = 14 primary cells
(the quick study's), n rounds a run, lognormal noise of CV 5% a sample, and
a shift of every cell's run mean, drawn per run and cell from a lognormal of
SD TAU (0: a steady host; 10%: fio randwrite's on the development VM).
K runs of the study are stored before the candidate B (A, the reference, is
the last of them); B is unchanged (A/A) or has one cell slowed by SLOW%.
Per setting: how often ``compare A B --fail-on-regression 5`` exits 1,
with its interval (Wilson, 95%), without and with the between-run spread,
in the raw form and with --overhead (the shift is drawn per environment, so
it moves an environment's ratio to native too, as fio's did).
Seeded: the same table every time.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from isobench.results.between import spreads
from isobench.results.compare import compare_overheads, compare_runs
from isobench.results.model import MetricKey, RunData

CASES = 7
ENVS = ("native", "docker-nat")
CV = 0.05
N = 10
GATE = 5.0
SEED = 20141121
STUDY = '[study]\nname = "sim"\nbaseline = "native"\n[environments.native]\n[environments.docker-nat]\n' + "".join(
    f"[workloads.w{i}]\nsize_mb = 32\n" for i in range(CASES)
)
HOST = {"cores": 2, "cpu_model": "Simulated CPU", "mem_bytes": 2**34}
KEYS = [MetricKey(f"w{i}", "default", "throughput", "MB/s", True, "throughput", True) for i in range(CASES)]


def run(run_id: str, rng: np.random.Generator, tau: float, slow: dict | None = None) -> RunData:
    values = {}
    for k in KEYS:
        for env in ENVS:
            level = 100.0 * math.exp(rng.normal(0, tau)) * (slow or {}).get((k.workload, env), 1.0)
            values[(k, env)] = list(level * np.exp(rng.normal(0, CV, N)))
    rounds = {key: list(range(N)) for key in values}  # interleaved: round i of every environment pairs
    return RunData(
        run_id,
        "sim",
        f"2026-05-01T10:{len(run_id):02d}:00+0000",
        None,
        "complete",
        HOST,
        STUDY,
        "h",
        "native",
        list(ENVS),
        {},
        list(KEYS),
        values,
        rounds=rounds,
    )


def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    z, p = 1.96, k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def rate(tau: float, stored: int, slow_pct: float, sims: int, rng: np.random.Generator) -> list[int]:
    """Gate exits over ``sims`` compares: raw without, raw with the spread,
    overhead without, overhead with."""
    out = [0, 0, 0, 0]
    slow = {("w0", "docker-nat"): 1 - slow_pct / 100} if slow_pct else None
    for _ in range(sims):
        history = [run(f"r{i}", rng, tau) for i in range(stored)]
        a, b = history[-1], run("b", rng, tau, slow)
        out[0] += bool(compare_runs(a, b).regressions(GATE))
        out[1] += bool(compare_runs(a, b, between=spreads(history, a, b)).regressions(GATE))
        out[2] += bool(compare_overheads(a, b).regressions(GATE))
        out[3] += bool(compare_overheads(a, b, between=spreads(history, a, b, overhead=True)).regressions(GATE))
    return out


def fmt(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=400)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(SEED)
    t0 = time.monotonic()
    print(
        f"14 primary cells, {N} rounds a run, CV {CV:.0%} a sample; gate: --fail-on-regression {GATE:g}; "
        f"{a.sims} compares a row"
    )
    print(
        f"{'shift SD':>8} {'stored':>6} {'slowed':>6}   {'raw':>22}   {'raw + between':>22}   "
        f"{'overhead':>22}   {'overhead + between':>22}"
    )
    for tau in (0.0, 0.10):
        for stored in (3, 5, 10):
            for slow in (0.0, 20.0, 40.0):
                counts = rate(tau, stored, slow, a.sims, rng)
                print(
                    f"{tau:8.0%} {stored:6d} {slow:5.0f}%   " + "   ".join(f"{fmt(k, a.sims):>22}" for k in counts),
                    flush=True,
                )
    print(f"wall {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
