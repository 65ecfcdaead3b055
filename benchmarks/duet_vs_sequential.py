"""Issue 33 item 4: does a duet measure the same thing as one sample at a
time, and how much sooner does it answer? For a stored run of
studies/ab/duet-vs-sequential.toml (each workload twice: its own table as a
duet, the "-seq" table one sample at a time), per workload, compared
environment and schedule: the paired estimate of the primary metric against
the baseline with its 95% interval (the per-cell test Table I uses, pairs
taken within each duet), the paired SD of the log ratio per sample, the
seconds one paired observation costs, and SD^2 x seconds (what a resolved
cell costs: the rounds a paired interval needs grow with SD^2). A duet's
observation costs its longer side's wall time; a sequential one costs the
environment's sample plus its share of the baseline's.

    .venv/bin/python benchmarks/duet_vs_sequential.py RUN_ID [--store PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from collections import defaultdict

from isobench.analysis.stats import compare_cell, interval
from isobench.core.workspace import DEFAULT_STORE
from isobench.results.analysis import pairs_and_sides
from isobench.results.primary import primary_keys
from isobench.store.db import Store, StoreError


def walls(db: sqlite3.Connection, run_id: str) -> dict[tuple[str, str], float]:
    """Mean seconds per paired observation, per (workload key, environment)."""
    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    duet: dict[tuple[str, int, frozenset], list[float]] = defaultdict(list)
    rows = db.execute(
        "SELECT env, workload, round, wall_s, extra FROM samples WHERE run_id=? AND status='ok' AND warmup=0", (run_id,)
    ).fetchall()
    for env, workload, rnd, wall, extra in rows:
        record = json.loads(extra or "{}").get("duet")
        if isinstance(record, dict):
            duet[(workload, rnd, frozenset({env, record["partner"]}))].append(float(wall))
        else:
            per[(workload, env)].append(float(wall))
    for (workload, _rnd, members), ws in duet.items():
        for env in members:
            per[(workload, f"duet:{env}")].append(max(ws))
    return {k: sum(ws) / len(ws) for k, ws in per.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_id")
    ap.add_argument("--store", default=DEFAULT_STORE)
    ap.add_argument("--json", action="store_true", help="one JSON object per cell instead of the table")
    a = ap.parse_args(argv)
    try:
        store = Store(a.store)
        run = store.load_run(store.resolve(a.run_id))
    except StoreError as exc:
        print(exc, file=sys.stderr)
        return 2
    secs = walls(sqlite3.connect(a.store), run.run_id)
    others = [e for e in run.environments if e != run.baseline]
    rows = []
    for key in primary_keys(run):
        duet = any(run.partners.get((key, e)) for e in others)
        for env in others:
            p, sides = pairs_and_sides(run, key, env, run.baseline)
            if not p or len(p) < 3:
                continue
            d = [math.log(v / r) for v, r in p if v > 0 and r > 0]
            n = len(d)
            mean = sum(d) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
            effect = compare_cell(
                [v for v, _ in p],
                [r for _, r in p],
                key.higher_is_better,
                pairs=p,
                sides=sides,
            )
            lo, hi = interval(effect, 0.95)
            blocked = effect.noise_sd  # within CPU sides, where the pairs ran as duets
            if duet:
                s = secs.get((key.workload, f"duet:{env}"), float("nan"))
            else:
                s = secs.get((key.workload, env), 0.0) + secs.get((key.workload, run.baseline), 0.0) / len(others)
            rows.append(
                {
                    "workload": key.workload,
                    "case": key.case,
                    "metric": key.metric,
                    "env": env,
                    "schedule": "duet" if duet else "sequential",
                    "n": n,
                    "estimate_pct": round(effect.pct, 2),
                    "ci_pct": [round(100 * (lo - 1), 2), round(100 * (hi - 1), 2)],
                    "sd_pct": round(100 * sd, 2),
                    "sd_blocked_pct": round(100 * blocked, 2),
                    "s_per_obs": round(s, 2),
                    "sd2_x_s": round(1e4 * blocked * blocked * s, 1),
                }
            )
    if a.json:
        for r in rows:
            print(json.dumps(r))
        return 0
    print(f"run {run.run_id}, baseline {run.baseline}; pairs within each duet")
    print(
        f"{'workload/case':24} {'env':12} {'schedule':10} {'n':>3} {'estimate':>9} {'95% interval':>18} "
        f"{'SD %':>6} {'blocked':>7} {'s/obs':>6} {'SD^2 x s':>9}"
    )
    for r in rows:
        lo, hi = r["ci_pct"]
        name = r["workload"] if r["case"] == "default" else f"{r['workload']}/{r['case']}"
        print(
            f"{name:24} {r['env']:12} {r['schedule']:10} {r['n']:3d} {r['estimate_pct']:+8.2f}% "
            f"[{lo:+7.2f}, {hi:+7.2f}]% {r['sd_pct']:6.2f} {r['sd_blocked_pct']:7.2f} {r['s_per_obs']:6.2f} "
            f"{r['sd2_x_s']:9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
