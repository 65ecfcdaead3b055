"""A terminal table in the console's width without cutting a value: drawn as
it is when every cell fits on one line, else stacked, one block per row (its
left-aligned cells as the heading, each other column as "header: value"), so
that a number, an interval, a verdict or a run id is never cut by an ellipsis
or split over two lines of a narrow column (docs/output.md#width)."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table as RichTable
from rich.text import Text

INDENT = 2


def natural_width(console: Console, rt: RichTable) -> int:
    """The width the table takes without wrapping a cell (rich clamps a
    measurement to the width it is given, so give it room)."""
    return console.measure(rt, options=console.options.update_width(10_000)).maximum


def fitted(console: Console, rt: RichTable) -> RenderableType:
    """``rt`` when it fits unwrapped, else its rows stacked (``stacked``)."""
    return rt if natural_width(console, rt) <= console.width else stacked(rt)


def _text(cell: RenderableType) -> Text:
    return cell if isinstance(cell, Text) else Text(str(cell))


def stacked(rt: RichTable) -> RenderableType:
    """One block per row: the row's left-aligned cells (an empty one repeats
    the row above's, as a grouped table leaves it blank) in bold, then every
    other column as "header: value", wrapped under its own indent."""
    heads = [i for i, c in enumerate(rt.columns) if c.justify in ("left", "default")]
    out: list[RenderableType] = [Text(str(rt.title), style="bold")] if rt.title else []
    last: dict[int, Text] = {}
    for row in range(rt.row_count):
        cells = [_text(c._cells[row]) for c in rt.columns]
        for i in heads:
            if cells[i].plain.strip():
                last[i] = cells[i]
        heading = Text(" ").join(last[i] for i in heads if i in last)
        heading.stylize("bold")
        grid = RichTable.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(overflow="fold")
        for i, col in enumerate(rt.columns):
            if i not in heads and cells[i].plain.strip():
                grid.add_row(Text(_text(col.header).plain.replace("\n", " ") + ":"), cells[i])  # never markup
        out += [heading, Padding(grid, (0, 0, 0, INDENT), expand=False)]
    return Group(*out)
