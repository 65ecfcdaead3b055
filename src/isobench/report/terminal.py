"""Table I in the terminal, with the host's facts above and failures below."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from isobench.report.attribution import section_lines as attribution_lines
from isobench.results.model import RunData
from isobench.report.netpairs import section_lines
from isobench.results.table import (
    build_table,
    Cell,
    doctor_warnings,
    host_facts,
    inconclusive_lines,
    run_facts,
    Table,
    tone,
)

# Long facts (package lists, JSON) are cut here; the store keeps them whole.
MAX_FACT_CHARS = 100


def _clip(text: str, limit: int = MAX_FACT_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _facts_grid(run: RunData) -> RichTable:
    grid = RichTable.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for label, value in run_facts(run)[:4]:  # study, hash, run, status
        grid.add_row(label, Text(value))
    times = dict(run_facts(run))
    grid.add_row("Time", Text(f"{times['Started']} \u2192 {times['Finished']}"))
    for label, value in host_facts(run):
        grid.add_row(label, Text(_clip(value)))
    return grid


def _cell_style(cell: Cell) -> str:
    return {"failed": "red", "missing": "dim", "worse": "red", "better": "green"}.get(tone(cell), "")


def _results_table(table: Table) -> RichTable:
    rt = RichTable(title=table.title, box=box.SIMPLE_HEAVY, show_lines=False)
    rt.add_column("workload", style="bold")
    rt.add_column("metric")
    for col in table.columns:
        rt.add_column(Text(col.header), justify="right")
    for i, (workload, rows) in enumerate(table.groups()):
        if i:
            rt.add_section()
        for j, row in enumerate(rows):
            cells = [Text(c.text, style=_cell_style(c)) for c in row.cells]
            rt.add_row(Text(workload if j == 0 else ""), Text(row.label), *cells)
    return rt


def render_terminal(run: RunData, console: Console) -> None:
    table = build_table(run)
    console.print(_facts_grid(run))
    for warning in doctor_warnings(run):
        console.print(Text(f"doctor: {warning}", style="yellow"))
    console.print()
    console.print(_results_table(table))
    for note in table.footnotes:
        console.print(Text(note))
    for line in table.legend:
        console.print(Text(line, style="dim"))
    _section(console, "Warnings", table.warnings, "yellow")
    _section(console, "Inconclusive", inconclusive_lines(table), "")
    for i, line in enumerate(section_lines(run)):  # docker-nat vs docker-host, compared directly
        console.print(Text(("\n" if i == 0 else "" if i == 1 else "  ") + line,
                           style="bold" if i == 0 else "dim" if i == 1 else ""))
    for i, line in enumerate(attribution_lines(run)):  # where the overhead comes from (counters)
        console.print(Text(("\n" if i == 0 else "") + line,
                           style="bold" if i == 0 else "dim" if i == 1 else ""))
    if table.failures:
        console.print()
        console.print(Text("Failures", style="bold red"))
        for f in table.failures:
            reasons = "; ".join(r if k == 1 else f"{r} (\u00d7{k})" for r, k in f.reasons)
            console.print(Text(f"  {f.workload}/{f.case} on {f.env}: {f.count} failed: {reasons}"))


def _section(console: Console, title: str, lines, style: str) -> None:
    if not lines:
        return
    console.print()
    console.print(Text(title, style="bold"))
    for line in lines:
        console.print(Text(f"  {line}", style=style))
