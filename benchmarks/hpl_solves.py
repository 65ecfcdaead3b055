"""Issue 45: how much of HPL's duet noise do more solves per hpcc run take
out? For a stored duet run whose hpcc samples solved several times
(`hpl_runs`, studies/ab/hpl-solves.toml), per compared environment: the
paired log-ratio SD against the baseline of each solve alone and of the
solves combined as hpcc_solves.combined_gflops combines them (every leading and
trailing run of solves, so two solves of a three-solve run stand in for
`hpl_runs = 2`).

    .venv/bin/python benchmarks/hpl_solves.py RUN_ID [--store PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics

from isobench.core.workspace import DEFAULT_STORE
from isobench.workloads.hpcc_solves import combined_gflops


def combined(gflops: list[float]) -> float:
    return combined_gflops([(1, g) for g in gflops])  # the solves share N: any N weighs them alike


def spans(k: int) -> list[tuple[int, int]]:
    return [(a, b) for a in range(k) for b in range(a + 1, k + 1) if a == 0 or b == k or b == a + 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_id")
    ap.add_argument("--store", default=DEFAULT_STORE)
    args = ap.parse_args()
    db = sqlite3.connect(f"file:{args.store}?mode=ro", uri=True)
    rows = db.execute(
        "SELECT env, round, started_at, extra FROM samples WHERE run_id = ? AND warmup = 0 AND status = 'ok'",
        (args.run_id,),
    ).fetchall()
    solves = {(e, r, t): json.loads(x).get("hpl_solves_gflops") for e, r, t, x in rows}
    base = {(r, t): g for (e, r, t), g in solves.items() if e == "native" and g}
    for env in sorted({e for e, *_ in rows} - {"native"}):
        ratios: dict[str, list[float]] = {}
        for (e, r, t), g in solves.items():
            b = base.get((r, t))
            if e != env or not g or not b or len(g) != len(b):
                continue
            for a, z in spans(len(g)):
                name = f"solves {a + 1}-{z}" if z - a > 1 else f"solve {z}"
                ratios.setdefault(name, []).append(math.log(combined(g[a:z]) / combined(b[a:z])))
        cells = [f"{k} {100 * statistics.stdev(v):.1f}%" for k, v in ratios.items() if len(v) > 2]
        print(f"{env}: paired SD per sample, n = {max(map(len, ratios.values()), default=0)}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
