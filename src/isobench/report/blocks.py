"""What a report section is made of: a few kinds of content as plain data.

A section (report/sections/) returns blocks; each renderer (terminal,
Markdown, HTML) knows how to draw every kind of block and nothing about the
sections. Text in a block is the user's or the run's, unescaped: escaping is
the renderer's job, for its format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from isobench.results.table import Table

if TYPE_CHECKING:  # matplotlib loads only where a figure is drawn
    import matplotlib.figure

# tones a renderer may colour or style; "" is plain
PLAIN, NOTE, WARN, BAD, GOOD, DIM = "", "note", "warn", "bad", "good", "dim"


@dataclass(frozen=True)
class Para:
    text: str
    tone: str = PLAIN


@dataclass(frozen=True)
class Item:
    text: str
    sub: tuple[str, ...] = ()  # lines nested under it
    strong: str = ""  # a lead-in drawn bold before the text ("docker-nat:")
    tone: str = PLAIN


@dataclass(frozen=True)
class Items:
    items: tuple[Item, ...]
    heading: str = ""  # a small heading over the list
    tone: str = PLAIN


@dataclass(frozen=True)
class Grid:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric_from: int = 2  # columns from this one on are right-aligned
    tones: tuple[tuple[str, ...], ...] = ()  # per row and cell, when some cells are coloured


@dataclass(frozen=True)
class Facts:
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Code:
    text: str
    lang: str = ""


@dataclass(frozen=True)
class Results:
    """Table I itself: the renderers draw its cells with their verdict tones."""

    table: Table


@dataclass(frozen=True)
class Figure:
    """A figure for formats that can hold one (HTML); ``alt`` is what the
    others print instead, if anything."""

    slug: str
    title: str
    caption: str
    figure: matplotlib.figure.Figure
    alt: str = ""
    group: str = ""  # figures of one kind share a group heading


@dataclass(frozen=True)
class Record:
    name: str
    note: str  # drawn beside the name ("baseline", the emulation badge)
    groups: tuple[tuple[tuple[str, str], ...], ...]  # per header column after the first: (key, value) pairs
    tone: str = PLAIN


@dataclass(frozen=True)
class Records:
    """One record per thing (an environment), each with groups of facts:
    a table in HTML, a nested list in Markdown."""

    header: tuple[str, ...]  # the name column, then one per group
    records: tuple[Record, ...]
    empty: tuple[str, ...] = ()  # per group: what an empty group reads as


Block = Para | Items | Grid | Facts | Code | Results | Figure | Records
