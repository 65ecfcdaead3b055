"""What the samples of a cell say about themselves: outliers, drift, validity
notes. A note said of many cells (a workload's validity note, the same in
every environment) is said once, with the cells it covers."""

from __future__ import annotations

from isobench.report.blocks import WARN, Item, Items
from isobench.report.section import ReportContext, Section
from isobench.results.table import Table


def grouped_warnings(table: Table) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """Each distinct warning text with the cells it was said of, in order of
    first appearance: [(text, [("workload label", [env, ...]), ...])]."""
    groups: dict[str, dict[str, list[str]]] = {}
    for row in table.rows:
        for cell in row.cells:
            for text in cell.warnings:
                groups.setdefault(text, {}).setdefault(f"{row.key.workload} {row.label}", []).append(cell.env)
    return [(text, list(cells.items())) for text, cells in groups.items()]


def warning_items(table: Table) -> tuple[Item, ...]:
    items = []
    for text, cells in grouped_warnings(table):
        n = sum(len(envs) for _, envs in cells)
        if n == 1:
            ((label, (env,)),) = cells
            items.append(Item(f"{label} on {env}: {text}"))
        else:
            items.append(
                Item(f"{text} ({n} cells)", sub=tuple(f"{label} on {', '.join(envs)}" for label, envs in cells))
            )
    return tuple(items)


class WarningsSection(Section):
    slug = "warnings"
    title = "Warnings"
    order = 20

    def blocks(self, ctx: ReportContext):
        items = warning_items(ctx.table)
        return [Items(items, tone=WARN)] if items else []

    def fold(self, ctx: ReportContext, blocks) -> str:
        cells = sum(len(c.warnings) > 0 for r in ctx.table.rows for c in r.cells)
        said = sum(len(b.items) for b in blocks if isinstance(b, Items))  # one item per distinct warning
        return f"{said} warning(s) on {cells} cell(s)"
