"""A store's every round travels, and a damaged store is told and recovered
truthfully (issue 55, findings 5, 6, 17, 24, 25): real stores made through the
store API, damaged with byte writes as the review damaged them, and the real
`archive`, `import`, `store check` and `store recover` commands."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from isobench.cli import entry
from isobench.core.metric import Metric
from isobench.store import shapes
from isobench.store.db import Sample, Store
from isobench.store.rows import PROBE_ROUND
from tests.synthetic_runs import simple_run

PAGE = 4096  # SQLite's default page size, which isobench never changes


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "s.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    shapes._said.clear()
    return tmp_path


def isobench(capfd, *args) -> tuple[int, str, str]:
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


def beside(path: Path) -> list[str]:
    """The files SQLite keeps beside a store."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name + "-"))


def five_runs(path: Path, runs: int = 5) -> Path:
    store = Store(str(path))
    for i in range(runs):
        values = {"native": [10.0 + j for j in range(200)], "docker-nat": [9.0 + j for j in range(200)]}
        simple_run(store, f"r{i}", values)
    store.close()
    return path


# -- 5: every round isobench stores travels ----------------------------------------


def test_a_duet_probe_sample_is_archived_imported_and_recovered(sandbox, capfd):
    store = Store(str(sandbox / "s.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 11.0, 12.0], "docker-nat": [9.0, 10.0, 11.0]})
    # run/duetcalls.py: a table with warmup = 0 keeps its probe alone as a warm-up at PROBE_ROUND
    store.define_metrics("r1", "compression", "default", [Metric("throughput_mbs", "MB/s", True)])
    probe = Sample("r1", "native", "compression", "default", PROBE_ROUND, True, "ok", "2026-05-01T10:00:00+0000", 1.0)
    store.add_sample(probe)
    store.close()
    code, out, err = isobench(capfd, "archive", "r1", "-o", sandbox / "r1.run.json")
    assert code == 0, err
    code, out, err = isobench(capfd, "import", sandbox / "r1.run.json", "--store", sandbox / "other.sqlite")
    assert code == 0 and "imported run r1" in out, (out, err)
    rounds = sqlite3.connect(sandbox / "other.sqlite").execute("SELECT MIN(round) FROM samples").fetchone()[0]
    assert rounds == PROBE_ROUND
    code, out, err = isobench(capfd, "store", "recover", "-o", sandbox / "new.sqlite")
    assert code == 0 and "1 run(s) copied" in out and "0 lost" in out, (out, err)


def test_an_import_still_refuses_rounds_no_study_makes(sandbox, capfd):
    import json

    store = Store(str(sandbox / "s.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 11.0], "docker-nat": [9.0, 10.0]})
    store.close()
    assert isobench(capfd, "archive", "r1", "-o", sandbox / "r1.run.json")[0] == 0
    doc = json.loads((sandbox / "r1.run.json").read_text())
    for bad, warmup in ((PROBE_ROUND, 0), (-2, 1), (5000, 0)):  # the probe is a warm-up, and the only negative
        doc["samples"][0].update(round=bad, warmup=warmup)
        (sandbox / "bad.run.json").write_text(json.dumps(doc))
        code, _, err = isobench(capfd, "import", sandbox / "bad.run.json", "--store", sandbox / "o.sqlite")
        assert code == 2 and f"samples[0].round: {bad} is not a round a study makes" in err, err
