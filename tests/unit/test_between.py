"""The raw compare's between-run spread (results/between.py): runs of the
same configuration on the same host class say how far a run's mean moves on
its own, and a raw compare's interval holds that; a shift of that size is
not a regression, a larger, real one still is."""

import hashlib
import math
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from isobench.analysis.stats import compare_cell
from isobench.analysis.tworuns import add_between_runs
from isobench.cli.main import main
from isobench.core.metric import Metric
from isobench.report.compare_render import render_markdown
from isobench.report.html import render_compare_html
from isobench.results.between import cell_config, run_mean, spreads
from isobench.results.compare import compare_overheads, compare_runs
from isobench.store.db import Sample, Store

ENVS = ("native", "docker-nat")
TEXT = """[study]
name = "shifty"
baseline = "native"
[environments.native]
[environments.docker-nat]
[workloads.compression]
size_mb = {size}
"""


def _study(size: int):
    text = TEXT.format(size=size)
    return SimpleNamespace(
        meta=SimpleNamespace(name="shifty", baseline="native"),
        path="studies/shifty.toml",
        text=text,
        hash=hashlib.sha256(text.encode()).hexdigest()[:16],
        environments={e: None for e in ENVS},
    )


def _run(store, run_id: str, level: dict[str, float], *, size: int = 32, seed: int = 0, n: int = 8) -> None:
    """A run whose environments sit at LEVEL[env] with 1% noise a sample."""
    rng = np.random.default_rng(seed)
    store.create_run(run_id, _study(size), {"cores": 2, "cpu_model": "Synthetic CPU", "mem_bytes": 2**34})
    store.define_metrics(
        run_id, "compression", "default", [Metric("throughput_mbs", "MB/s", True, "x", role="throughput", primary=True)]
    )
    for env in ENVS:
        store.set_env_facts(run_id, env, {"kind": env.split("-")[0]})
        for i in range(n):
            v = level[env] * math.exp(rng.normal(0, 0.01))
            store.add_sample(
                Sample(
                    run_id,
                    env,
                    "compression",
                    "default",
                    i,
                    False,
                    "ok",
                    "2026-05-01T10:00:00+0000",
                    1.0,
                    {"throughput_mbs": v},
                )
            )
    store.finish_run(run_id, "complete")


# a host whose runs shift by about ±10% on their own, each environment apart
SHIFTS = [
    {"native": 100, "docker-nat": 98},
    {"native": 112, "docker-nat": 90},
    {"native": 95, "docker-nat": 108},
    {"native": 103, "docker-nat": 111},
    {"native": 108, "docker-nat": 96},
]
LAST = len(SHIFTS) - 1


@pytest.fixture
def shifty(tmp_path):
    path = str(tmp_path / "r.sqlite")
    s = Store(path)
    for i, level in enumerate(SHIFTS):
        _run(s, f"r{i}", level, seed=i)
    yield s, path
    s.close()


def test_a_shift_the_host_makes_on_its_own_is_not_a_regression(shifty):
    s, _ = shifty
    _run(s, "cand", {"native": 107, "docker-nat": 85}, seed=9)  # docker-nat 13% below r3's
    runs = [s.load_run(f"r{i}") for i in range(len(SHIFTS))]
    a, b = runs[-1], s.load_run("cand")
    alone = compare_runs(a, b)
    (flagged,) = alone.regressions(5)
    assert flagged.env == "docker-nat"
    spread = spreads(runs, a, b)
    assert set(spread) == {("compression", "default", "throughput_mbs", e) for e in ENVS}
    sp = spread[("compression", "default", "throughput_mbs", "native")]
    assert sp.runs == 5 and sp.df == 8 and 5 < sp.pct < 15  # pooled over both environments
    held = compare_runs(a, b, between=spread)
    assert held.regressions(5) == [] and held.between_cells == 2
    cell = next(c for c in held.cells if c.env == "docker-nat")
    assert cell.verdict.effect.test == "welch-log+between" and "between runs" in cell.verdict.effect.reason
    assert cell.verdict.pct_low < flagged.verdict.pct_low
    assert "between runs: 2 of 2 cells" in held.between_line
    said = "between runs: 2 of 2 cells"
    assert said in render_markdown(held) and said in render_compare_html(held)
    assert alone.between_line == ""  # not asked: nothing said


def test_a_real_regression_beyond_a_steady_hosts_spread_is_still_found(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    for i in range(4):
        _run(s, f"r{i}", {"native": 100, "docker-nat": 98}, seed=i)
    _run(s, "cand", {"native": 100, "docker-nat": 70}, seed=9)
    runs = [s.load_run(f"r{i}") for i in range(4)]
    assert spreads(runs, runs[-1], s.load_run("cand"))  # 6 df: the spread is used, and small
    a, b = runs[-1], s.load_run("cand")
    result = compare_runs(a, b, between=spreads(runs, a, b))
    (flagged,) = result.regressions(5)
    assert flagged.env == "docker-nat" and flagged.verdict.pct == pytest.approx(-28.6, abs=2)
    s.close()


def test_only_runs_of_the_same_configuration_count_and_never_the_candidate(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    _run(s, "r0", {"native": 100, "docker-nat": 98}, seed=0)
    _run(s, "r1", {"native": 60, "docker-nat": 59}, size=8, seed=1)  # another sample size
    _run(s, "r2", {"native": 99, "docker-nat": 97}, seed=4)
    _run(s, "a", {"native": 101, "docker-nat": 99}, seed=2)
    _run(s, "b", {"native": 50, "docker-nat": 50}, seed=3)
    runs = {r: s.load_run(r) for r in ("r0", "r1", "r2", "a", "b")}
    assert cell_config(runs["r1"], "compression", "native") != cell_config(runs["a"], "compression", "native")
    assert cell_config(runs["a"], "fio", "native") is None
    # r0, r2 and a: 2 df per environment, 4 pooled: used; b (the candidate) and r1 never
    spread = spreads(runs.values(), runs["a"], runs["b"])
    sp = spread[("compression", "default", "throughput_mbs", "native")]
    assert sp.runs == 3 and sp.df == 4 and sp.pct < 3
    # without r2, 2 df: too few to use (MIN_DF)
    assert spreads([runs["r0"], runs["r1"], runs["b"]], runs["a"], runs["b"]) == {}
    result = compare_runs(runs["a"], runs["b"], between={})
    assert result.between_cells == 0 and "no metric has enough stored runs" in result.between_line
    s.close()


def test_run_mean_is_the_log_mean_and_its_squared_standard_error():
    m, se2 = run_mean([100.0, 110.0, -1.0, float("nan")])
    assert m == pytest.approx((math.log(100) + math.log(110)) / 2)
    assert se2 == pytest.approx(np.var(np.log([100, 110]), ddof=1) / 2)
    assert run_mean([100.0]) is None


def test_add_between_runs_widens_the_interval_and_keeps_the_within_run_noise():
    e = compare_cell([99.0, 100, 101, 100], [89.0, 90, 91, 90], True)
    wide = add_between_runs(e, 0.01, 6, 4)
    assert wide.se == pytest.approx(math.sqrt(e.se**2 + 0.02))
    assert wide.df == pytest.approx(min((e.se**2 + 0.02) ** 2 / (e.se**4 / e.df + 0.02**2 / 6), 6))
    assert add_between_runs(e, 1e-6, 6, 4).df == 6  # never more df than the spread's own
    assert wide.p > e.p and wide.log_ratio == e.log_ratio and wide.noise_sd == e.noise_sd
    assert add_between_runs(e, 0.0, 6, 4) is e


def test_the_cli_uses_the_stored_runs_unless_told_not_to(shifty):
    s, path = shifty
    _run(s, "cand", {"native": 107, "docker-nat": 85}, seed=9)
    runner = CliRunner()
    r = runner.invoke(
        main, ["compare", f"r{LAST}", "cand", "--store", path, "--fail-on-change", "5"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert "between runs: 2 of 2 cells" in r.output
    r = runner.invoke(
        main,
        ["compare", f"r{LAST}", "cand", "--store", path, "--fail-on-change", "5", "--no-between-runs"],
        catch_exceptions=False,
    )
    assert r.exit_code == 1 and "docker-nat" in r.output and "between runs" not in r.output


def test_the_overhead_form_allows_for_how_far_an_environments_ratio_moves(shifty):
    """docker-nat's ratio to native moves between runs on its own (0.98, 0.80,
    1.14, 1.08, 0.89 in SHIFTS): a candidate at 0.78 is within that."""
    s, path = shifty
    _run(s, "cand", {"native": 100, "docker-nat": 78}, seed=9)
    runs = [s.load_run(f"r{i}") for i in range(len(SHIFTS))]
    a, b = runs[-1], s.load_run("cand")
    alone = compare_overheads(a, b)
    assert [c.env for c in alone.regressions(5)] == ["docker-nat"]
    spread = spreads(runs, a, b, overhead=True)
    assert set(spread) == {("compression", "default", "throughput_mbs", "docker-nat")}  # never the baseline
    assert spread[("compression", "default", "throughput_mbs", "docker-nat")].df == 4
    held = compare_overheads(a, b, between=spread)
    assert held.regressions(5) == [] and held.between_cells == 1
    assert held.cells[0].verdict.effect.test == "welch-diff+between"
    assert "ratio to the baseline moves" in held.between_line
    r = CliRunner().invoke(
        main,
        ["compare", f"r{LAST}", "cand", "--store", path, "--overhead", "--fail-on-change", "5"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output


def test_a_real_change_of_a_steady_overhead_is_still_found(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    for i, native in enumerate((100, 115, 92, 104, 97)):  # the host moves both alike: the ratio holds
        _run(s, f"r{i}", {"native": native, "docker-nat": native * 0.98}, seed=i)
    _run(s, "cand", {"native": 100, "docker-nat": 55}, seed=9)
    runs = [s.load_run(f"r{i}") for i in range(5)]
    a, b = runs[-1], s.load_run("cand")
    result = compare_overheads(a, b, between=spreads(runs, a, b, overhead=True))
    (flagged,) = result.regressions(5)
    assert flagged.env == "docker-nat" and flagged.verdict.pct == pytest.approx(-43.9, abs=2)
    s.close()
