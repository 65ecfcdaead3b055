"""The report's seam: sections register themselves, the renderers loop over
them, the answer comes first on a page and last in a terminal, and a real
stored run (the quick study, this host) renders the same numbers and
verdicts as before the seam."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from isobench.report.blocks import Item, Items, Para
from isobench.report.html import render_html
from isobench.report.markdown import render_markdown
from isobench.report.section import HTML, MARKDOWN, TERMINAL, ReportContext, Section, register
from isobench.report.sections import SECTIONS, sections_for
from isobench.report.sections.answer import answers, settle_line
from isobench.report.sections.time_spent import time_rows
from isobench.report.terminal import render_terminal, short_text
from isobench.results.model import MetricKey, RunData
from isobench.results.primary import primary_keys
from isobench.store.db import Store
from isobench.store.transfer import import_run

DATA = Path(__file__).resolve().parents[1] / "data"
REPORT = Path(__file__).resolve().parents[2] / "src" / "isobench" / "report"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """The quick study as run on this host (raw tool outputs dropped), and
    its Markdown report as rendered before the section registry existed."""
    store = Store(str(tmp_path_factory.mktemp("q") / "q.sqlite"))
    run_id = import_run(store, json.load(gzip.open(DATA / "quick-20261125.run.json.gz")))
    return store.load_run(run_id), (DATA / "quick-20261125.before.md").read_text()


@pytest.fixture(scope="module")
def quick_md(quick) -> str:
    """The quick run's Markdown report, rendered once for the tests that read it."""
    return render_markdown(quick[0])


@pytest.fixture(scope="module")
def quick_html(quick) -> str:
    """The quick run's HTML page, rendered once (its figures take seconds)."""
    return render_html(quick[0])


def _section(md: str, title: str) -> list[str]:
    """The lines of a '## title' section of a Markdown report."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", md, re.S | re.M)
    assert m, title
    return [ln for ln in m.group(1).splitlines() if ln.strip()]


@pytest.mark.parametrize("title,renamed", [("Results", "Table I"), ("Inconclusive", None)])
def test_the_same_run_renders_the_same_numbers_and_verdicts(quick, quick_md, title, renamed):
    _, before = quick
    after = quick_md
    # the centres are geometric means now (the changes are their ratios): the rest is as it was
    assert _without_centres(_section(after, renamed or title)) == _without_centres(_section(before, title))


def _without_centres(lines: list[str]) -> list[str]:
    """A section's lines less each table cell's leading centre and the legend's line that says what it is."""
    out = []
    for ln in lines:
        if ln.startswith("- Cell:") or ln.startswith("  - why: "):  # the why of each inconclusive cell: test_why.py
            continue
        if ln.startswith("|"):
            ln = " | ".join(re.sub(r"^[\d.,\u2212]+( vs [\d.,\u2212]+)? ?", "", c) for c in ln.split(" | "))
            ln = ln.replace(" \u26a0 |", " |").replace("\u26a0 |", " |")  # the screen's new warnings: tested below
        # 4 times in 5 now, said so, at the worst true change: analysis/settle.py
        ln = re.sub(r"(about >?|more than )\d+ rounds", "about N rounds", ln).replace(" 4 times in 5", "")
        out.append(ln.replace("; rounds \u2212 1 df", ""))  # the legend names the test's df now
    return out


def test_the_same_counters_now_split_by_whether_the_primary_changed(quick, quick_md):
    """The attribution rows are the same numbers as before; no primary cell of
    this run changed, so every one moved to the section that says they are not
    a cost, each cell's rows under the host-wide heading (a native baseline
    has no cgroup or VMM counters to compare with)."""
    _, before = quick
    after = quick_md
    old = _section(before, "Where the overhead comes from")
    cost = _section(after, "Where the overhead comes from")
    moved = _section(after, "Counters that changed where the result did not")
    assert "No per-unit counter changed significantly in a cell whose primary result changed." in cost
    assert [ln for ln in old if ln.startswith("  - ")] == [ln for ln in moved if ln.startswith("  - ")]
    cells = [ln[2:].removesuffix(":") for ln in old if ln.startswith("- ")]
    assert [ln.removesuffix(" (primary result not changed):") for ln in moved if ln.endswith("changed):")] == cells
    assert {ln for ln in moved if ln.startswith("- ")} == {
        "- host-wide counters, including neighbours (other processes on this host)"
    }


def _said(lines: list[str], envs: list[str]) -> list[tuple[str, str, str]]:
    """(cell, environment, warning) for every warning a Markdown section says,
    whether one line a cell or one line a warning with its cells under it."""
    on = re.compile(r"^(.*) on (" + "|".join(map(re.escape, envs)) + r")(?:: (.*))?$")
    out, text = [], None
    for line in lines:
        if line.startswith("  - "):  # a cell under a warning said of many
            cell, listed = line[4:].rsplit(" on ", 1)
            out += [(cell, env, text) for env in listed.split(", ")]
        elif m := on.match(line[2:]):
            out.append((m[1], m[2], m[3]))
        else:
            text = re.sub(r" \(\d+ cells\)$", "", line[2:])
    return out


def test_each_warning_is_said_once_with_the_cells_it_covers(quick, quick_md):
    run, before = quick
    after = _section(quick_md, "Warnings")
    envs = list(run.environments)
    old, new = _said(_section(before, "Warnings"), envs), _said(after, envs)
    fft = "hpcc fft\\_gflops (GFLOPS) \u2191"
    screened = [  # the screen from 5 rounds on log values: one native FFT sample, and the cell it decided
        (fft, "native", "1 outlier of 5 values (log modified z > 13, kept): round 4 5.483 GFLOPS, 1/1.4 the median"),
        (
            "hpcc dgemm\\_gflops (GFLOPS) \u2191",
            "docker-host",
            "1 outlier of 5 values (log modified z > 13, kept): round 3 8.663 GFLOPS, 1/1.2 the median",
        ),
        (
            fft,
            "docker-host",
            "rests on one sample: round 4 native 5.483 GFLOPS, 1/1.4 the median; "
            "without it: +1.8% [\u22128.2%, +13.0%] inconclusive",
        ),
    ]
    # a round's first RandomAccess sample read lower in every environment (analysis.order)
    gups = "hpcc random\\_access\\_gups (GUP/s) \u2191"
    position = (
        "position: a round's first sample read \u22124.3% [\u22126.4%, \u22122.2%] against its later ones (p = 0.001); "
        "not balanced: 5 rounds of a 6-round period (first: native 1, docker-nat 2, docker-host 2), so the "
        "environments' ratios carry part of it"
    )
    screened += [(gups, env, position) for env in envs]
    assert sorted(new) == sorted(old + screened) and len(old) == 19  # the same warnings of the same cells, and these
    stream = [ln for ln in after if "STREAM measures cache" in ln]
    assert len(stream) == 1 and stream[0].endswith("(12 cells)")  # said 12 times before
    assert len(after) < len(_section(before, "Warnings"))


def test_the_answer_comes_first_on_a_page_and_last_in_a_terminal(quick, quick_md, quick_html):
    run, _ = quick
    md = quick_md
    # this host is a VM (steal seen in its counters): said first, then the answer
    first, second = md.split("\n## ")[1:3]
    assert first.startswith("The host is a virtual machine\n\n- This host is itself a virtual machine: native here")
    assert second.startswith("The answer: what each environment costs against native")
    html = quick_html
    assert html.index('<section id="answer">') < html.index('<section id="results">')
    assert '<figure id="overview"' in html  # the overview figure, HTML only
    console = Console(width=120, record=True, file=open("/dev/null", "w"))
    render_terminal(run, console)
    text = console.export_text()
    assert text.rindex("The answer:") > text.rindex("Run and host") > text.index("quick: run")
    # rounds that settle 4 times in 5 at the worst true change (7 needed more than 1000 asking for an
    # interval any estimate settles), and the budgets at alpha/9 over the budget's 9 looks
    assert " ".join(text.split()).endswith(
        "1 needs more than 1000. A --budget run tests at alpha/9 over its 9 planned looks: it needs more rounds "
        "there, and its budget pays for the first look that reaches them."
    )


def test_the_answer_is_table_i_verdicts_on_the_primaries(quick):
    run, _ = quick
    ctx = ReportContext(run)
    found = {a.env: a for a in answers(ctx.table, primary_keys(run))}
    assert list(found) == ["docker-nat", "docker-host"]
    nat = found["docker-nat"]
    assert (len(nat.changed), len(nat.equivalent), len(nat.inconclusive), len(nat.untold)) == (0, 3, 15, 0)
    # the same verdict objects as Table I's cells: nothing re-tested
    cells = {(r.key, c.env): c for r in ctx.table.rows for c in r.cells}
    assert all(cells[(r.key, "docker-nat")] is c for r, c in nat.equivalent + nat.inconclusive)


def _suggested(rounds, wall=None, budget=None, beyond=False):
    from isobench.analysis.suggest import Suggestion

    return Suggestion(rounds, wall, budget, beyond)


def test_settle_line_counts_rounds():
    from isobench.analysis.suggest import BudgetRun

    said = [_suggested(8), _suggested(12), _suggested(40), _suggested(1001), _suggested(None)]
    assert settle_line(said, 5) == (
        "Rounds that would settle them 4 times in 5 at this run's noise (this run has n = 5): "
        "12 settle 2 of 5; 40 settle 3 of 5; 2 need more than 1000."
    )
    assert settle_line([], 5) == ""
    # in time, at the run's own pace, and the --budget that settles as many: the one paying
    # for the latest look of theirs (a budgeted run tests at alpha/8 over its looks)
    runs = {8: BudgetRun(12, 8, 15, None, 16 * 42.0), 12: BudgetRun(18, 8, 24, None, 25 * 42.0)}
    runs[40] = BudgetRun(60, 8, 81, None, 82 * 42.0)
    timed = [_suggested(k, (k + 1) * 42.0, runs[k]) for k in (8, 12, 40)] + [_suggested(1001), _suggested(None)]
    assert settle_line(timed, 5) == (
        "Rounds that would settle them 4 times in 5 at this run's noise (this run has n = 5): "
        "12 (about 9 min here, or --budget 18m) settle 2 of 5; 40 (about 29 min here, or --budget 58m) "
        "settle 3 of 5; 2 need more than 1000. A --budget run tests at alpha/8 over its 8 planned looks: "
        "it needs more rounds there, and its budget pays for the first look that reaches them."
    )
    # a cell whose study cannot take a budget: the times alone
    assert "12 (about 9 min here) settle" in settle_line([*timed[:1], _suggested(12, 13 * 42.0)], 5)


def test_a_run_knows_its_pace_and_answers_in_minutes():
    from isobench.analysis.suggest import BudgetRun, Pace
    from isobench.results.model import RunData
    from isobench.results.suggestion import run_pace, suggestion_text

    run = RunData(
        "r",
        "s",
        "",
        None,
        "complete",
        {},
        "",
        "",
        "native",
        ["native", "docker"],
        {},
        [_key("w", "m", "throughput"), _key("w", "n", "duration")],
    )
    assert run.seconds_per_round() is None and run_pace(run) is None  # no times stored
    run.time_spent = {("w", "native"): (30.0, 10), ("w", "docker"): (50.0, 10)}
    run.warmup_rounds = 1
    assert run.seconds_per_round() == 8.0 and run_pace(run) == Pace(8.0, 1)  # 4 s a sample, 2 environments
    # a run of 72 rounds takes its warm-up round and its starts too: 73 x 8 s + 60 s = 644 s
    assert Pace(8.0, 1, 60.0).wall_s(72) == 644.0
    assert suggestion_text(_suggested(72, 644.0)) == "about 72 rounds (4 times in 5, about 11 min here)"
    at_looks = BudgetRun(110, 9, 112, 112, 113 * 8.0)
    assert suggestion_text(_suggested(72, 644.0, at_looks)) == (
        "about 72 rounds (4 times in 5, about 11 min here), or --budget 16m with max_repetitions = 112 "
        "(its 9 looks test at alpha/9: 110 rounds, reached at its look at 112)"
    )
    # no budget is longer than 24h; none holds more than 1000 rounds
    assert suggestion_text(_suggested(900, 30 * 3600.0, BudgetRun(990, 12, 1000, 1000, 31 * 3600.0))) == (
        "about 900 rounds (4 times in 5, about 30.0 h here), or a budgeted run to its look at 1000: "
        "more than any --budget (24h)"
    )
    assert suggestion_text(_suggested(900, 7200.0, None, beyond=True)) == (
        "about 900 rounds (4 times in 5, about 2.0 h here; more than 1000 in a budgeted run)"
    )  # the answer goes on "... would settle it": it read "...; a budgeted run would need more than 1000 would settle"
    assert suggestion_text(_suggested(72)) == "about 72 rounds (4 times in 5)"  # no pace: no time, no budget
    assert suggestion_text(_suggested(1001, None, None, True)) == "more than 1000 rounds"
    assert suggestion_text(_suggested(None)) == "more rounds than can be said"


def _key(w, m, role, case="default"):
    return MetricKey(w, case, m, "u", True, role)


def test_primaries_by_role_and_for_runs_before_roles():
    keys = [
        _key("c", "mbs", "throughput"),
        _key("c", "real_s", "duration"),
        _key("n", "p50", "latency"),
        _key("n", "cpu", "cpu"),
        _key("old", "gbps", ""),
        _key("old", "retr", ""),
    ]
    run = RunData("r", "s", "", None, "complete", {}, "", "", "a", ["a"], {}, keys)
    assert [k.metric for k in primary_keys(run)] == ["mbs", "p50", "gbps"]


def test_time_rows():
    header, rows, total = time_rows(
        {("c", "a"): (30.0, 3), ("c", "b"): (30.0, 3), ("f", "a"): (120.0, 2)}, ["c", "f"], ["a", "b"]
    )
    assert header == ("workload", "a", "b", "total", "share") and total == 180
    assert rows == [("c", "30 s", "30 s", "60 s", "33%"), ("f", "2 min", "-", "2 min", "67%")]


def test_sections_have_unique_slugs_and_the_renderers_name_none():
    assert len({s.order for s in SECTIONS.values()}) == len(SECTIONS)
    code = "".join((REPORT / f).read_text() for f in ("markdown.py", "terminal.py", "html.py"))
    template = (REPORT / "templates" / "report.html.j2").read_text()
    for section in SECTIONS.values():
        assert f'"{section.title}"' not in code and f'"{section.slug}"' not in code, section.slug
        assert f">{section.title}<" not in template and f'id="{section.slug}"' not in template, section.slug


def test_a_new_section_is_one_class(quick):
    run, _ = quick

    class Hello(Section):
        slug, title, order = "hello-test", "Hello", 999

        def blocks(self, ctx):
            return [Para(f"{len(ctx.run.environments)} environments"), Items((Item("x", strong="y:"),))]

    register(Hello)
    try:
        assert "## Hello\n\n3 environments\n\n- **y:** x" in render_markdown(run)
        html = render_html(run, specs=[])  # the figures (seconds of them) are not what is asked here
        assert '<section id="hello-test">' in html and '<a href="#hello-test">Hello</a>' in html
        console = Console(width=100, record=True, file=open("/dev/null", "w"))
        render_terminal(run, console)
        assert "Hello\n3 environments\n  y: x" in console.export_text()
        assert [s.slug for s, _ in sections_for(ReportContext(run), MARKDOWN)][-1] == "hello-test"
    finally:
        del SECTIONS["hello-test"]


def test_formats_and_applies_choose_the_sections(quick):
    run, _ = quick
    ctx = ReportContext(run)
    terminal = [s.slug for s, _ in sections_for(ctx, TERMINAL)]
    assert "study" not in terminal and terminal[0] == "guest-host" and terminal[-1] == "answer"
    assert "figures" not in [s.slug for s, _ in sections_for(ctx, MARKDOWN)]
    assert [s.slug for s, _ in sections_for(ctx, HTML)][:3] == ["guest-host", "answer", "results"]
    # a run without failures has no Failures section
    assert "failures" not in terminal


def _terminal(run, width: int, show_all: bool = False) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    render_terminal(run, console, show_all)
    return console.export_text()


def test_table_i_fits_a_120_column_terminal_without_wrapping_a_cell(quick):
    run, _ = quick
    table = ReportContext(run).table
    text = _terminal(run, 120)
    assert max(len(line) for line in text.splitlines()) <= 120
    lines = text.splitlines()
    for row in table.rows:  # every short cell whole on its row's line
        for cell in row.cells:
            assert any(row.label in ln and short_text(cell) in ln for ln in lines), (row.label, cell.env)
    assert "(continued)" in text  # two environments beside native need two panels at 120
    wide = _terminal(run, 200)
    assert "(continued)" not in wide and "docker-nat, n=5" in wide and "docker-host, n=5" in wide
    assert "Cell: centre, change vs native [interval, %], verdict" in text


def test_long_lists_are_folded_in_a_terminal_and_a_page_but_not_in_markdown(quick, quick_md, quick_html):
    run, _ = quick
    text = _terminal(run, 120)
    assert f"12 warning(s) on 22 cell(s): `isobench report {run.run_id} --all` shows them" in text
    assert "values fall across 5 rounds" not in text  # a warning's text: folded
    assert "61 inconclusive cell(s)" in text
    opened = _terminal(run, 120, show_all=True)
    assert "values fall across 5 rounds" in opened and "--all` shows them" not in opened
    html = quick_html
    # warnings, inconclusive cells, counters that changed where the result did not
    assert html.count("<details>") == 3 and "<summary>12 warning(s) on 22 cell(s)</summary>" in html
    assert "still show changed counters (not a cost)</summary>" in html
    warnings = html.index('<section id="warnings">')
    assert warnings < html.index("<details>", warnings) < html.index("values fall across", warnings)
    md = quick_md
    assert "values fall across 5 rounds" in md and "--all" not in md and "<details>" not in md


def test_a_list_heading_ends_in_one_colon(quick_md):
    """Markdown puts a colon after a list's heading: the heading's own text
    must not (the doctor's used to read "(isobench doctor)::")."""
    assert "Host settings that may bias these results (isobench doctor):\n" in quick_md
    assert not [ln for ln in quick_md.splitlines() if ln.rstrip().endswith("::")]
