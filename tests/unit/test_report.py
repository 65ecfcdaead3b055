"""Table I, terminal and Markdown rendering from a hand-built RunData."""

import dataclasses

import pytest
from rich.console import Console

from isobench.report.markdown import render_markdown
from isobench.report.terminal import render_terminal, short_text
from isobench.results.model import MetricKey, RunData
from isobench.results.table import build_table, fmt_num, fmt_pct

THROUGHPUT = MetricKey("compress", "default", "throughput_mbs", "MB/s", True)
LATENCY = MetricKey("fio", "randread", "read_lat_us", "µs", False)
ENVS = ["native", "docker-nat", "docker-host"]


def spread(mean: float, step: float) -> list[float]:
    """Five values around mean: sd = step * sqrt(2.5)."""
    return [mean + k * step for k in (-2, 1, 0, -1, 2)]  # not monotonic: no drift warning


@pytest.fixture
def run() -> RunData:
    return RunData(
        run_id="r-0001",
        study_name="quick",
        started_at="2024-05-01T10:00:00Z",
        finished_at="2024-05-01T10:30:00Z",
        status="complete",
        host_facts={
            "cpu_model": "Intel Xeon E5-2665",
            "cores": 32,
            "mem_bytes": 256 * 2**30,
            "kernel": "6.1.0-18-amd64",
            "thp": "madvise",
            "governor": "performance",
            "docker_version": "24.0.7",
            "accelerator": "kvm",
            "packages": {"xz-utils": "5.4.1", "fio": "3.33"},
        },
        study_text='name = "quick"\nbaseline = "native"\n',
        study_hash="0123456789abcdef0123",
        baseline="native",
        environments=ENVS,
        env_facts={e: {} for e in ENVS},
        metrics=[THROUGHPUT, LATENCY],
        values={
            (THROUGHPUT, "native"): spread(1043, 10),  # sd 15.8
            (THROUGHPUT, "docker-nat"): spread(1034, 10),  # −0.86%, t = 0.9: not significant
            (LATENCY, "native"): spread(82, 1),  # sd 1.58
            (LATENCY, "docker-nat"): spread(162, 1),  # +97.6%, significant
            # docker-host: compress failed twice, fio never measured
        },
        failures={("compress", "default", "docker-host"): ["timed out after 600 s: pxz", "timed out after 600 s: pxz"]},
    )


def cell(table, key, env):
    row = next(r for r in table.rows if r.key == key)
    return next(c for c in row.cells if c.env == env)


# -- number formatting ------------------------------------------------------------


@pytest.mark.parametrize(
    "x,sig,text",
    [
        (1043.2, 4, "1043"),
        (110234.0, 4, "110234"),
        (31.457, 4, "31.46"),
        (3.18, 4, "3.18"),
        (0.012634, 4, "0.01263"),
        (15.81, 2, "16"),
        (0.0523, 2, "0.052"),
        (123.4, 2, "123"),
        (-4.5, 4, "\u22124.5"),
        (0.0, 2, "0"),
        (float("nan"), 2, "\u2014"),
    ],
)
def test_fmt_num(x, sig, text):
    assert fmt_num(x, sig) == text


@pytest.mark.parametrize(
    "pct,text",
    [
        (-0.8629, "\u22120.9%"),
        (97.56, "+97.6%"),
        (-22.04, "\u221222.0%"),
        (183.2, "+183%"),
        (0.01, "\u00b10.0%"),
    ],
)
def test_fmt_pct(pct, text):
    assert fmt_pct(pct) == text


# -- the table --------------------------------------------------------------------


def test_columns_put_the_baseline_first_with_uniform_n(run):
    run.environments = ["docker-nat", "native", "docker-host"]
    t = build_table(run)
    assert [c.env for c in t.columns] == ["native", "docker-nat", "docker-host"]
    assert t.columns[0].is_baseline and not t.columns[1].is_baseline
    assert t.columns[0].header == "native (baseline), n=5"
    assert t.columns[1].n == 5
    assert t.columns[2].n is None and t.columns[2].header == "docker-host"


def test_rows_follow_metric_order_with_direction_in_label(run):
    t = build_table(run)
    assert [r.key for r in t.rows] == [THROUGHPUT, LATENCY]
    assert t.rows[0].label == "throughput_mbs (MB/s) \u2191"
    assert t.rows[1].label == "randread: read_lat_us (µs) \u2193"
    assert [w for w, _ in t.groups()] == ["compress", "fio"]


def test_baseline_cell_has_value_and_sd_but_no_comparison(run):
    c = cell(build_table(run), THROUGHPUT, "native")
    assert c.verdict is None
    assert c.summary.mean == pytest.approx(1043)
    assert c.text == "1043 [16]"


def test_unchanged_cell_shows_its_interval_and_is_equivalent(run):
    c = cell(build_table(run), THROUGHPUT, "docker-nat")
    # 2 cells tested, 1 changed: the interval is at 1 - 1 * 0.05 / 2 = 97.5%
    assert c.text == "1034 (\u22120.9% [\u22123.5%, +1.8%]) [16] \u2248"
    assert short_text(c) == "1034 \u22120.9% [\u22123.5, +1.8] \u2248"  # the terminal's cell
    assert short_text(c, show_n=True) == "1034 \u22120.9% [\u22123.5, +1.8] n=5 \u2248"  # a column of mixed n
    assert not c.verdict.changed and c.verdict.verdict == "equivalent"
    assert c.verdict.level == pytest.approx(0.975)
    # ratio of geometric means; lower throughput is worse
    assert c.verdict.overhead_pct == pytest.approx(0.86, abs=0.01)


def test_significant_latency_increase_is_marked_and_worse(run):
    c = cell(build_table(run), LATENCY, "docker-nat")
    assert c.text == "162 (+97.6% [+92.0%, +103%]) [1.6] *; median 162 (160..164)"  # a time (µs)
    assert c.verdict.changed and c.verdict.direction == "worse"
    assert c.verdict.overhead_pct == pytest.approx(97.6, abs=0.1)


def test_failed_and_missing_cells(run):
    t = build_table(run)
    failed = cell(t, THROUGHPUT, "docker-host")
    assert (failed.status, failed.text, failed.failures) == ("failed", "failed (2)", 2)
    missing = cell(t, LATENCY, "docker-host")
    assert (missing.status, missing.text, missing.summary) == ("missing", "\u2014", None)
    assert len(t.failures) == 1
    f = t.failures[0]
    assert (f.workload, f.case, f.env, f.count) == ("compress", "default", "docker-host", 2)
    assert f.reasons == (("timed out after 600 s: pxz", 2),)


def test_legend_states_the_tests_correction_verdicts_and_only_relevant_markers(run):
    legend = "\n".join(build_table(run).legend)
    assert "Welch's t-test on log values (rounds could not be paired): 2 cells" in legend
    assert "97.5% interval" in legend and "Benjamini-Hochberg" in legend
    assert "equivalent" in legend and "inconclusive" in legend
    assert "no significant difference" not in legend
    assert "failed (k)" in legend and "not measured" in legend
    assert "n=k" not in legend  # n is uniform per column, shown in the headers
    assert "\u00b0" not in legend  # no untested comparison in this run


def test_partial_failures_small_n_and_per_cell_n(run):
    run.values[(THROUGHPUT, "docker-host")] = [1040.0]
    run.values[(LATENCY, "docker-host")] = [80.0, 81.0, 82.0]
    t = build_table(run)
    one = cell(t, THROUGHPUT, "docker-host")
    assert one.text == "1040 (\u22120.3%) [\u2014] n=1 \u00b0!"
    assert not one.verdict.effect.tested and one.verdict.verdict == "inconclusive"
    assert cell(t, LATENCY, "docker-host").text.startswith("81 (\u22121.2% [")
    legend = "\n".join(t.legend)
    assert "n=k" in legend and "fewer than 2" in legend and "some repetitions failed" in legend


def test_no_baseline_values_means_no_comparison(run):
    del run.values[(LATENCY, "native")]
    t = build_table(run)
    assert cell(t, LATENCY, "native").text == "\u2014"
    c = cell(t, LATENCY, "docker-nat")
    assert c.verdict is None and c.text == "162 [1.6]; median 162 (160..164)"


def test_emulated_environment_is_flagged(run):
    run.environments = ENVS + ["vm-tcg"]
    run.env_facts["vm-tcg"] = {"emulated": True, "accelerator": "tcg"}
    run.values[(THROUGHPUT, "vm-tcg")] = spread(100, 1)
    t = build_table(run)
    col = t.columns[-1]
    assert col.emulated and col.header == "vm-tcg \u2020, n=5"
    assert not any(c.emulated for c in t.columns[:-1])
    assert t.footnotes == ("\u2020 vm-tcg: emulated (TCG), not comparable to KVM.",)
    assert cell(t, THROUGHPUT, "vm-tcg").text.startswith("99.99 (\u221290.4% [")
    assert cell(t, THROUGHPUT, "vm-tcg").text.endswith("[1.6] *")


# -- markdown -----------------------------------------------------------------------


def test_markdown_has_a_gfm_table_with_every_environment(run):
    md = render_markdown(run)
    lines = md.splitlines()
    header = "| workload | metric | native (baseline), n=5 | docker-nat, n=5 | docker-host |"
    i = lines.index(header)
    assert lines[i + 1] == "|:---|:---|---:|---:|---:|"
    assert lines[i + 2] == (
        "| compress | throughput\\_mbs (MB/s) \u2191 | 1043 [16] | "
        "1034 (\u22120.9% [\u22123.5%, +1.8%]) [16] \u2248 | failed (2) |"
    )
    assert lines[i + 3] == (
        "| fio | randread: read\\_lat\\_us (µs) \u2193 | 81.99 [1.6]; median 82 (80..84) | "
        "162 (+97.6% [+92.0%, +103%]) [1.6] \\*; median 162 (160..164) | \u2014 |"
    )
    assert all(line.count("|") == 6 for line in lines[i : i + 4])


def test_markdown_has_facts_legend_failures_and_study(run):
    md = render_markdown(run)
    assert md.startswith("# quick: run r-0001\n")
    assert "- **CPU**: Intel Xeon E5-2665" in md
    assert "- **Memory**: 256.0 GiB" in md
    assert "- **Study hash**: 0123456789ab" in md
    assert '- **packages**: {"fio":"3.33","xz-utils":"5.4.1"}' in md
    assert "- \\* changed: significant after Benjamini-Hochberg correction" in md
    assert "## Failures" in md
    assert "- **compress/default on docker-host:** 2 failed" in md
    assert "timed out after 600 s: pxz (\u00d72)" in md
    assert md.rstrip().endswith('```toml\nname = "quick"\nbaseline = "native"\n```')


def test_markdown_fence_outgrows_backticks_in_the_study(run):
    run.study_text = 'note = """\n```\n"""\n'
    md = render_markdown(run)
    assert "````toml\n" in md and md.rstrip().endswith("````")


def test_markdown_escapes_pipes_and_tags_but_not_comparisons(run):
    run.failures[("compress", "default", "docker-host")] = ["exit 1: sh -c a|b <script>"]
    md = render_markdown(run)
    assert "exit 1: sh -c a\\|b \\<script>" in md
    assert "false discoveries <= 5%" in md  # "<" before a digit or space is no tag: kept


# -- terminal ------------------------------------------------------------------------


def render(run) -> str:
    console = Console(record=True, width=200)
    render_terminal(run, console)
    return console.export_text()


def test_terminal_shows_facts_table_legend_and_failures(run):
    out = render(run)
    for text in (
        "Intel Xeon E5-2665",
        "256.0 GiB",
        "6.1.0-18-amd64",
        "madvise",
        "performance",
        "24.0.7",
        "accelerator",
        "kvm",
        "0123456789ab",
        "r-0001",
        "complete",
    ):
        assert text in out, text
    assert "native (baseline), n=5" in out and "docker-nat, n=5" in out
    # short cells in a terminal: mean, change [interval, %], marks
    assert "1034 \u22120.9% [\u22123.5, +1.8] \u2248" in out
    assert "162 +97.6% [+92.0, +103] *" in out
    assert "failed (2)" in out
    assert "Welch's t-test on log values" in out
    assert "compress/default on docker-host: 2 failed\n    timed out after 600 s: pxz (\u00d72)" in out
    # Grouped by workload: compress's row comes before fio's.
    assert out.index("throughput_mbs") < out.index("read_lat_us")


def test_terminal_survives_sparse_facts(run):
    run = dataclasses.replace(run, host_facts={}, finished_at=None, study_hash="", status="interrupted", failures={})
    out = render(run)
    assert "interrupted" in out and "1043" in out
    assert "Failures" not in out


@pytest.mark.parametrize(
    "pct,text",
    [(-0.04, "\u22120.04%"), (0.004, "+0.004%"), (0.0, "0.0%"), (-0.8629, "\u22120.9%"), (183.2, "+183%")],
)
def test_a_bound_is_never_plus_minus_zero(pct, text):
    """issue 55: history and report printed the bound −0.04% as "±0.0%"."""
    from isobench.core.numbers import fmt_bound

    assert fmt_bound(pct) == text


def test_an_interval_says_its_bounds_with_their_sign():
    from types import SimpleNamespace

    from isobench.results.analysis import interval_text

    v = SimpleNamespace(low=0.9996, pct=0.08, pct_low=-0.04, pct_high=0.2, effect=SimpleNamespace(ratio=1.0008))
    assert interval_text(v) == "+0.1% [\u22120.04%, +0.2%]"
