"""How often the suggested rounds and --budget settle a cell, by simulation
through the real code (analysis/suggest.py; no benchmark is run).

    .venv/bin/python benchmarks/settle_calibration.py           # a few minutes
    .venv/bin/python benchmarks/settle_calibration.py --quick   # seconds

A pilot of n0 rounds (paired log ratios, true SD sd) suggests, from its own
SD, a fixed run's rounds at level 1 - q and a budgeted run's (the quick
study's looks: 3 environments, 5 repetitions, 6 to 100 rounds, K = 8) at
1 - q/K. Then, at a true change of 0, half the margin (the hardest) and the
margin's edge:

* fixed: runs of the suggested rounds, judged at q;
* looks: runs that look at the budget's planned points up to the suggested
  look, at q/K, resolved at the first look they resolve at;
* allocate: budgeted runs given the suggested --budget (at 60 s a round),
  through ``budget.allocate`` at every look, as the runner does: a case it
  calls hopeless (its own point estimate of the rounds needed beyond what the
  time left buys) stops unresolved.

"resolved": changed (the interval excludes 1) or equivalent within ±5%.
Each figure is the share over pilots x runs; pilots whose suggestion is
beyond 1000 rounds are left out (said, not suggested: "kept" counts the
others), which leaves the pilots that saw less noise than there is: the
noisiest rows fall short of 0.8 for that reason.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats as st

from isobench.analysis.budget import RESOLVED, Evidence, allocate, duration_seconds, make_plan
from isobench.analysis.stats import compare_cell
from isobench.analysis.suggest import Noise, Pace, looks_of, suggest

M = 5.0
LO, HI = math.log1p(-M / 100), math.log1p(M / 100)
DELTAS = (0.0, HI / 2, HI)
PACE = Pace(60.0, warmup=1, fixed_s=10.0)  # a minute a round: 24 h holds 1000 rounds


def resolved(x: np.ndarray, q: float) -> np.ndarray:
    n = x.shape[1]
    m, s = x.mean(axis=1), x.std(axis=1, ddof=1)
    h = st.t.isf(q / 2, n - 1) * s / math.sqrt(n)
    return (np.abs(m) > h) | ((m - h >= LO) & (m + h <= HI))


def allocated(delta: float, sd: float, budget_s: float, cap: int | None, reps: int, m: int, rng) -> bool:
    """One budgeted run of one case through budget.allocate, the other m - 1
    cells of its table left out (the level is theirs: alpha/(K·m))."""
    plan = make_plan(budget_s, reps, 3, cap)
    q = 0.05 / (plan.looks * m)
    logs = list(rng.normal(delta, sd, plan.first))
    while True:
        c = np.exp(np.array(logs))
        e = compare_cell(c, np.ones(c.size), True, pairs=list(zip(c, np.ones(c.size))), tol_pct=M)
        spent = PACE.wall_s(len(logs))
        a = allocate([Evidence(("w", "c"), (e,), len(logs), PACE.seconds_per_round)], plan, budget_s - spent, q, M)
        if a.calls[0].state == RESOLVED:
            return True
        if a.stop:
            return False
        logs += list(rng.normal(delta, sd, a.more))


def row(sd: float, n0: int, m: int, pilots: int, runs: int, alloc: int, rng) -> dict:
    q = 0.05 / m
    looks = looks_of(5, 3, None)
    out: dict = {k: [[] for _ in DELTAS] for k in ("fixed", "looks", "allocate")}
    kept = 0
    for i in range(pilots):
        s = float(rng.normal(0, sd, n0).std(ddof=1))
        got = suggest(Noise(s, n0 - 1, now=n0), q, M, looks, PACE)
        if got.rounds is None or got.beyond_cap:
            continue
        kept += 1
        b = got.budget
        for j, delta in enumerate(DELTAS):
            out["fixed"][j].append(resolved(rng.normal(delta, sd, (runs, got.rounds)), q).mean())
            if b is None or b.budget is None:
                continue  # beyond 1000 rounds at its looks: said, not suggested
            pts = looks.points(b.max_repetitions)
            x = rng.normal(delta, sd, (runs, b.look))
            by = np.zeros(runs, dtype=bool)
            for p in (p for p in pts if p <= b.look):
                by |= resolved(x[:, :p], q / b.looks)
            out["looks"][j].append(by.mean())
            if i < alloc:
                budget_s = duration_seconds(b.budget)
                out["allocate"][j].append(allocated(delta, sd, budget_s, b.max_repetitions, 5, m, rng))
    return {"kept": kept, **{k: [float(np.mean(v)) if v else math.nan for v in out[k]] for k in out}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="few pilots: seconds, rough figures")
    args = ap.parse_args()
    pilots, runs, alloc = (40, 20, 10) if args.quick else (400, 40, 100)
    rng = np.random.default_rng(45)
    started = time.time()
    print("| m | pilot n0 | true SD | kept | fixed: 0, M/2, M | looks: 0, M/2, M | allocate: 0, M/2, M |")
    print("|---|---|---|---|---|---|---|")
    for m in (14, 66):
        for n0 in (3, 5, 10):
            for sd in (0.01, 0.03, 0.1):
                r = row(sd, n0, m, pilots, runs, alloc, rng)
                cells = [", ".join(f"{x:.2f}" for x in r[k]) for k in ("fixed", "looks", "allocate")]
                print(f"| {m} | {n0} | {sd:g} | {r['kept']} | " + " | ".join(cells) + " |", flush=True)
    took = time.time() - started
    print(f"({pilots} pilots x {runs} runs per figure, {alloc} budgeted runs through allocate; {took:.0f} s)")


if __name__ == "__main__":
    main()
