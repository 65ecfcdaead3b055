"""Issue 45's target: every change Table I prints is the ratio of the printed
centres, in the terminal, Markdown, HTML and JSON. Recomputes each from the
report of a stored run (a run as `isobench archive` writes it, gzipped,
or by default the quick study of tests/data) and counts the disagreements
beyond rounding; exits 1 on any.

    PYTHONPATH=src python benchmarks/recompute_centres.py [RUN.json.gz]
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))  # the parsers of tests/unit/test_centres.py

from test_centres import _disagreements, _html_rows, _markdown_rows, _pairs_of_rows, _terminal_rows  # noqa: E402

from isobench.report.html import render_html  # noqa: E402
from isobench.report.markdown import render_markdown  # noqa: E402
from isobench.report.terminal import render_terminal  # noqa: E402
from isobench.store.db import Store  # noqa: E402
from isobench.store.export import cell_rows  # noqa: E402
from isobench.store.transfer import import_run  # noqa: E402


def main(path: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "s.sqlite"))
        run = store.load_run(import_run(store, json.load(gzip.open(path))))
        console = Console(width=400, record=True, color_system=None, file=open("/dev/null", "w"))
        render_terminal(run, console)
        bad = 0
        for name, rows in (
            ("terminal", _terminal_rows(console.export_text())),
            ("markdown", _markdown_rows(render_markdown(run))),
            ("html", _html_rows(render_html(run))),
        ):
            pairs = [(b, c) for b, c in _pairs_of_rows(rows) if "%" in c]
            wrong = _disagreements(pairs)
            bad += len(wrong)
            print(f"{name}: {len(pairs)} changes, {len(wrong)} disagreements", *wrong, sep="\n  ")
        cells = [r for r in cell_rows(run) if r["pct_vs_baseline"] is not None and r["env"] != run.baseline]
        wrong_json = [
            r
            for r in cells
            if abs(r["pct_vs_baseline"] - (r["centre"] / r["baseline_centre"] - 1) * 100)
            > 1e-9 * max(1.0, abs(r["pct_vs_baseline"]))
        ]
        bad += len(wrong_json)
        print(f"json: {len(cells)} changes, {len(wrong_json)} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "tests" / "data" / "quick-20261125.run.json.gz")))
