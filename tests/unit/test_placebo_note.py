"""A run with a placebo (facts: placebo = true, recorded from its spec)
says under Table I that its change is the harness's own bias, per primary
cell with its interval, in every format; a column that is only named like
one says nothing (results/placebo.py, report/sections/results.py)."""

from __future__ import annotations

import re

from isobench.report.blocks import Para
from isobench.report.markdown import render_markdown
from isobench.report.section import MARKDOWN, TERMINAL, ReportContext
from isobench.report.sections.results import ResultsSection
from isobench.results.model import MetricKey, RunData
from isobench.results.placebo import bias_lines, is_placebo
from isobench.results.table import build_table

TPUT = MetricKey("compression", "default", "throughput_mbs", "MB/s", True, "throughput", primary=True)
REAL = MetricKey("compression", "default", "real_s", "s", False, "duration")
GFLOPS = MetricKey("hpcc", "default", "hpl_gflops", "GFLOP/s", True, "throughput", primary=True)
STREAM = MetricKey("hpcc", "default", "stream_triad_gbs", "GB/s", True, "throughput", primary=True)
DRIFT = [8.0, 7.1, 8.6, 6.9, 7.7, 8.2, 7.4, 8.0]
NOTE = "docker-placebo (least isolation the engine allows) reads the harness's own bias: "


def run(facts: dict[str, dict], factor: dict[str, float] | None = None) -> RunData:
    envs = list(facts)
    factor = factor or {}
    values, rounds = {}, {}
    for env in envs:
        f = factor.get(env, 1.0)
        jitter = [1 + 0.002 * ((i * 7 + len(env)) % 5 - 2) for i in range(len(DRIFT))]
        for key in (TPUT, GFLOPS, STREAM):
            values[(key, env)] = [v * f * j for v, j in zip(DRIFT, jitter)]
        values[(REAL, env)] = [8 / (v * f * j) for v, j in zip(DRIFT, jitter)]
        for key in (TPUT, REAL, GFLOPS, STREAM):
            rounds[(key, env)] = list(range(len(DRIFT)))
    return RunData(
        "r1",
        "s",
        "",
        None,
        "complete",
        {},
        "",
        "",
        envs[0],
        envs,
        facts,
        [TPUT, REAL, GFLOPS, STREAM],
        values,
        rounds=rounds,
    )


PLACEBO_RUN = {"native": {"kind": "native"}, "docker-placebo": {"kind": "docker", "placebo": True}}


def test_the_placebos_primary_cells_are_said_under_table_i():
    r = run(PLACEBO_RUN, {"docker-placebo": 0.8})
    [line] = bias_lines(r, build_table(r))
    change = r"−(19|20)\.\d% \[−\d+\.\d%, −\d+\.\d%\]"  # Table I's change and interval
    # its only primary names the workload alone; hpcc's two are named by their metrics
    cells = [f"compression {change}", f"hpcc hpl_gflops {change}", f"hpcc stream_triad_gbs {change}"]
    assert re.fullmatch(re.escape(NOTE) + "; ".join(cells), line), line
    assert "real_s" not in line  # descriptive rows are not the question
    blocks = ResultsSection().blocks(ReportContext(r))
    assert [b.text for b in blocks if isinstance(b, Para)][0] == line  # right under the table
    assert line.replace("_", "\\_") in render_markdown(r)  # Markdown escapes the metric names


def test_a_run_without_a_placebo_says_nothing_of_one():
    named = run({"native": {}, "docker-placebo": {"kind": "docker"}})  # the name alone is no placebo
    assert not is_placebo(named, "docker-placebo")
    assert bias_lines(named, build_table(named)) == []
    for fmt in (TERMINAL, MARKDOWN):
        ctx = ReportContext(named)
        ctx.fmt = fmt
        assert not any(isinstance(b, Para) and "harness" in b.text for b in ResultsSection().blocks(ctx))
    # nor does a placebo that is the baseline (nothing to compare it with)
    base = run({"docker-placebo": {"placebo": True}, "native": {}})
    assert bias_lines(base, build_table(base)) == []
