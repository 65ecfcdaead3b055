"""Figures from a synthetic run: each figure function gives the expected
panels, lines and bars, and nothing is drawn without data."""

import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from isobench.report import figures as plots
from isobench.results.model import MetricKey, RunData
from isobench.results.table import EMULATED_NOTE, build_table
from isobench.store.db import Store
from synthetic_runs import CLIENTS, ENVS, Synthetic, write_run


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("plots") / "r.sqlite"))
    write_run(store, Synthetic("run-a"))
    run = store.load_run("run-a")
    yield run, build_table(run), store.extras("run-a")
    store.close()


def bars(ax):
    return [p for c in ax.containers if isinstance(c, BarContainer) for p in c.patches]


def svg_text(fig: Figure) -> str:
    return plots.to_svg(fig)


def test_sweep_point_convention():
    assert plots.sweep_point("clients=4") == plots.SweepPoint("", "clients", 4.0)
    assert plots.sweep_point("get,threads=8") == plots.SweepPoint("get", "threads", 8.0)
    assert plots.sweep_point("randread") is None
    assert plots.sweep_point("clients=many") is None


def test_normalised_figure_one_bar_per_metric_and_candidate(stored):
    _, table, _ = stored
    fig = plots.normalised_figure(table, "fio")
    assert len(fig.axes) == 1
    # 4 fio metrics × 3 candidates (docker-nat, docker-host, vm-tcg)
    assert len(bars(fig.axes[0])) == 4 * (len(ENVS) - 1)
    text = svg_text(fig)
    assert EMULATED_NOTE in text and "*" in text


def test_normalised_figure_inverts_lower_is_better(stored):
    _, table, _ = stored
    fig = plots.normalised_figure(table, "compression")
    widths = [p.get_width() for p in bars(fig.axes[0])]
    # vm-tcg is ~2.8x slower in real_s: performance ~0.36, not 2.8
    assert max(widths) < 1.2 and min(widths) < 0.5


def test_sweep_figure_one_panel_per_metric_one_line_per_env(stored):
    _, table, _ = stored
    (sweep,) = plots.sweeps(table)
    assert (sweep.workload, sweep.param) == ("redis", "clients")
    assert [v for v, _ in sweep.metric_rows("throughput_rps")] == [float(c) for c in CLIENTS]
    fig = plots.sweep_figure(table, sweep)
    assert len(fig.axes) == 3
    for ax in fig.axes:
        assert len(ax.containers) == len(ENVS)  # one errorbar container per environment


def test_throughput_latency_and_cpu_figures(stored):
    _, table, _ = stored
    (sweep,) = plots.sweeps(table)
    assert sweep.throughput_metric() == "throughput_rps"
    assert sweep.latency_metric() == "latency_mean_us"
    assert sweep.cpu_metric() == "cpu_util_pct"
    for fig in (plots.throughput_latency_figure(table, sweep), plots.throughput_cpu_figure(table, sweep)):
        assert len(fig.axes) == 1 and len(fig.axes[0].containers) == len(ENVS)


def test_swept_cases_stay_out_of_the_normalised_figure(stored):
    _, table, _ = stored
    assert plots.normalised_figure(table, "redis") is None


def test_latency_cdf_one_line_per_env(stored):
    _, table, extras = stored
    hists = plots.histograms(extras)
    assert list(hists) == [("fio", "randread", "read_clat_hist")]
    per_env = hists[("fio", "randread", "read_clat_hist")]
    assert set(per_env) == set(ENVS)
    fig = plots.latency_cdf_figure(table, "fio", "randread", "read_clat_hist", per_env)
    lines = fig.axes[0].get_lines()
    assert len(lines) == len(ENVS)
    ys = lines[0].get_ydata()
    assert ys[-1] == pytest.approx(1.0) and all(a <= b for a, b in zip(ys, ys[1:]))


def test_pool_histograms_sums_counts():
    assert plots.pool_histograms([[[10, 1], [20, 2]], [[20, 3], [5, 1]]]) == [(5, 1), (10, 1), (20, 5)]


def test_cpu_cost_bars_per_direction_and_env(stored):
    _, table, _ = stored
    fig = plots.cpu_cost_figure(table, "nuttcp")
    assert len(fig.axes) == 1
    assert len(bars(fig.axes[0])) == 2 * len(ENVS)  # transmit, receive
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["transmit", "receive"]
    assert plots.cpu_cost_figure(table, "compression") is None


def test_startup_one_bar_per_env(stored):
    _, table, _ = stored
    fig = plots.startup_figure(table)
    assert len(fig.axes) == 1 and len(bars(fig.axes[0])) == len(ENVS)


def test_build_figures_lists_every_kind_in_order(stored):
    _, table, extras = stored
    specs = plots.build_figures(table, extras)
    assert [s.slug for s in specs] == [
        "normalised-compression",
        "normalised-fio",
        "normalised-nuttcp",
        "sweep-redis-clients",
        "throughput-latency-redis-clients",
        "cdf-fio-randread-read-clat",
        "cpu-cost-nuttcp",
        "throughput-cpu-redis-clients",
        "startup",
    ]


def test_no_data_no_figure():
    key = MetricKey("compression", "default", "throughput_mbs", "MB/s", True)
    run = RunData("r", "s", "t", None, "running", {}, "", "", "native", ["native", "docker"], {}, [key])
    table = build_table(run)
    assert plots.build_figures(table, {}) == []
    # baseline only: nothing to normalise, no figure either
    run.values[(key, "native")] = [1.0, 1.1]
    assert plots.build_figures(build_table(run), {}) == []


def test_write_figures_svg_and_png(stored, tmp_path):
    _, table, extras = stored
    specs = plots.build_figures(table, extras)[:2]
    paths = plots.write_figures(specs, tmp_path / "figs")
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == [
        "normalised-compression.png",
        "normalised-compression.svg",
        "normalised-fio.png",
        "normalised-fio.svg",
    ]
    assert (tmp_path / "figs" / "normalised-fio.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "figs" / "normalised-fio.svg").read_text()


def test_store_extras_skip_warmup_and_failures(stored, tmp_path):
    store = Store(str(tmp_path / "e.sqlite"))
    write_run(store, Synthetic("x", repetitions=2))
    extras = store.extras("x", "fio", "randread")
    assert set(extras) == {(e, "fio", "randread") for e in ENVS}
    assert all(len(v) == 2 and "read_clat_hist" in v[0] for v in extras.values())  # warm-up excluded
    assert store.extras("x", "compression") == {}
