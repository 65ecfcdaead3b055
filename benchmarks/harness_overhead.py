"""Harness overhead: isobench's native compression result vs the same pixz
command run by hand, runs alternated.

    .venv/bin/python benchmarks/harness_overhead.py --pairs 6 --size-mb 128

Each pair runs `isobench run` on a one-sample native study, then the same
argv by hand (same corpus bytes, same tmpfs), in alternating order, and
compares the throughputs with Welch's t-test. The target: isobench within 1%.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

from isobench.analysis.stats import compare, summarize
from isobench.workloads.compress import build_argv, corpus_bytes, parse_time

STUDY = """
[study]
name = "harness"
repetitions = 1
warmup = 0
[environments.native]
[workloads.compression]
size_mb = {size}
threads = {threads}
level = 2
"""


def via_isobench(workdir: str, size: int, threads: int) -> float:
    study = os.path.join(workdir, "harness.toml")
    with open(study, "w") as fh:
        fh.write(STUDY.format(size=size, threads=threads))
    store = os.path.join(workdir, "r.sqlite")
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
        env={**os.environ, "ISOBENCH_STORE": store},
        timeout=900,
    )
    row = (
        sqlite3.connect(store).execute("SELECT vals FROM samples WHERE status='ok' ORDER BY id DESC LIMIT 1").fetchone()
    )
    return float(re.search(r'"throughput_mbs": ([0-9.e+-]+)', row[0]).group(1))


def by_hand(corpus: str, size: int, threads: int) -> float:
    argv = build_argv(corpus, 2, False, threads)
    proc = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=900)
    return size * 1_000_000 / 1e6 / parse_time(proc.stderr)["real_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--size-mb", type=int, default=128)
    args = ap.parse_args()
    threads = os.cpu_count() or 1
    with (
        tempfile.TemporaryDirectory(prefix="isobench-bench-") as workdir,
        tempfile.TemporaryDirectory(prefix="isobench-bench-", dir="/dev/shm") as shm,
    ):
        corpus = os.path.join(shm, "corpus")
        with open(corpus, "wb") as fh:
            fh.write(corpus_bytes(args.size_mb * 1_000_000))
        tool, harness = [], []
        for i in range(args.pairs):
            order = (by_hand, via_isobench) if i % 2 == 0 else (via_isobench, by_hand)
            for fn in order:
                if fn is by_hand:
                    tool.append(by_hand(corpus, args.size_mb, threads))
                else:
                    harness.append(via_isobench(workdir, args.size_mb, threads))
            print(f"pair {i + 1}: by hand {tool[-1]:.2f} MB/s, isobench {harness[-1]:.2f} MB/s", flush=True)
    c = compare(harness, tool, higher_is_better=True)
    h, t = summarize(harness), summarize(tool)
    print(f"by hand : {t.mean:.3f} ± {t.sd:.3f} MB/s (n={t.n})")
    print(f"isobench: {h.mean:.3f} ± {h.sd:.3f} MB/s (n={h.n})")
    print(
        f"difference: {c.pct:+.2f}% (95% CI {c.pct_ci95_low:+.2f}% .. {c.pct_ci95_high:+.2f}%), "
        f"Welch p = {c.p_value:.3f}: {c.verdict}"
    )


if __name__ == "__main__":
    main()
