"""Issue 23 item 4: which sample length buys an answer soonest? For a
stored run (studies/ab/sample-length.toml), per workload key (and case) and compared
environment: the paired per-round log-ratio SD of the case's primary metric
against the baseline, with its 95% interval (chi-square), the mean seconds
one sample took, and SD^2 x seconds. The rounds a paired interval needs
grow with SD^2 and each round costs seconds, so the smaller product
resolves a cell sooner, if the shorter sample measures the same thing
(the throughputs are printed to check that too).

    .venv/bin/python benchmarks/sample_length.py RUN_ID [--store PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
from collections import defaultdict

from scipy import stats

from isobench.core.workspace import DEFAULT_STORE


def sd_interval(sd: float, n: int) -> tuple[float, float]:
    df = n - 1
    return sd * math.sqrt(df / stats.chi2.ppf(0.975, df)), sd * math.sqrt(df / stats.chi2.ppf(0.025, df))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_id")
    ap.add_argument("--store", default=DEFAULT_STORE)
    ap.add_argument("--metric", default="throughput_mbs")
    a = ap.parse_args(argv)
    db = sqlite3.connect(a.store)
    row = db.execute("SELECT baseline FROM runs WHERE run_id = ?", (a.run_id,)).fetchone()
    if row is None:
        print(f"no run {a.run_id} in {a.store}", file=sys.stderr)
        return 2
    baseline = row[0]
    values: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    walls: dict[str, list[float]] = defaultdict(list)
    for env, workload, case, rnd, vals, wall in db.execute(
        "SELECT env, workload, ccase, round, vals, wall_s FROM samples WHERE run_id = ? AND status = 'ok' "
        "AND warmup = 0",
        (a.run_id,),
    ):
        key = workload if case == "default" else f"{workload}/{case}"
        v = json.loads(vals).get(a.metric)
        if v:
            values[(key, env)][rnd] = float(v)
            walls[key].append(float(wall))
    print(f"run {a.run_id}, metric {a.metric}, baseline {baseline}")
    print(
        f"{'key':16} {'env':12} {'n':>3} {'mean':>8} {'SD %':>6} {'95% interval':>16} {'s/sample':>9} {'SD^2 x s':>9}"
    )
    for key in sorted({k for k, _ in values}):
        base = values.get((key, baseline), {})
        secs = sum(walls[key]) / len(walls[key])
        for env in sorted({e for k, e in values if k == key and e != baseline}):
            cand = values[(key, env)]
            d = [math.log(cand[r] / base[r]) for r in sorted(set(cand) & set(base))]
            n = len(d)
            if n < 3:
                continue
            mean = sum(d) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
            lo, hi = sd_interval(sd, n)
            level = sum(cand.values()) / len(cand)
            print(
                f"{key:16} {env:12} {n:3d} {level:8.2f} {100 * sd:6.2f} [{100 * lo:5.2f}, {100 * hi:5.2f}]%"
                f" {secs:9.2f} {1e4 * sd * sd * secs:9.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
