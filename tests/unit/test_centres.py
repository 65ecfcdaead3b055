"""Table I's cells a reader can recompute: every printed change is the ratio of
the printed centres (the candidate's, and the baseline's it was taken against),
in the terminal, Markdown, HTML and JSON, within the rounding of what is
printed. The run is a duet's: the baseline ran once beside each environment, so
its samples differ per partner, and one candidate's samples are far apart
(the arithmetic mean is not the geometric one)."""

from __future__ import annotations

import html
import json
import math
import re

import pytest
from rich.console import Console

from isobench.analysis.stats import TEST_CROSSOVER, TEST_PAIRED
from isobench.report.html import render_html
from isobench.report.markdown import render_markdown
from isobench.report.terminal import render_terminal
from isobench.results.model import MetricKey, RunData
from isobench.results.table import build_table
from isobench.store.export import cell_rows

THROUGHPUT = MetricKey("compression", "default", "throughput_mbs", "MB/s", True, "throughput", True)
LATENCY = MetricKey("fio", "seqread", "lat_us", "µs", False, "latency", True)
ENVS = ["native", "docker-nat", "docker-host"]
ROUNDS = 7
NUM = r"[\d.]+|\u2212[\d.]+"
CELL = re.compile(rf"^({NUM})(?: vs ({NUM}))?(?: \(| )([+\u2212\u00b1][\d.]+)%")


def _duet_run(rotate_s: float | None) -> RunData:
    """Native beside docker-nat and beside docker-host each round, sides
    alternating; docker-host misses round 3, docker-nat's throughput has one
    sample 3.7 times the rest (the arithmetic mean then says another thing)."""
    schedule: dict = {"name": "duet", "sides": [[0], [1]], "cells": {"compression/default": "duet"}}
    if rotate_s is not None:
        schedule["rotate_s"] = rotate_s
    run = RunData(
        "r-duet", "quick", "2026-11-27T10:00:00Z", "2026-11-27T10:10:00Z", "complete",
        {"schedule": schedule}, 'name = "quick"\n', "0" * 20, "native", ENVS,
        {e: {} for e in ENVS}, [THROUGHPUT, LATENCY],
    )  # fmt: skip
    nat = [2.8, 2.95, 2.7, 10.4, 2.75, 2.9, 2.85]
    host = [3.0, 3.05, 2.95, 3.1, 2.9, 3.02, 2.98]
    beside_nat = [2.9, 2.85, 2.8, 2.95, 2.7, 2.99, 2.88]
    beside_host = [2.99, 2.96, 3.0, 2.91, 2.97, 3.04, 2.93]
    for key, scale in ((THROUGHPUT, 1.0), (LATENCY, 300.0)):
        nv, nr, np_, ns = [], [], {}, {}
        for r in range(ROUNDS):
            for partner, vals in (("docker-nat", beside_nat), ("docker-host", beside_host)):
                np_[len(nv)] = partner
                nv.append(vals[r] * scale)
                nr.append(r)
        run.values[(key, "native")], run.rounds[(key, "native")], run.partners[(key, "native")] = nv, nr, np_
        for env, vals in (("docker-nat", nat), ("docker-host", host)):
            rounds = [r for r in range(ROUNDS) if not (env == "docker-host" and r == 3)]
            run.values[(key, env)] = [vals[r] * scale for r in rounds]
            run.rounds[(key, env)] = rounds
            run.partners[(key, env)] = {i: "native" for i in range(len(rounds))}
            run.sides[(key, env)] = {i: str(r % 2) for i, r in enumerate(rounds)}
            ns[env] = rounds
    return run


def _half_unit(text: str) -> float:
    """Half the last printed digit of a number as fmt_num prints it."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


def _num(text: str) -> float:
    return float(text.replace("\u2212", "-").replace("\u00b1", ""))


def _disagreements(cells: list[tuple[str, str]]) -> list[str]:
    """(baseline cell text, candidate cell text) pairs whose printed change is
    not the ratio of the printed centres within the rounding of all three."""
    out = []
    for base_text, text in cells:
        m, b = CELL.match(text), re.match(rf"^({NUM})", base_text)
        assert m and b, (base_text, text)
        centre, ref = m[1], m[2] or b[1]
        c, r, pct = _num(centre), _num(ref), _num(m[3])
        worst = [(c + sc * _half_unit(centre)) / (r + sr * _half_unit(ref)) for sc in (-1, 1) for sr in (-1, 1)]
        lo, hi = (min(worst) - 1) * 100 - 0.05, (max(worst) - 1) * 100 + 0.05  # the change prints 1 decimal
        if not lo <= pct <= hi:
            out.append(f"{text} against {ref}: {pct} not in [{lo:.3f}, {hi:.3f}]")
    return out


def _pairs_of_rows(rows: list[list[str]]) -> list[tuple[str, str]]:
    """(baseline cell, candidate cell) of table rows whose cells are [baseline, candidates...]."""
    return [(row[0], c) for row in rows for c in row[1:]]


def _markdown_rows(md: str) -> list[list[str]]:
    lines = [ln for ln in md.splitlines() if ln.startswith("| ") and ("\u2191" in ln or "\u2193" in ln)]
    return [[c.replace("\\", "") for c in ln.strip("| ").split(" | ")[2:]] for ln in lines]


def _html_rows(page: str) -> list[list[str]]:
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S):
        cells = [html.unescape(c) for c in re.findall(r'<td class="num[^"]*"[^>]*>(.*?)</td>', tr, re.S)]
        if len(cells) == len(ENVS) and re.match(NUM, cells[0]):
            rows.append(cells)
    return rows


def _terminal_rows(text: str) -> list[list[str]]:
    rows = []
    for ln in text.splitlines():
        for arrow in ("\u2191", "\u2193"):
            if f" {arrow} " in ln and "(" in ln.split(arrow)[0]:
                cells = [c for c in re.split(r"\s{2,}", ln.split(arrow, 1)[1].strip(" \u2503\u2502"))]
                if len(cells) == len(ENVS):
                    rows.append(cells)
    return rows


@pytest.fixture(params=[0.1, None], ids=["swapped-0.1s", "sides-fixed"])
def duet(request) -> RunData:
    return _duet_run(request.param)


def test_the_duet_is_tested_as_its_sides_ran(duet):
    """Sides swapped every 0.1 s: the plain paired test (the first side is a
    tenth of a second of the sample); sides fixed per sample: the crossover."""
    table = build_table(duet)
    tests = {c.verdict.effect.test for r in table.rows for c in r.cells if c.verdict is not None}
    assert tests == ({TEST_PAIRED} if duet.host_facts["schedule"].get("rotate_s") else {TEST_CROSSOVER})
    df = "rounds \u2212 1 df" if tests == {TEST_PAIRED} else "rounds \u2212 2 df"
    assert any(f"{df}): 4 cells" in line for line in table.legend), table.legend  # the legend names it
    doc = {(r["metric"], r["env"]): r for r in cell_rows(duet)}
    assert doc[("throughput_mbs", "docker-nat")]["test"] == tests.pop()


def test_every_printed_change_is_the_ratio_of_the_printed_centres(duet):
    console = Console(width=250, record=True, color_system=None)
    render_terminal(duet, console)
    formats = {
        "terminal": _terminal_rows(console.export_text()),
        "markdown": _markdown_rows(render_markdown(duet)),
        "html": _html_rows(render_html(duet)),
    }
    for name, rows in formats.items():
        assert len(rows) == 2, (name, rows)  # both metrics, both candidates
        assert _disagreements(_pairs_of_rows(rows)) == [], name
    # a duet's baseline centre beside each partner is printed where it is not its column's
    assert any(" vs " in c for row in formats["markdown"] for c in row[1:])
    cells = [r for r in json.loads(json.dumps(cell_rows(duet))) if r["env"] != "native"]
    assert len(cells) == 4
    for r in cells:
        assert r["pct_vs_baseline"] == pytest.approx((r["centre"] / r["baseline_centre"] - 1) * 100, rel=1e-9)


def test_a_centre_is_the_geometric_mean_of_the_samples_in_its_pairs():
    run = _duet_run(0.1)
    table = build_table(run)
    row = next(r for r in table.rows if r.key == THROUGHPUT)
    host = next(c for c in row.cells if c.env == "docker-host")
    in_pairs = [v for r, v in zip(run.rounds[(THROUGHPUT, "docker-host")], run.values[(THROUGHPUT, "docker-host")])]
    assert host.centre == pytest.approx(math.exp(sum(map(math.log, in_pairs)) / len(in_pairs)))
    beside = [v for i, v in enumerate(run.values[(THROUGHPUT, "native")]) if i % 2 == 1 and i // 2 != 3]
    assert host.reference == pytest.approx(math.exp(sum(map(math.log, beside)) / len(beside)))
    native = next(c for c in row.cells if c.env == "native")
    assert native.centre == pytest.approx(math.exp(sum(map(math.log, run.values[(THROUGHPUT, "native")])) / 14))
