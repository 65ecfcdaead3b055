"""`isobench store check` says SQLite's problems one a line and counts them
(issue 55, finding 17: SQLite returns one b-tree's problems as one row of
lines, printed joined by a literal \\x0a and counted "1 problem(s)" for 20).
The store is a real one, three of its pages overwritten."""

from __future__ import annotations

import random

from click.testing import CliRunner

from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import simple_run

PAGE = 4096


def _damaged(path: str) -> None:
    store = Store(path)
    for i in range(12):
        simple_run(store, f"r{i}", {"native": [float(v) for v in range(200)], "docker-nat": [1.0] * 200})
    store.close()
    with open(path, "r+b") as fh:
        for page in (5, 9, 14):
            fh.seek(page * PAGE + 100)
            fh.write(bytes(random.Random(page).randrange(256) for _ in range(300)))


def test_store_check_prints_each_problem_on_its_own_line_and_counts_them(tmp_path):
    path = str(tmp_path / "s.sqlite")
    _damaged(path)
    r = CliRunner().invoke(main, ["store", "check", "--store", path])
    assert r.exit_code == 2
    problems = [line for line in r.stdout.splitlines() if line.startswith("  ")]
    assert len(problems) > 1 and "\\x0a" not in r.output and "*** in database" not in r.output
    assert f"damaged: {len(problems)} problem(s) above" in " ".join(r.stderr.split())
