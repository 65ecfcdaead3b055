"""Outliers screened at every n a shipped study uses (5 rounds and up), on
log values; a flagged sample is kept and named, and a cell whose verdict or
estimate rests on it says so."""

from __future__ import annotations

import numpy as np
import pytest

from isobench.analysis.anomalies import SCREEN_Z, screen
from isobench.results.model import MetricKey, RunData
from isobench.results.table import build_table

SEQREAD = MetricKey("fio", "seqread", "bw_mbs", "MB/s", True, "throughput", True)


@pytest.mark.parametrize("n", [5, 6, 7, 8, 10])
def test_the_screen_warns_of_pure_noise_rarely(n):
    rng = np.random.default_rng(n)
    flagged = sum(screen(np.exp(rng.normal(0, 0.1, n))).flagged for _ in range(4000))
    assert flagged / 4000 < 0.03  # about 2% by the thresholds' simulation
    assert SCREEN_Z.get(n, 7.0) >= 7.0


def test_the_screen_is_multiplicative_and_needs_positive_values():
    base = [806.0, 760.0, 850.0, 900.0, 700.0, 820.0]
    assert screen([*base, 2971.0]).indices == (6,) and screen([*base, 806 / 3.7]).indices == (6,)
    assert screen([*base, 2971.0]).ratios[0] == pytest.approx(2971 / 820)
    assert not screen([*base[:3], 2971.0]).flagged  # four values: too few
    assert not screen([*base, -1.0]).flagged  # no logarithm


def _issue_run() -> RunData:
    """Seven rounds, native's round 1 at 3.7 times the rest (issue 45's seqread)."""
    rng = np.random.default_rng(7)
    native = list(806 * np.exp(rng.normal(0, 0.12, 7)))
    native[1] = 2971.0
    docker = list(830 * np.exp(rng.normal(0, 0.12, 7)))
    run = RunData(
        "r", "quick", "", None, "complete", {}, 'name = "quick"\n', "", "native", ["native", "docker"], {}, [SEQREAD]
    )
    run.values[(SEQREAD, "native")], run.rounds[(SEQREAD, "native")] = native, list(range(7))
    run.values[(SEQREAD, "docker")], run.rounds[(SEQREAD, "docker")] = docker, list(range(7))
    return run


def test_a_cell_that_rests_on_one_sample_says_so_and_keeps_it():
    run = _issue_run()
    native, docker = build_table(run).rows[0].cells
    assert native.summary is not None and native.summary.n == 7  # kept
    assert native.warnings[0].startswith("1 outlier of 7 values (log modified z > 8, kept): round 1 2971 MB/s, 3.8")
    (said,) = [w for w in docker.warnings if w.startswith("rests on one sample")]
    assert said.startswith("rests on one sample: round 1 native 2971 MB/s, 3.8\u00d7 the median; without it: +10.0% [")
    # a sample far off that decides nothing is named, not blamed
    calm = _issue_run()
    calm.values[(SEQREAD, "native")] = [806.0, 810.0, 790.0, 805.0, 812.0, 798.0, 1000.0]
    calm.values[(SEQREAD, "docker")] = [800.0, 812.0, 785.0, 803.0, 815.0, 790.0, 995.0]
    native, docker = build_table(calm).rows[0].cells
    assert any("outlier" in w for w in native.warnings)
    assert not any(w.startswith("rests on") for w in docker.warnings)
