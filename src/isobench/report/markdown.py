"""The run's report as GitHub-flavoured Markdown: the registered sections
(report/sections/) in order, each block drawn in Markdown."""

from __future__ import annotations

import re

from isobench.core import sink
from isobench.report.blocks import Code, Facts, Figure, Grid, Items, Para, Records, Results
from isobench.report.section import MARKDOWN, ReportContext
from isobench.report.sections import sections_for
from isobench.results.model import RunData
from isobench.results.table import Table

# the one Markdown sink (core/sink.py): every string of a block goes through it
md_escape = sink.markdown


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks inside the text."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def table_md(table: Table) -> list[str]:
    header = ["workload", "metric"] + [c.header for c in table.columns]
    lines = [
        "| " + " | ".join(md_escape(h) for h in header) + " |",
        "|" + "|".join([":---", ":---"] + ["---:"] * len(table.columns)) + "|",
    ]
    for workload, rows in table.groups():
        for j, row in enumerate(rows):
            cells = [md_escape(workload) if j == 0 else "", md_escape(row.label)]
            cells += [md_escape(c.text) for c in row.cells]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _grid(block: Grid) -> list[str]:
    n = len(block.header)
    align = [":---"] * min(block.numeric_from, n) + ["---:"] * (n - min(block.numeric_from, n))
    return [
        "| " + " | ".join(md_escape(h) for h in block.header) + " |",
        "|" + "|".join(align) + "|",
        *("| " + " | ".join(md_escape(c) for c in r) + " |" for r in block.rows),
    ]


def _items(block: Items) -> list[str]:
    out = [md_escape(block.heading) + ":", ""] if block.heading else []
    for item in block.items:
        lead = f"**{md_escape(item.strong)}** " if item.strong else ""
        out.append(f"- {lead}{md_escape(item.text)}".rstrip())
        out += [f"  - {md_escape(s)}" for s in item.sub]
    return out


def _records(block: Records) -> list[str]:
    out = []
    for r in block.records:
        head = f"- **{md_escape(r.name)}**" + (f" ({md_escape(r.note)})" if r.note else "")
        out.append(head)
        for title, group, empty in zip(block.header[1:], r.groups, block.empty):
            text = ", ".join(f"{k}={v}" if k else v for k, v in group) or empty
            out.append(f"  - {md_escape(title)}: {md_escape(text)}")
    return out


def block_md(block) -> list[str]:
    if isinstance(block, Results):
        return table_md(block.table)
    if isinstance(block, Para):
        return [md_escape(block.text)]
    if isinstance(block, Items):
        return _items(block)
    if isinstance(block, Grid):
        return _grid(block)
    if isinstance(block, Facts):
        return [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in block.pairs]
    if isinstance(block, Code):
        text = sink.lines(block.text)
        fence = _fence(text)
        return [f"{fence}{block.lang}", text.rstrip("\n"), fence]
    if isinstance(block, Records):
        return _records(block)
    if isinstance(block, Figure):
        return [md_escape(block.alt)] if block.alt else []
    raise TypeError(f"no Markdown for {type(block).__name__}")


def render_markdown(run: RunData, explained_by: tuple[RunData, ...] = ()) -> str:
    """The report; ``explained_by``: the run's explain runs (ReportContext)."""
    ctx = ReportContext(run, explained_by=explained_by)
    out = [f"# {md_escape(ctx.table.title)}", ""]
    for section, blocks in sections_for(ctx, MARKDOWN):
        out += [f"## {md_escape(section.heading(ctx))}", ""]
        for block in blocks:
            lines = block_md(block)
            if lines:
                out += lines + [""]
    return "\n".join(out)
