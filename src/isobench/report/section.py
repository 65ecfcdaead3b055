"""The report's seam: a section is one module in report/sections/ defining a
Section subclass (title, order, which formats show it, when it applies, and
its content as blocks). Importing report.sections registers every one; the
terminal, Markdown and HTML renderers loop over ``report.sections.sections_for``
and never name a section (as asv's publishers and hyperfine's exporters)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from abc import ABC, abstractmethod
from functools import cached_property
from typing import ClassVar

from isobench.report.blocks import Block
from isobench.results.attribution import Group, Row, build_rows, group_rows, primary_changed_cells
from isobench.results.model import RunData
from isobench.results.table import Table, build_table

TERMINAL, MARKDOWN, HTML = "terminal", "md", "html"
ALL_FORMATS = frozenset({TERMINAL, MARKDOWN, HTML})


class ReportContext:
    """One run as the sections see it; what is costly is built once, on demand."""

    def __init__(
        self,
        run: RunData,
        table: Table | None = None,
        extras: dict | None = None,
        specs: list | None = None,
        wants_figures: bool = False,
        explained_by: tuple[RunData, ...] = (),
    ) -> None:
        self.run = run
        self._table = table
        self.extras = extras or {}
        self._specs = specs
        self.wants_figures = wants_figures  # only formats that draw them pay for matplotlib
        self.fmt = ""  # the format being drawn, set by sections_for
        # the explain runs of the same store that explain this run
        # (results/explain.explaining): the one thing a section reads
        # beyond the run itself; the caller that has the store finds them
        self.explained_by = explained_by

    @cached_property
    def table(self) -> Table:
        return self._table or build_table(self.run)

    @cached_property
    def attribution(self) -> tuple[list[Row], list[Group]]:
        """Every tested counter row and the changed ones' groups (results/attribution.py),
        for the two attribution sections."""
        rows = build_rows(self.run)
        return rows, group_rows(rows, primary_changed_cells(self.run, self.table))

    @cached_property
    def figure_specs(self) -> list:
        """Every figure of the run (report.figures); built only when a
        format that draws figures asks."""
        if self._specs is not None:
            return self._specs
        from isobench.report.figures import build_figures

        return build_figures(self.table, self.extras, self.run.env_facts)


class Section(ABC):
    slug: ClassVar[str]  # the anchor in HTML; unique
    title: ClassVar[str]
    order: ClassVar[int]  # ascending down the page
    formats: ClassVar[frozenset[str]] = ALL_FORMATS
    # the answer: first on a page; last in a terminal, where the end of the
    # output is what stays on the screen
    lead: ClassVar[bool] = False
    # what every number below depends on (the host is a VM): first in every format, before the answer
    head: ClassVar[bool] = False

    def applies(self, ctx: ReportContext) -> bool:
        return True

    def heading(self, ctx: ReportContext) -> str:
        return self.title

    @abstractmethod
    def blocks(self, ctx: ReportContext) -> list[Block]:
        """The content; an empty list drops the section."""

    def fold(self, ctx: ReportContext, blocks: list[Block]) -> str:
        """A long list a reader opens when he wants it: the one line that
        stands for the section folded (HTML <details>, a terminal without
        `report --all`; Markdown shows it whole); "" keeps it open."""
        return ""


SECTIONS: dict[str, Section] = {}


def register(cls: type[Section]) -> type[Section]:
    slug = vars(cls).get("slug")
    if not isinstance(slug, str) or not slug:
        raise TypeError(f'{cls.__module__}.{cls.__qualname__}: a section must set slug = "..."')
    if slug in SECTIONS and type(SECTIONS[slug]) is not cls:
        raise TypeError(f"two report sections with slug {slug!r}")
    SECTIONS[slug] = cls()
    return cls


def discover(path, prefix: str) -> None:
    for info in pkgutil.iter_modules(path, prefix):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Section)
                and obj.__module__ == module.__name__
                and not inspect.isabstract(obj)
            ):
                register(obj)
