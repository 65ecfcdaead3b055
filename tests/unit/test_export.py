"""isobench export: the documented columns, exactly, readable by pandas."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.store.db import Store
from isobench.store.export import CELL_COLUMNS, SAMPLE_COLUMNS
from synthetic_runs import ENVS, Synthetic, write_run

# Pinned on purpose: these names are a public interface (docs/export.md).
# Appending is allowed; renaming, reordering or removing breaks users.
SAMPLES = [
    "run_id",
    "env",
    "env_kind",
    "workload",
    "case",
    "metric",
    "unit",
    "higher_is_better",
    "round",
    "warmup",
    "status",
    "value",
    "started_at",
    "wall_s",
]
CELLS = [
    "run_id",
    "workload",
    "case",
    "metric",
    "unit",
    "higher_is_better",
    "env",
    "n",
    "mean",
    "median",
    "sd",
    "cv",
    "ci95_low",
    "ci95_high",
    "ratio_vs_baseline",
    "pct_vs_baseline",
    "pct_ci95_low",
    "pct_ci95_high",
    "p_value",
    "significant",
    "verdict",
    # version 2
    "min",
    "max",
    "test",
    "p_adjusted",
    "interval_level",
    "direction",
    "rounds_needed",
    "warnings",
    # appended since primaries
    "family",
    # appended since centres
    "centre",
    "baseline_centre",
    # appended since rounds_needed is null beyond the cap
    "rounds_needed_beyond_cap",
    # appended since suggestions name a budgeted run at its looks' level
    "budget_rounds_needed",
    "budget_look",
    "budget",
    "budget_max_repetitions",
]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("export") / "r.sqlite")
    s = Store(path)
    write_run(s, Synthetic("run-x", repetitions=3))
    s.close()
    return path


def test_columns_are_pinned():
    assert list(SAMPLE_COLUMNS) == SAMPLES
    assert list(CELL_COLUMNS) == CELLS


def test_docs_list_the_same_columns():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "export.md").read_text()
    for name in SAMPLES + CELLS:
        assert f"| `{name}` |" in doc, name


def test_csv_loads_in_pandas_with_the_documented_columns(store_path, tmp_path):
    out = tmp_path / "exp"
    r = CliRunner().invoke(main, ["export", "run-x", "--store", store_path, "-o", str(out)])
    assert r.exit_code == 0, r.output
    samples = pd.read_csv(out / "samples.csv")
    cells = pd.read_csv(out / "cells.csv")
    assert list(samples.columns) == SAMPLES and list(cells.columns) == CELLS
    assert samples["warmup"].dtype == bool and samples["higher_is_better"].dtype == bool
    assert samples["value"].dtype == float
    ok = samples[(samples.status == "ok") & ~samples.warmup]
    # per env: 3 repetitions of every metric; the failed sample has an empty value
    assert len(ok[(ok.env == "native") & (ok.metric == "throughput_mbs")]) == 3
    failed = samples[samples.status == "timeout"]
    assert set(failed.metric) == {"throughput_mbs", "real_s"} and failed.value.isna().all()
    assert set(samples.env_kind) == {"native", "docker", "vm"}

    tput = cells[(cells.metric == "throughput_mbs") & (cells.workload == "compression")].set_index("env")
    assert list(tput.index) == list(ENVS)
    assert tput.loc["native", "verdict"] == "baseline" and pd.isna(tput.loc["native", "ratio_vs_baseline"])
    assert tput.loc["vm-tcg", "verdict"] == "changed" and tput.loc["vm-tcg", "significant"]
    assert tput.loc["vm-tcg", "direction"] == "worse"
    assert 0 < tput.loc["vm-tcg", "p_adjusted"] <= 0.05 and tput.loc["vm-tcg", "interval_level"] > 0.95
    assert tput.loc["vm-tcg", "ratio_vs_baseline"] == pytest.approx(0.35, abs=0.03)
    assert (cells.n > 0).all()


def test_json_has_metadata_and_both_tables(store_path, tmp_path):
    out = tmp_path / "x.json"
    r = CliRunner().invoke(main, ["export", "run-x", "--store", store_path, "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["format"] == "isobench-export" and doc["version"] == 2
    assert doc["run"]["run_id"] == "run-x" and "[study]" in doc["run"]["study_text"]
    assert doc["host_facts"]["cpu_model"] == "Synthetic CPU @ 2.0GHz"
    assert doc["env_facts"]["vm-tcg"]["emulated"] is True
    assert list(doc["samples"][0]) == SAMPLES and list(doc["cells"][0]) == CELLS
    baseline = next(c for c in doc["cells"] if c["env"] == "native")
    assert baseline["ratio_vs_baseline"] is None  # null, never NaN


def test_an_inconclusive_cell_carries_its_fixed_and_budgeted_suggestion(store_path, tmp_path):
    """rounds_needed is a fixed run's, at the fixed level; the budget fields
    a budgeted run's, at alpha/K over its looks (results/suggestion.py), as
    the answer says them; null beyond what can be said."""
    from isobench.results.suggestion import cell_suggestion
    from isobench.results.table import build_table

    out = tmp_path / "x.json"
    assert CliRunner().invoke(main, ["export", "run-x", "--store", store_path, "--format", "json", "-o", str(out)])
    cells = json.loads(out.read_text())["cells"]
    run = Store(store_path).load_run("run-x")
    verdicts = {
        (r.key.workload, r.key.case, r.key.metric, c.env): c.verdict for r in build_table(run).rows for c in r.cells
    }
    open_cells = [c for c in cells if c["verdict"] == "inconclusive"]
    said = 0
    for c in open_cells:
        s = cell_suggestion(verdicts[(c["workload"], c["case"], c["metric"], c["env"])], run)
        assert c["rounds_needed"] == (None if s.beyond_cap else s.rounds)
        assert c["rounds_needed_beyond_cap"] == s.beyond_cap
        b = s.budget
        assert (c["budget_rounds_needed"], c["budget_look"], c["budget"], c["budget_max_repetitions"]) == (
            (b.rounds, b.look, b.budget, b.max_repetitions) if b else (None, None, None, None)
        )
        if b is not None and not s.beyond_cap:
            said += 1
            assert c["budget_look"] >= c["budget_rounds_needed"] > c["rounds_needed"]  # alpha/K asks more
    assert said
    assert all(c["budget"] is None for c in cells if c["verdict"] != "inconclusive")


COUNTERS = [
    "run_id",
    "env",
    "workload",
    "case",
    "round",
    "warmup",
    "counter",
    "delta",
    "unit_name",
    "units",
    "per_unit",
]


def test_counter_columns_pinned_and_documented():
    from pathlib import Path

    from isobench.store.export import COUNTER_COLUMNS

    assert list(COUNTER_COLUMNS) == COUNTERS
    doc = (Path(__file__).parents[2] / "docs" / "attribution.md").read_text()
    for name in COUNTERS:
        assert f"| `{name}` |" in doc, name


def test_counters_csv_per_unit(tmp_path):
    from isobench.store.db import Sample
    from isobench.store.export import COUNTER_COLUMNS, counter_rows

    path = str(tmp_path / "c.sqlite")
    s = Store(path)
    write_run(s, Synthetic("run-c", repetitions=2))
    s.add_sample(
        Sample(
            "run-c",
            "native",
            "compression",
            "default",
            9,
            False,
            "ok",
            "t",
            1.0,
            {"throughput_mbs": 1.0},
            {"counters": {"cpu.system_s": 0.5, "ctxt": 100.0}, "units": ["MB", 50.0]},
        )
    )
    run = s.load_run("run-c")
    rows = counter_rows(run, s.samples("run-c"))
    by = {r["counter"]: r for r in rows}
    assert by["ctxt"]["per_unit"] == 2.0 and by["cpu.system_s"]["per_unit"] == 0.01
    assert by["ctxt"]["unit_name"] == "MB" and by["ctxt"]["round"] == 9
    assert all(list(r) == list(COUNTER_COLUMNS) for r in rows)
    assert run.counters[("compression", "default", "native")][0][2] == ["MB", 50.0]
