"""Harness overhead of the counters: the same native study (compression and
fio cells) run with counters on and off (ISOBENCH_COUNTERS=0), alternated,
compared per cell with the paired log-scale test; plus the direct cost of
one counters.around() (two snapshots).

    PYTHONPATH=src .venv/bin/python benchmarks/counters_overhead.py --pairs 4

Run it under the heavy lock on a shared machine. Target: no detectable
difference (the verdict "changed" on no cell; |change| <= 0.5%).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

from isobench.analysis.stats import compare_cell
from isobench.analysis.verdicts import adjust
from isobench.host import counters

STUDY = """
[study]
name = "counters-overhead"
repetitions = 3
warmup = 1
[environments.native]
[workloads.compression]
size_mb = {size}
level = 2
[workloads.fio]
size_mb = 128
runtime_s = 2
ramp_s = 1
cases = ["randread", "seqread"]
"""
METRICS = ("throughput_mbs", "bandwidth_mbs", "iops")  # the first a cell has


def one_run(workdir: str, size: int, on: bool) -> dict[str, float]:
    study = os.path.join(workdir, "study.toml")
    with open(study, "w") as fh:
        fh.write(STUDY.format(size=size))
    store = os.path.join(workdir, f"r-{time.monotonic_ns()}.sqlite")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "isobench.cli.main",
            "run",
            study,
            "--no-progress",
            "--out",
            os.path.join(workdir, "results"),
        ],
        check=True,
        capture_output=True,
        timeout=1800,
        env={**os.environ, "ISOBENCH_STORE": store, counters.ENV_VAR: "1" if on else "0"},
    )
    out: dict[str, list[float]] = {}
    for w, c, vals, extra in sqlite3.connect(store).execute(
        "SELECT workload, ccase, vals, extra FROM samples WHERE status='ok' AND warmup=0"
    ):
        assert ("counters" in json.loads(extra)) == on, "ISOBENCH_COUNTERS not honoured"
        values = json.loads(vals)
        out.setdefault(f"{w}/{c}", []).append(next(values[m] for m in METRICS if m in values))
    return {k: sum(v) / len(v) for k, v in out.items()}


def micro(n: int = 2000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        with counters.around(None) as box:
            box["extra"] = {}
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--size-mb", type=int, default=32)
    args = ap.parse_args()
    print(f"one counters.around() (two snapshots): {micro() * 1e3:.3f} ms")
    on: dict[str, list[float]] = {}
    off: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.pairs):
            for flag in (True, False) if i % 2 == 0 else (False, True):  # alternate the order
                for k, v in one_run(d, args.size_mb, flag).items():
                    (on if flag else off).setdefault(k, []).append(v)
    cells = sorted(set(on) & set(off))
    effects = [compare_cell(on[k], off[k], True, pairs=list(zip(on[k], off[k]))) for k in cells]
    for k, v in zip(cells, adjust(effects)):
        print(
            f"{k}: on/off {v.effect.ratio:.4f} ({v.pct:+.2f}%), interval {v.pct_low:+.2f}%..{v.pct_high:+.2f}%, "
            f"p_adj {v.p_adjusted:.3g}, {v.verdict}"
        )


if __name__ == "__main__":
    main()
