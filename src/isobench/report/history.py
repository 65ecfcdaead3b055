"""`isobench history` as report blocks (report/blocks.py): the change points
first, then per host class the series (one grid per primary metric: runs
down, environments across) with a small-multiples figure per workload, the
series too short to judge, the runs left out and how to read it all. The
terminal, Markdown and HTML renderers (report/history_render.py) draw the
blocks as they draw a run report's."""

from __future__ import annotations

from dataclasses import dataclass

from isobench.analysis.stats import ALPHA
from isobench.analysis.verdicts import fmt_level
from isobench.report.blocks import BAD, DIM, GOOD, WARN, Block, Figure, Grid, Item, Items, Para
from isobench.results.explain import answer_lines, explained_of, explaining
from isobench.results.history import Change, Group, History, Series
from isobench.results.model import RunData
from isobench.results.numbers import DASH
from isobench.results.table import HIGHER, LOWER

EXPLAINED_NOTE = (
    "`isobench explain` took these runs' changed cells apart, one setting at a time: each line is the whole "
    "gap, then each setting's part, then what no setting explains, measured when the explain ran. An explain "
    "run is a run of its own study (explain-ENV: `isobench history explain-ENV`), not a point of these series."
)
STEP_MARK = "\u25c6"  # ◆ on the first run after a confirmed step
EDIT_MARK = "study edited"


@dataclass(frozen=True)
class PageSection:
    slug: str
    heading: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Page:
    title: str
    subtitle: str
    sections: tuple[PageSection, ...]


def change_item(c: Change) -> Item:
    return Item(
        c.summary, sub=tuple(c.fact_lines()), strong=c.cell.name + ":", tone=BAD if c.direction == "worse" else GOOD
    )


def _answer(h: History, fail_pct: float | None) -> list[Block]:
    changes = h.changes()
    runs = sum(len(g.runs) for g in h.groups)
    series = h.series()
    judged = sum(1 for s in series if not s.too_short)
    blocks: list[Block] = [
        Para(
            f"{runs} run(s) of study {h.study} in {len(h.groups)} host class(es); {len(series)} series "
            f"(primary cells), {judged} long enough to judge; {h.m} candidate step(s) tested together "
            f"(Benjamini-Hochberg, false discoveries <= {ALPHA * 100:g}%), {len(changes)} confirmed"
            + (f", intervals at {fmt_level(h.level)}." if changes else ".")
        )
    ]
    if changes:
        blocks.append(Items(tuple(change_item(c) for c in changes)))
    elif judged:
        blocks.append(Para("No change point: every series judged is level within its runs' noise.", DIM))
    else:
        blocks.append(Para("No series is long enough to judge yet (see 'Too short to judge').", DIM))
    if fail_pct is not None:
        failing = h.gate(fail_pct)
        newest = h.newest
        if failing:
            assert newest is not None  # the gate judges the newest run
            blocks.append(
                Items(
                    tuple(
                        Item(
                            f"worse by {c.worse_pct:.1f}% (> {fail_pct:g}%) {c.where}",
                            sub=tuple(c.fact_lines()),
                            strong=c.cell.name + ":",
                            tone=BAD,
                        )
                        for c in failing
                    ),
                    heading=f"Gate: the newest run ({newest.run_id}) sits after a step for the worse "
                    f"beyond {fail_pct:g}%",
                    tone=BAD,
                )
            )
        else:
            blocks.append(
                Para(
                    f"Gate: no series of the newest run ({newest.run_id if newest else DASH}) sits "
                    f"after a step for the worse beyond {fail_pct:g}%.",
                    GOOD,
                )
            )
    return blocks


def _grid(group: Group, series: list[Series]) -> Grid:
    """Runs down, environments across: each run's change vs the baseline
    with its interval, as in that run's Table I."""
    envs = list(dict.fromkeys(s.cell.env for s in series))
    by_env = {s.cell.env: {p.run_id: p for p in s.points} for s in series}
    starts = {env: {c.after[0].run_id: c for c in s.changes} for env, s in ((s.cell.env, s) for s in series)}
    edited = {run_id for run_id, _, _ in group.edits}
    rows, tones = [], []
    for run in group.runs:
        if not any(run.run_id in by_env[e] for e in envs):
            continue
        cells = [run.run_id, run.started_at[:16].replace("T", " "), EDIT_MARK if run.run_id in edited else ""]
        row_tones = ["", "", WARN if run.run_id in edited else ""]
        for env in envs:
            p = by_env[env].get(run.run_id)
            c = starts[env].get(run.run_id)
            cells.append(DASH if p is None else p.text + (f" {STEP_MARK}" if c else ""))
            row_tones.append("" if c is None else (BAD if c.direction == "worse" else GOOD))
        rows.append(tuple(cells))
        tones.append(tuple(row_tones))
    base = series[0].cell.baseline
    return Grid(
        ("run", "started", "study file", *[f"{e} vs {base}" for e in envs]),
        tuple(rows),
        numeric_from=3,
        tones=tuple(tones),
    )


def _group_blocks(i: int, g: Group, figures: bool) -> list[Block]:
    first, last = g.runs[0].started_at[:10], g.runs[-1].started_at[:10]
    blocks: list[Block] = [Para(f"{len(g.runs)} run(s) from {first} to {last}.")]
    if g.edits:
        blocks.append(
            Items(
                tuple(Item(f"study hash {a} -> {b}", strong=f"run {run_id}:") for run_id, a, b in g.edits),
                heading="Study file edited (the series go on; the hash is a fact at each step)",
            )
        )
    by_workload: dict[str, list[Series]] = {}
    for s in g.series:
        by_workload.setdefault(s.cell.workload, []).append(s)
    for workload, series in by_workload.items():
        if figures:
            # here: report.figures loads matplotlib, which only HTML draws with
            from isobench.report.figures.history import history_figure

            fig = history_figure(f"{workload}: change vs baseline per run\n{g.host.label}", series)
            if fig is not None:
                blocks.append(
                    Figure(
                        f"history-{i}-{workload}",
                        f"{workload} over runs",
                        "each environment's change vs the baseline per run with its interval "
                        "(as in that run's Table I); dashed lines: confirmed steps",
                        fig,
                        group=workload,
                    )
                )
        by_metric: dict[str, list[Series]] = {}
        for s in series:
            by_metric.setdefault(s.cell.metric_label, []).append(s)
        for label, members in by_metric.items():
            blocks.append(Para(f"{workload} {label}", ""))
            blocks.append(_grid(g, members))
    short: dict[str, list[str]] = {}  # one line per shortfall: a new study has dozens of cells
    for s in g.series:
        if s.too_short:
            short.setdefault(s.shortfall, []).append(s.cell.name)
    if short:
        blocks.append(
            Items(
                tuple(Item(", ".join(names), strong=f"{why}:") for why, names in short.items()),
                heading="Too short to judge",
                tone=DIM,
            )
        )
    return blocks


def explained_items(h: History, explains: list[RunData]) -> list[Item]:
    """Each run of the history that an explain run took apart: the explain
    run, its environment and its answer lines (results/explain.py). Explain
    runs are runs of their own study (explain-ENV), never a point of this one's series."""
    out = []
    for g in h.groups:
        for run in g.runs:
            for e in explaining(run, explains):
                ex = explained_of(e)
                assert ex is not None  # explaining() keeps explain runs only
                said = f"explained by run {e.run_id} ({ex.env} against {ex.baseline})"
                out.append(Item(said, answer_lines(e), f"run {run.run_id}:"))
    return out


def legend() -> list[str]:
    return [
        "Each cell: the run's change of the environment vs the baseline with its interval, exactly as in that "
        "run's Table I (`isobench report RUN`).",
        f"{STEP_MARK}: first run after a confirmed step; red worse, green better ({HIGHER} higher is better: a "
        f"negative change is worse; {LOWER} lower is better: a positive change is worse).",
        "A series is one primary cell over the runs of one host class (study, CPU model, cores, memory; "
        "with --by-host also the host name); an edit of the study file stays in its series and is shown "
        "where it happened.",
        "Steps: candidates by PELT (ruptures) weighted by each run's interval, each confirmed by a weighted "
        "test of the runs on either side, corrected over every candidate (docs/history.md).",
    ]


def history_page(
    h: History, fail_pct: float | None = None, figures: bool = False, explains: list[RunData] | None = None
) -> Page:
    """``explains``: the store's explain runs; those of this history's runs get a section."""
    sections = [PageSection("changes", "Change points", tuple(_answer(h, fail_pct)))]
    for i, g in enumerate(h.groups, 1):
        sections.append(
            PageSection(f"group-{i}", f"Host class {i}: {g.host.label}", tuple(_group_blocks(i, g, figures)))
        )
    explained = explained_items(h, explains or [])
    if explained:
        said = Para(EXPLAINED_NOTE, DIM)
        sections.append(PageSection("explained", "Explained runs", (said, Items(tuple(explained)))))
    if h.left_out:
        sections.append(PageSection("left-out", "Left out", (Items(tuple(Item(x) for x in h.left_out)),)))
    sections.append(PageSection("legend", "How to read it", (Items(tuple(Item(x) for x in legend()), tone=DIM),)))
    newest = h.newest
    return Page(
        f"History of {h.study}",
        f"{sum(len(g.runs) for g in h.groups)} run(s)" + (f", newest {newest.run_id}" if newest else ""),
        tuple(sections),
    )
