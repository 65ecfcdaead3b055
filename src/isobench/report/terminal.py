"""The run's report in the terminal: the registered sections (report/sections/)
that the terminal shows, the answer last so that it is what stays on screen."""

from __future__ import annotations

import json
import math

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text as RichText

from isobench.core import sink
from isobench.report.blocks import BAD, DIM, GOOD, NOTE, WARN, Code, Facts, Figure, Grid, Items, Para, Records, Results
from isobench.report.fit import fitted, natural_width
from isobench.report.section import TERMINAL, ReportContext
from isobench.report.sections import sections_for
from isobench.results.analysis import interval_text
from isobench.results.model import RunData
from isobench.results.numbers import fmt_num, fmt_pct
from isobench.results.table import Cell, Table, cell_marks, centre_text, tone

# A long JSON fact (a table, a list) is cut here, between its members; the store keeps it whole.
MAX_FACT_CHARS = 200
STYLES = {BAD: "red", GOOD: "green", WARN: "yellow", DIM: "dim", NOTE: "italic"}


# the one terminal sink for a report's text (core/sink.py)
plain = sink.rich_text


def _clip(text: str, limit: int = MAX_FACT_CHARS) -> str:
    """A fact as the terminal shows it, never cut inside a value (issue 55:
    the host-noise sentence was cut after "13 pairs in 40 s", the schedule
    fact between a key and its value): a sentence whole, to wrap at its
    spaces; a JSON fact (a table, a list) with a space after each member, so
    it wraps between them, and past ``limit`` characters its first whole
    members and "…" (the store keeps it whole)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if not isinstance(value, (dict, list)):
        return text
    if isinstance(value, dict):
        items = [f"{json.dumps(k)}: {_spaced(v)}" for k, v in value.items()]
    else:
        items = [_spaced(v) for v in value]
    kept: list[str] = []
    for item in items:
        if kept and sum(len(k) + 2 for k in kept) + len(item) > limit:
            break
        kept.append(item)
    ends = "{}" if isinstance(value, dict) else "[]"
    return ends[0] + ", ".join(kept) + (", \u2026" if len(kept) < len(items) else "") + ends[1]


def _spaced(value: object) -> str:
    return json.dumps(value, separators=(", ", ": "), sort_keys=True, default=str)


def short_text(cell: Cell, show_n: bool = False) -> str:
    """The cell in a terminal's width: ``13.36 +1.5% [−5.6, +9.1] ?`` (centre,
    change with its interval in percent, n when the column's varies, marks);
    the same numbers as ``cell_text`` less the sd and medians, which the
    Markdown and HTML reports keep."""
    if cell.summary is None:
        return cell.text
    parts = [centre_text(cell.centre, cell.reference) if math.isfinite(cell.centre) else fmt_num(cell.summary.mean)]
    if cell.verdict is not None:
        point = fmt_pct(cell.verdict.pct)
        parts.append(point + interval_text(cell.verdict)[len(point) :].replace("%", ""))
    if show_n:
        parts.append(f"n={cell.summary.n}")
    marks = cell_marks(cell.verdict, cell.failures, bool(cell.warnings))
    return " ".join(parts + ([marks] if marks else []))


def _cell_style(cell: Cell) -> str:
    return {"failed": "red", "missing": "dim", "worse": "red", "better": "green"}.get(tone(cell), "")


def _results_table(table: Table, columns: list[int], title: str) -> RichTable:
    rt = RichTable(title=title, box=box.SIMPLE_HEAVY, show_lines=False)
    rt.add_column("workload", style="bold")
    rt.add_column("metric")
    for i in columns:
        rt.add_column(plain(table.columns[i].header), justify="right")
    for k, (workload, rows) in enumerate(table.groups()):
        if k:
            rt.add_section()
        for j, row in enumerate(rows):
            cells = [
                plain(short_text(row.cells[i], table.columns[i].n is None), style=_cell_style(row.cells[i]))
                for i in columns
            ]
            rt.add_row(plain(workload if j == 0 else ""), plain(row.label), *cells)
    return rt


def results_tables(table: Table, console: Console) -> list[RichTable]:
    """Table I in the console's width without wrapping a cell: short cells,
    and beside the baseline as many environments as fit; the others follow
    in further panels of the same rows."""
    base = [i for i, c in enumerate(table.columns) if c.is_baseline]
    panels: list[list[int]] = [[]]
    for i, col in enumerate(table.columns):
        if col.is_baseline:
            continue
        trial = _results_table(table, base + panels[-1] + [i], table.title)
        if panels[-1] and natural_width(console, trial) > console.width:
            panels.append([])
        panels[-1].append(i)
    if any(natural_width(console, _results_table(table, base + cols, "")) > console.width for cols in panels):
        # a panel of one environment is still too wide: every environment stacked under each row at once
        # (report.fit), never a cell cut or wrapped
        return [_results_table(table, list(range(len(table.columns))), table.title)]
    return [
        _results_table(table, base + cols, table.title if k == 0 else f"{table.title} (continued)")
        for k, cols in enumerate(panels)
    ]


def _grid(block: Grid) -> RichTable:
    rt = RichTable(box=box.SIMPLE, show_edge=False, pad_edge=False)
    for i, h in enumerate(block.header):
        rt.add_column(plain(h), justify="right" if i >= block.numeric_from else "left")
    for k, row in enumerate(block.rows):
        tones = block.tones[k] if k < len(block.tones) else ()
        rt.add_row(*(plain(c, style=STYLES.get(tones[i] if i < len(tones) else "", "")) for i, c in enumerate(row)))
    return rt


def _facts(block: Facts) -> RichTable:
    grid = RichTable.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")  # a word wider than the column breaks, never "…"
    for label, value in block.pairs:
        grid.add_row(plain(label), plain(_clip(value)))
    return grid


def draw(console: Console, block) -> None:
    if isinstance(block, Results):
        for rt in results_tables(block.table, console):
            console.print(fitted(console, rt))
    elif isinstance(block, Para):
        console.print(plain(block.text, style=STYLES.get(block.tone, "")))
    elif isinstance(block, Items):
        if block.heading:
            console.print(plain(block.heading, style="bold"))
        for item in block.items:  # wrapped under its own indent
            line = RichText()
            if item.strong:
                line.append(sink.terminal(item.strong) + " ", style="bold")
            line.append(sink.terminal(item.text), style=STYLES.get(item.tone or block.tone, ""))
            console.print(Padding(line, (0, 0, 0, 2), expand=False))
            for sub in item.sub:
                console.print(Padding(plain(sub, style=STYLES.get(block.tone, "")), (0, 0, 0, 4), expand=False))
    elif isinstance(block, Grid):
        console.print(fitted(console, _grid(block)))
    elif isinstance(block, Facts):
        console.print(_facts(block))
    elif isinstance(block, Code):
        console.print(plain(block.text.rstrip("\n")))
    elif isinstance(block, Records):
        for r in block.records:
            console.print(plain(r.name + (f" ({r.note})" if r.note else ""), style="bold"))
            for title, group, empty in zip(block.header[1:], r.groups, block.empty):
                console.print(plain(f"  {title}: " + (", ".join(f"{k}={v}" if k else v for k, v in group) or empty)))
    elif isinstance(block, Figure):
        if block.alt:
            console.print(plain(block.alt, style="dim"))
    else:
        raise TypeError(f"no terminal drawing for {type(block).__name__}")


def render_terminal(
    run: RunData, console: Console, show_all: bool = False, explained_by: tuple[RunData, ...] = ()
) -> None:
    """The report; a folded section (Section.fold) is one line unless
    ``show_all``. ``explained_by``: the run's explain runs (ReportContext)."""
    ctx = ReportContext(run, explained_by=explained_by)
    for i, (section, blocks) in enumerate(sections_for(ctx, TERMINAL)):
        if i:
            console.print()
        if not any(isinstance(b, Results) for b in blocks):  # Table I carries its own title
            console.print(plain(section.heading(ctx), style="bold underline"))
        fold = "" if show_all else section.fold(ctx, blocks)
        if fold:
            console.print(plain(f"{fold}: `isobench report {run.run_id} --all` shows them", style="dim"))
            continue
        for block in blocks:
            draw(console, block)
