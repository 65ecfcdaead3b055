"""Calibration of the time budget (isobench.analysis.budget) and of the primary
family, by simulation through the real code (no benchmark is run).

    .venv/bin/python benchmarks/budget_calibration.py           # about a minute
    .venv/bin/python benchmarks/budget_calibration.py --quick   # seconds

A simulated study is a table of primary cells, one per workload case and
compared environment (14, as the quick study's 7 cases x 2 environments),
each with its paired per-round log-ratio SD drawn from what this host showed
(issue 23's re-analysis: 0.057 to 0.205, median 0.11; the CPU pilot 0.026):
SDS below. A budgeted run measures a first block, then asks
``budget.allocate`` at every planned look which cases get the next block,
exactly as the runner does; its final verdicts are ``compare_cell`` at
alpha/K and ``verdicts.adjust`` (Benjamini-Hochberg) over the 14 cells.

It measures:

* A/A: the share of runs with any cell "changed" and with a gate failure
  (changed for the worse by more than 5%), with 95% intervals, for fixed
  runs of 5, 10 and 20 rounds and for budgeted runs; it must stay <= 5%
  (exit 1 when even an interval's low end is above);
* the share of cells resolved (changed or equivalent within ±5%) and the
  rounds spent;
* power: the share of runs that call a planted slowdown of 5%, 10% or 20% in
  one cell "changed", fixed at n = 5, 10, 20 and budgeted; and at n = 5 with
  the 14 primaries against one family of all 66 metrics (what Table I tested
  before primaries).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from isobench.analysis import budget as b
from isobench.analysis.repetitions import sequential_alpha
from isobench.analysis.stats import ALPHA, compare_cell
from isobench.analysis.verdicts import CHANGED, EQUIVALENT, adjust, regressions

SEED = 20261125
CELLS = 14
SDS = (0.026, 0.057, 0.08, 0.11, 0.11, 0.15, 0.205)  # per-round paired log-ratio SD, cycled over the cells
ROUND_S = 10.0  # one round of one case in every environment
BUDGET_ROUNDS = 30  # the budget buys this many rounds of every case
TOL = 5.0
GATE = 5.0
PLANTED = (5.0, 10.0, 20.0)


def sds() -> np.ndarray:
    return np.array([SDS[i % len(SDS)] for i in range(CELLS)])


def draw(rng, n: int, planted: float = 0.0) -> np.ndarray:
    """Per-round log ratios of every cell (rows) for n rounds; cell 0 slowed by ``planted`` %."""
    x = rng.standard_normal((CELLS, n)) * sds()[:, None]
    x[0] += math.log1p(-planted / 100)
    return x


def effect(log_ratios: np.ndarray, alpha: float):
    ref = np.full(log_ratios.size, 100.0)
    cand = ref * np.exp(log_ratios)
    return compare_cell(cand, ref, True, pairs=list(zip(cand, ref)), alpha=alpha)


def verdicts(x: np.ndarray, rounds: np.ndarray, looks: int, m_extra: int = 0):
    """Final verdicts: each cell on its first rounds[i] rounds, BH over all
    (plus ``m_extra`` null cells at p = 1, standing for a larger family)."""
    alpha = sequential_alpha(looks, alpha=ALPHA)
    effects = [effect(x[i, : rounds[i]], alpha) for i in range(CELLS)]
    if m_extra:
        effects += [effect(np.zeros(3) + 1e-9 * np.arange(3), alpha)] * m_extra
    return adjust(effects, alpha)[:CELLS]


def budgeted(rng, planted: float = 0.0):
    """One budgeted run: (rounds per cell, verdicts, looks)."""
    plan = b.make_plan(BUDGET_ROUNDS * CELLS * ROUND_S, 5, 3, None)
    x = draw(rng, plan.cap, planted)
    q = sequential_alpha(plan.looks, alpha=ALPHA) / CELLS
    active, done = list(range(CELLS)), np.zeros(CELLS, dtype=int)
    rounds, spent = plan.first, plan.first * CELLS * ROUND_S
    while True:
        evidence = [b.Evidence((str(i), ""), (effect(x[i, :rounds], ALPHA),), rounds, ROUND_S) for i in active]
        alloc = b.allocate(evidence, plan, plan.budget_s - spent, q, TOL)
        for i in active:
            if (str(i), "") not in alloc.measure:
                done[i] = rounds
        active = [int(c[0]) for c in alloc.measure]
        if alloc.stop:
            break
        spent += alloc.more * len(active) * ROUND_S
        rounds += alloc.more
    return done, verdicts(x, done, plan.looks), plan.looks


def fixed(rng, n: int, planted: float = 0.0, m_extra: int = 0):
    x = draw(rng, n, planted)
    return verdicts(x, np.full(CELLS, n), 1, m_extra)


def rate(hits: int, sims: int) -> str:
    return f"{hits / sims * 100:.1f}%"


def rate_ci(hits: int, sims: int) -> tuple[str, float]:
    """The rate with its 95% interval (Wilson), and the interval's low end:
    an A/A rate is a simulated figure, exceeding 5% only when even the low
    end does."""
    from scipy.stats import binomtest

    ci = binomtest(hits, sims).proportion_ci(0.95, method="wilson")
    return f"{hits / sims * 100:.1f}% [{ci.low * 100:.1f}, {ci.high * 100:.1f}]", ci.low


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer simulations (seconds, noisier)")
    args = ap.parse_args(argv)
    aa_sims, power_sims = (100, 60) if args.quick else (2000, 300)
    rng = np.random.default_rng(SEED)
    t0 = time.time()
    print(f"## A/A and resolution: {CELLS} primary cells, paired SDs {', '.join(f'{s:g}' for s in SDS)} (cycled)\n")
    print(
        f"{aa_sims} runs per row; budget = {BUDGET_ROUNDS} rounds of every case; ±{TOL:g}% equivalence; "
        f"gate = changed for the worse by more than {GATE:g}%.\n"
    )
    print("| design | looks | A/A: any changed | A/A: gate | cells resolved | mean rounds per cell |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    designs = [(f"fixed, n = {n}", (lambda n=n: (np.full(CELLS, n), fixed(rng, n), 1))) for n in (5, 10, 20)]
    designs.append(("budgeted", lambda: budgeted(rng)))
    for name, run in designs:
        changed = gate = resolved = 0
        rounds = 0.0
        looks = 1
        for _ in range(aa_sims):
            done, vs, looks = run()
            changed += any(v.verdict == CHANGED for v in vs)
            gate += bool(regressions(vs, GATE))
            resolved += sum(v.verdict in (CHANGED, EQUIVALENT) for v in vs)
            rounds += float(np.mean(done))
        shown, low = rate_ci(changed, aa_sims)
        worst = max(worst, low)
        print(
            f"| {name} | {looks} | {shown} | {rate_ci(gate, aa_sims)[0]} | "
            f"{rate(resolved, aa_sims * CELLS)} | {rounds / aa_sims:.1f} |",
            flush=True,
        )

    print(f"\n## Power: one cell of {CELLS} slowed (its SD {sds()[0]:g}), share of runs that call it changed\n")
    print(
        f"{power_sims} runs per entry. 'all metrics': the same cells corrected with 52 more null cells, "
        "one family of 66 as before primaries.\n"
    )
    print("| design | " + " | ".join(f"planted {p:g}%" for p in PLANTED) + " |")
    print("|---|" + "---|" * len(PLANTED))
    rows = [(f"fixed, n = {n}", (lambda p, n=n: fixed(rng, n, p))) for n in (5, 10, 20)]
    rows.insert(1, ("fixed, n = 5, all metrics", lambda p: fixed(rng, 5, p, m_extra=52)))
    rows.append(("budgeted", lambda p: budgeted(rng, p)[1]))
    for name, run in rows:
        cells = []
        for p in PLANTED:
            hits = sum(run(p)[0].verdict == CHANGED for _ in range(power_sims))
            cells.append(rate(hits, power_sims))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nHighest low end of an A/A interval: {worst * 100:.1f}% (fails above 5%); {time.time() - t0:.0f} s.")
    return 0 if worst <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
