"""Issue 52: does an environment's duet ratio against the baseline move from
run to run more than each run's own interval allows? For stored duet runs,
per environment: each run's mean paired log ratio against the baseline
partner it ran beside (+ = faster than the baseline, as a percent of the
rate) with its 95% t interval, the runs pooled, and Cochran's Q for the
runs' means differing (a p under 0.05: something fixed within a run and
drawn anew each run moves the ratio, which no one run's interval shows).

    .venv/bin/python benchmarks/runs_apart.py WORKLOAD METRIC RUN_ID... [--store PATH] [--baseline native]

A run in another store is given as PATH::RUN_ID.
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3

import numpy as np
from scipy import stats

from isobench.core.workspace import DEFAULT_STORE

FASTER_IS_HIGHER = ("throughput", "gflops", "per_s", "_mbs", "ops")


def ratios(db: sqlite3.Connection, run: str, workload: str, metric: str, baseline: str) -> dict[str, list[float]]:
    """Per environment, each duet's log ratio to its baseline partner, signed so that + is faster."""
    sign = 1.0 if any(k in metric for k in FASTER_IS_HIGHER) else -1.0
    by: dict[tuple[str, int, str], float] = {}
    rows = db.execute(
        "SELECT env, round, vals, extra FROM samples WHERE run_id=? AND workload=? AND status='ok' AND warmup=0",
        (run, workload),
    )
    for env, round_, vals, extra in rows:
        value = json.loads(vals).get(metric)
        partner = (json.loads(extra).get("duet") or {}).get("partner")
        if value and partner:
            by[(env, round_, partner)] = float(value)
    out: dict[str, list[float]] = {}
    for (env, round_, _), value in by.items():
        base = by.get((baseline, round_, env))
        if env != baseline and base:
            out.setdefault(env, []).append(sign * math.log(value / base))
    return out


def line(name: str, x: np.ndarray) -> str:
    m, se = float(x.mean()), float(x.std(ddof=1)) / math.sqrt(len(x))
    half = float(stats.t.ppf(0.975, len(x) - 1)) * se
    return f"{name}: n={len(x)} {100 * m:+.2f}% [{100 * (m - half):+.2f}, {100 * (m + half):+.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("metric")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--store", default=DEFAULT_STORE)
    ap.add_argument("--baseline", default="native")
    args = ap.parse_args()
    per_run = []
    for given in args.runs:
        store, _, run = given.rpartition("::")
        with sqlite3.connect(store or args.store) as db:
            per_run.append(ratios(db, run, args.workload, args.metric, args.baseline))
    for env in sorted({e for r in per_run for e in r}):
        xs = [np.array(r[env]) for r in per_run if len(r.get(env, [])) > 2]
        for run, x in zip([r.rpartition("::")[2] for r in args.runs], xs):
            print("  " + line(f"{env} {run}", x))
        print(line(f"{env} pooled", np.concatenate(xs)))
        if len(xs) > 1:
            means = np.array([x.mean() for x in xs])
            w = np.array([len(x) / x.var(ddof=1) for x in xs])
            q = float((w * (means - (w * means).sum() / w.sum()) ** 2).sum())
            print(f"  runs apart: Cochran's Q = {q:.1f}, {len(xs) - 1} df, p = {stats.chi2.sf(q, len(xs) - 1):.3f}")


if __name__ == "__main__":
    main()
