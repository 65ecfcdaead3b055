"""Calibration of isobench's verdicts, by simulation (no benchmark is run).

    .venv/bin/python benchmarks/calibration.py            # full, a few minutes on 2 cores
    .venv/bin/python benchmarks/calibration.py --quick    # fewer simulations, seconds

For a compare of two runs with 99 cells, n rounds per cell and lognormal
noise of a given CV, it measures:

* the A/A probability that ``--fail-on-regression 5`` exits 1 under the
  current rule (Welch on logs, Benjamini-Hochberg over the 99 cells, a
  regression is BH-changed for the worse by more than 5%); it must stay
  <= 5% everywhere;
* the same for the previous rule (Welch on raw values, p < 0.05 per cell,
  no correction): the share of A/A compares with a cell flagged
  (|change| > 2%) and with a regression beyond 5%;
* the smallest slowdown of one cell among 99 that the current rule finds
  with 80% power: reported "changed" (worse), and failing the 5% gate;
* the A/A rate of the adaptive repetition rule (isobench.analysis.repetitions), and
  of the naive "stop when the CI is narrow" rule it replaces;
* how often each warning (isobench.analysis.anomalies) fires on pure noise.

Thousands of compares are simulated at once through the same vectorised
t-test code as ``stats.compare_cell`` (``stats.log_welch``), and a sample
of them is replayed through the real per-cell API (compare_cell, adjust,
regressions) to check that both agree. Seeded: the same table every time.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats as st

from isobench.analysis.anomalies import drift, outliers, slow_first_round
from isobench.analysis.repetitions import Schedule, sequential_alpha
from isobench.analysis.stats import ALPHA, compare_cell, log_welch
from isobench.analysis.verdicts import adjust, regressions

CELLS = 99
GATE_PCT = 5.0
OLD_TOL_PCT = 2.0
NS = (3, 5, 10)
CVS = (0.01, 0.05, 0.15)
POWER = 0.8
SEED = 20140721
CHUNK = 2000  # compares simulated at once (memory: CHUNK x 99 x 2n doubles)


def sigma(cv: float) -> float:
    """Log-scale sd of lognormal noise with this coefficient of variation."""
    return math.sqrt(math.log1p(cv * cv))


def higher_is_better() -> np.ndarray:
    # Half the cells throughputs, half latencies: "worse" points both ways.
    return np.arange(CELLS) % 2 == 0


def overhead(log_ratio: np.ndarray, hib: np.ndarray) -> np.ndarray:
    pct = np.expm1(log_ratio) * 100
    return np.where(hib, -pct, pct)


def bh_rejected(p: np.ndarray, alpha: float) -> np.ndarray:
    return st.false_discovery_control(p, axis=-1, method="bh") <= alpha


# -- A/A: current and previous rule --------------------------------------------


def aa_rates(n: int, cv: float, sims: int, rng: np.random.Generator) -> dict[str, float]:
    hib = higher_is_better()
    fails_new = flags_old = fails_old = 0
    done = 0
    while done < sims:
        s = min(CHUNK, sims - done)
        la = rng.normal(0.0, sigma(cv), (s, CELLS, n))
        lb = rng.normal(0.0, sigma(cv), (s, CELLS, n))
        new = log_welch(lb, la)  # run B is the candidate, run A the baseline
        changed = bh_rejected(new.p, ALPHA)
        fails_new += int(np.sum(np.any(changed & (overhead(new.estimate, hib) > GATE_PCT), axis=-1)))

        a, b = np.exp(la), np.exp(lb)
        old = log_welch(b, a)  # the same Welch formula, on raw values
        pct = (b.mean(-1) / a.mean(-1) - 1) * 100
        sig = old.p < ALPHA
        flags_old += int(np.sum(np.any(sig & (np.abs(pct) > OLD_TOL_PCT), axis=-1)))
        worse = np.where(hib, -pct, pct)
        fails_old += int(np.sum(np.any(sig & (worse > GATE_PCT), axis=-1)))
        done += s
    return {"new": fails_new / sims, "old_flag": flags_old / sims, "old_gate": fails_old / sims}


# -- power: one slowed cell among 99 -------------------------------------------


def power_curve(n: int, cv: float, sims: int, rng: np.random.Generator):
    """Returns power(x) for a slowdown of x% (overhead) of cell 0, with common
    random numbers so that power grows smoothly with x."""
    hib = higher_is_better()
    la = rng.normal(0.0, sigma(cv), (sims, CELLS, n))
    lb = rng.normal(0.0, sigma(cv), (sims, CELLS, n))
    null = log_welch(lb[:, 1:], la[:, 1:])
    base0, cand0 = la[:, 0], lb[:, 0]

    def power(x: float) -> tuple[float, float]:
        # Cell 0 is a throughput (hib[0]): x% overhead = values x% lower.
        shifted = cand0 + math.log1p(-x / 100)
        t0 = log_welch(shifted, base0)
        p = np.concatenate([t0.p[:, None], null.p], axis=1)
        rej0 = bh_rejected(p, ALPHA)[:, 0]
        worse = overhead(t0.estimate, hib[0]) > 0
        changed = rej0 & worse
        gate = changed & (overhead(t0.estimate, hib[0]) > GATE_PCT)
        return float(changed.mean()), float(gate.mean())

    return power


def smallest_detected(power, which: int, lo: float = 0.05, hi: float = 95.0) -> float:
    """Smallest slowdown (%) with power >= 80%, by bisection on log(x); inf
    when even a 95% slowdown is not found 80% of the time."""
    if power(hi)[which] < POWER:
        return math.inf
    for _ in range(14):  # x to within 0.5% of itself
        mid = math.sqrt(lo * hi)
        if power(mid)[which] >= POWER:
            hi = mid
        else:
            lo = mid
    return hi


# -- adaptive repetitions --------------------------------------------------------


def _halfwidth_pct(x: np.ndarray) -> np.ndarray:
    """stats.ci_halfwidth_pct of each row's first n values, vectorised."""
    n = x.shape[-1]
    sd = np.std(x, axis=-1, ddof=1)
    return st.t.ppf(0.975, n - 1) * sd / math.sqrt(n) / np.abs(x.mean(-1)) * 100


def stop_points(values: np.ndarray, schedule: Schedule, target: float) -> np.ndarray:
    """Rounds at which each simulated run stops: the first planned look where
    every cell (axis 1) is within target, else the cap. values: (sims, cells, max)."""
    stop = np.full(values.shape[0], schedule.max_rounds)
    decided = np.zeros(values.shape[0], dtype=bool)
    for pt in schedule.points:
        ok = np.all(_halfwidth_pct(values[:, :, :pt]) <= target, axis=1) & ~decided
        stop[ok] = pt
        decided |= ok
    return stop


def adaptive_rates(cv: float, cells: int, sims: int, schedule: Schedule, rng: np.random.Generator) -> dict[str, float]:
    """A/A of two adaptive runs (target half-width = the CV, so runs stop at
    different looks): share of compares with a BH-changed cell at alpha
    (naive) and at sequential_alpha(K, K) (the rule); with cells=1 this is
    the per-cell false-alarm rate. Also the mean rounds per run."""
    hib = higher_is_better()[:cells]
    k = schedule.looks
    alphas = {"naive": ALPHA, "rule": sequential_alpha(k, k)}
    hits = {name: 0 for name in alphas}
    gate = 0
    rounds = 0.0
    done = 0
    chunk = max(1, CHUNK * CELLS // (cells * 4))
    while done < sims:
        s = min(chunk, sims - done)
        la = rng.normal(0.0, sigma(cv), (s, cells, schedule.max_rounds))
        lb = rng.normal(0.0, sigma(cv), (s, cells, schedule.max_rounds))
        na = stop_points(np.exp(la), schedule, cv * 100)
        nb = stop_points(np.exp(lb), schedule, cv * 100)
        rounds += float(na.sum() + nb.sum()) / 2
        for a_n in schedule.points:
            for b_n in schedule.points:
                sel = (na == a_n) & (nb == b_n)
                if not sel.any():
                    continue
                t = log_welch(lb[sel][:, :, :b_n], la[sel][:, :, :a_n])
                for name, alpha in alphas.items():
                    hits[name] += int(np.sum(np.any(bh_rejected(t.p, alpha), axis=-1)))
                rej = bh_rejected(t.p, alphas["rule"])
                gate += int(np.sum(np.any(rej & (overhead(t.estimate, hib) > GATE_PCT), axis=-1)))
        done += s
    out = {name: h / sims for name, h in hits.items()}
    out["gate"] = gate / sims
    out["rounds"] = rounds / sims
    return out


# -- warnings on pure noise ----------------------------------------------------------


def warning_rates(n: int, sims: int, rng: np.random.Generator) -> dict[str, float]:
    """Share of cells (n rounds of lognormal noise, CV 5%, nothing wrong)
    that each warning flags, through the real functions."""
    x = 100 * np.exp(rng.normal(0.0, sigma(0.05), (sims, n)))
    return {
        "outliers": float(np.mean([outliers(v).flagged for v in x])),
        "slow_first": float(np.mean([slow_first_round(v, True).flagged for v in x])),
        "drift": float(np.mean([drift(v).flagged for v in x])),
    }


# -- the vectorised rule against the real API ----------------------------------------


def check_against_api(rng: np.random.Generator, sims: int) -> int:
    """Replays compares through compare_cell/adjust/regressions; returns the
    number of disagreements with the vectorised gate (must be 0)."""
    hib = higher_is_better()
    bad = 0
    for i in range(sims):
        n = NS[i % len(NS)]
        cv = CVS[i % len(CVS)]
        la = rng.normal(0.0, sigma(cv), (CELLS, n))
        lb = rng.normal(0.0, sigma(cv), (CELLS, n))
        lb[:10] += rng.uniform(-1.5, 1.5, 10)[:, None] * sigma(cv)  # a few real changes
        t = log_welch(lb, la)
        fast = set(np.flatnonzero(bh_rejected(t.p, ALPHA) & (overhead(t.estimate, hib) > GATE_PCT)))
        effects = [compare_cell(np.exp(lb[c]), np.exp(la[c]), bool(hib[c])) for c in range(CELLS)]
        verdicts = adjust(effects)
        slow = {int(np.flatnonzero([v is r for v in verdicts])[0]) for r in regressions(verdicts, GATE_PCT)}
        bad += fast != slow
    return bad


def pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def change(x: float) -> str:
    return ">95%" if math.isinf(x) else f"{x:.2g}%"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer simulations (seconds, noisier)")
    args = ap.parse_args(argv)
    aa_sims, power_sims, adapt_sims, warn_sims, check_sims = (
        (1000, 400, 1000, 300, 6) if args.quick else (20000, 4000, 8000, 4000, 30)
    )
    rng = np.random.default_rng(SEED)
    t0 = time.time()

    print("## Gate A/A and detectable change: 99-cell compare, lognormal noise\n")
    print(
        f"{aa_sims} A/A compares and {power_sims} compares per power point per row; "
        f"alpha = {ALPHA:g}, gate = --fail-on-regression {GATE_PCT:g}.\n"
    )
    print(
        "| n | CV | gate A/A, current rule | previous rule A/A: flag (p<0.05, \\|Δ\\|>2%) "
        "| previous rule A/A: gate | 80% power: changed | 80% power: gate |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for n in NS:
        for cv in CVS:
            aa = aa_rates(n, cv, aa_sims, rng)
            power = power_curve(n, cv, power_sims, rng)
            d_changed, d_gate = smallest_detected(power, 0), smallest_detected(power, 1)
            worst = max(worst, aa["new"])
            print(
                f"| {n} | {cv * 100:g}% | {pct(aa['new'])} | {pct(aa['old_flag'])} | "
                f"{pct(aa['old_gate'])} | {change(d_changed)} | {change(d_gate)} |",
                flush=True,
            )

    schedule = Schedule(min_rounds=3, block=3, max_rounds=12)
    k = schedule.looks
    print("\n## Adaptive repetitions: A/A of two adaptive runs\n")
    print(
        f"Schedule: looks after {', '.join(map(str, schedule.points))} rounds (K = {k}); "
        f"target 95% CI half-width = the CV; {adapt_sims} compares per row. "
        f"Naive: test at alpha = {ALPHA:g}. Rule: test at sequential_alpha(K, K) = "
        f"{sequential_alpha(k, k):.4g}.\n"
    )
    print(
        "| CV | 1 cell: mean rounds per run | 1 cell: naive A/A | 1 cell: rule A/A "
        "| 99 cells: mean rounds per run | 99 cells: naive A/A | 99 cells: rule A/A "
        "| 99 cells: rule gate A/A |"
    )
    print("|---|---|---|---|---|---|---|---|")
    adaptive_worst = 0.0
    for cv in CVS:
        one = adaptive_rates(cv, 1, adapt_sims, schedule, rng)
        many = adaptive_rates(cv, CELLS, adapt_sims // 4, schedule, rng)
        adaptive_worst = max(adaptive_worst, one["rule"], many["rule"])
        print(
            f"| {cv * 100:g}% | {one['rounds']:.1f} | {pct(one['naive'])} | {pct(one['rule'])} | "
            f"{many['rounds']:.1f} | {pct(many['naive'])} | {pct(many['rule'])} | "
            f"{pct(many['gate'])} |",
            flush=True,
        )

    print("\n## Warnings on pure noise\n")
    print(
        f"Share of cells flagged when nothing is wrong (lognormal noise, CV 5%, "
        f"{warn_sims} cells per row; the rates do not depend on the CV).\n"
    )
    print("| rounds | outliers | slow first round | drift |")
    print("|---|---|---|---|")
    for n in (5, 8, 10, 20):
        w = warning_rates(n, warn_sims, rng)
        print(f"| {n} | {pct(w['outliers'])} | {pct(w['slow_first'])} | {pct(w['drift'])} |", flush=True)

    bad = check_against_api(rng, check_sims)
    print(
        f"\nReplayed {check_sims} compares through compare_cell/adjust/regressions: "
        f"{bad} disagreement(s) with the vectorised gate."
    )
    print(f"Worst gate A/A: {pct(worst)}; worst adaptive-rule A/A: {pct(adaptive_worst)}; {time.time() - t0:.0f} s.")
    return 0 if bad == 0 and worst <= 0.05 and adaptive_worst <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
