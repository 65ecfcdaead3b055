"""Issue 56: how many rounds a study's primary cells need here, sized from a
stored run of the same work (a pilot): per primary cell and compared
environment, the pilot's paired SD per round and the rounds that settle the
cell (changed, or equivalent within the study's tolerance) 4 times in 5 at
the level the study corrects its primaries at, alpha/m
(isobench.checks.pilotrounds). The store is opened as `isobench report`
opens it, to read.

    .venv/bin/python benchmarks/primary_rounds.py RUN_ID STUDY [--store PATH]
"""

from __future__ import annotations

import argparse
import sys

from isobench.checks.pilotrounds import primary_needs
from isobench.core.workspace import DEFAULT_STORE
from isobench.host.hostinfo import host_info
from isobench.store.db import Store, StoreError
from isobench.study import StudyError, load_study


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("run_id")
    ap.add_argument("study")
    ap.add_argument("--store", default=DEFAULT_STORE)
    a = ap.parse_args(argv)
    try:
        study = load_study(a.study)
        run = Store(a.store, create=False, reader=True).load_run(a.run_id)
    except (StudyError, StoreError) as exc:
        print(exc, file=sys.stderr)
        return 2
    m, needs = primary_needs(study, host_info(), run)
    print(f"pilot {a.run_id}; study {study.meta.name}: {m} primary cells, alpha/{m}, ±{study.meta.tolerance_pct:g}%")
    print(f"{'cell':36} {'env':12} {'pairs':>5} {'paired SD':>9} {'rounds':>7} {'planned':>7}")
    for n in needs:
        sd = f"{100 * n.sd:8.2f}%" if n.sd is not None else "        -"
        rounds = str(n.rounds) if n.rounds is not None else "-"
        print(f"{n.cell:36} {n.env:12} {n.pairs:5d} {sd} {rounds:>7} {n.planned:7d}")
    settled = sum(n.settles for n in needs)
    print(f"{settled} of {len(needs)} primary cells need at most the planned rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
