"""An explain run read back (results/explain.py): its fact names the
environment and the variants; each cell's answer line, the notes that say
how the parts add up, that they do not (with the factorial that would say
how), what no setting moves, and the waterfall's steps that end where the
whole does."""

import math

import numpy as np
import pytest

from isobench.results.explain import answer_line, answers, explained_of, notes, steps
from isobench.results.model import MetricKey, RunData

KEY = MetricKey("fio", "randwrite", "iops", "IO/s", True, primary=True)
FACT = {
    "explains": "orig",
    "env": "docker-nat",
    "baseline": "native",
    "cells": [["fio", "randwrite"]],
    "settings": [
        {"setting": "network", "variant": "network-back", "label": "network host\u2192bridge"},
        {"setting": "storage", "variant": "storage-back", "label": "storage volume\u2192overlay"},
    ],
    "joint": "all-back",
}


def run_of(log_cost: dict[str, float], rounds: int = 8, fact=FACT) -> RunData:
    """An explain run whose environments' iops are 10,000 x exp(log_cost) with 1% noise per sample."""
    rng = np.random.default_rng(7)
    envs = ["native", *log_cost]
    values = {
        (KEY, e): [10_000 * math.exp(log_cost.get(e, 0.0) + rng.normal(0, 0.01)) for _ in range(rounds)] for e in envs
    }
    return RunData(
        run_id="e1",
        study_name="explain-docker-nat",
        started_at="2026-11-28T10:00:00+00:00",
        finished_at=None,
        status="complete",
        host_facts={"explain": fact},
        study_text='[study]\nname = "explain-docker-nat"\n',
        study_hash="",
        baseline="native",
        environments=envs,
        env_facts={},
        metrics=[KEY],
        values=values,
        rounds={(KEY, e): list(range(rounds)) for e in envs},
    )


def test_the_answer_line_names_each_part_largest_first_and_what_is_left():
    [a] = answers(run_of({"docker-nat": -0.35, "network-back": -0.30, "storage-back": -0.05, "all-back": 0.0}))
    line = answer_line(a)
    assert line.startswith("docker-nat fio randwrite \u221229.")
    assert line.index("storage volume\u2192overlay \u221225.5% [") < line.index("network host\u2192bridge \u22124.0% [")
    assert ", unexplained " in line
    said = " ".join(notes(a))
    assert "the parts add up as log ratios" in said and "do not add up" not in said and "still differs" not in said
    bars = steps(a)
    assert [b.label for b in bars] == [
        "storage volume\u2192overlay",
        "network host\u2192bridge",
        "unexplained",
        "docker-nat (whole)",
    ]
    assert bars[1].start == bars[0].end and bars[2].end == pytest.approx(bars[3].end, abs=1e-12)  # they add up
    assert bars[3].total and bars[3].start == 0.0


def test_parts_that_do_not_add_up_say_so_and_offer_the_factorial():
    # each setting alone takes the whole gap away: they only cost together
    [a] = answers(run_of({"docker-nat": -0.30, "network-back": 0.0, "storage-back": 0.0, "all-back": 0.0}))
    assert not a.shares.adds_up
    said = " ".join(notes(a))
    assert "The parts do not add up: the settings interact (+" in said
    assert (
        "`isobench explain orig --cell fio/randwrite --env docker-nat --factorial --setting network --setting storage`"
        in said
        or "--factorial --setting storage --setting network`" in said
    )


def test_what_no_setting_moves_is_said():
    [a] = answers(run_of({"docker-nat": -0.40, "network-back": -0.35, "storage-back": -0.15, "all-back": -0.10}))
    assert "With every setting moved, docker-nat still differs from native by \u22129." in " ".join(notes(a))


def test_another_run_or_an_unreadable_fact_is_no_explain():
    run = run_of({"docker-nat": -0.3, "network-back": 0.0, "storage-back": 0.0, "all-back": 0.0})
    assert explained_of(run) is not None
    for broken in ({}, {"explains": "x"}, {**FACT, "settings": [{"setting": "network"}]}, "text"):
        run.host_facts = {"explain": broken}
        assert explained_of(run) is None and answers(run) == []
    run.host_facts = {}
    assert answers(run) == []
