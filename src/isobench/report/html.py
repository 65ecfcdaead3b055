"""One self-contained HTML file per report: inline CSS, figures as inline
SVG, no script and nothing fetched (a Content-Security-Policy says so), so it
opens from a file, offline, years later."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from isobench.core import sink
from isobench.report import compare_render as cmp
from isobench.report.blocks import Code, Facts, Figure, Grid, Items, Para, Records, Results
from isobench.report.figures import FigureSpec, to_svg
from isobench.report.section import HTML, ReportContext
from isobench.report.sections import sections_for
from isobench.results.model import RunData
from isobench.results.table import EMULATED_NOTE, Cell, Table, tone


def _version() -> str:
    try:
        return version("isobench")
    except PackageNotFoundError:
        return "dev"


def _visible(value):
    """Every {{ value }} before autoescape: a string's control characters
    written as escapes, newlines kept (core/sink.py: the file may be read
    with cat, and XML has no ESC). Markup (inline SVG) is isobench's own."""
    return sink.lines(value) if isinstance(value, str) and not isinstance(value, Markup) else value


_env = Environment(
    loader=PackageLoader("isobench.report", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_visible,
)


def cell_class(cell: Cell) -> str:
    return {"failed": "failed", "missing": "missing", "worse": "worse sig", "better": "better sig"}.get(tone(cell), "")


# -- inline SVG -----------------------------------------------------------------------

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_ID = re.compile(r'\bid="([^"]+)"')


def inline_svg(svg: str, prefix: str) -> Markup:
    """matplotlib's SVG made fit for inlining: no XML prolog or DOCTYPE, and
    every id (clip paths, markers) prefixed so that several figures in one
    page cannot capture each other's references."""
    body = _PROLOG.sub("", svg, count=1)
    ids = set(_ID.findall(body))
    if ids:
        alt = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
        body = re.sub(rf'\bid="({alt})"', lambda m: f'id="{prefix}-{m[1]}"', body)
        body = re.sub(rf"url\(#({alt})\)", lambda m: f"url(#{prefix}-{m[1]})", body)
        body = re.sub(rf'href="#({alt})"', lambda m: f'href="#{prefix}-{m[1]}"', body)
    body = body.replace("<svg ", f'<svg role="img" aria-labelledby="{prefix}-title" ', 1)
    return Markup(body)  # noqa: S704 - matplotlib escapes every text it writes


_KINDS = {
    Results: "table",
    Para: "para",
    Items: "items",
    Grid: "grid",
    Facts: "facts",
    Code: "code",
    Records: "records",
    Figure: "figure",
}


def _kind_of(block) -> str:
    try:
        return _KINDS[type(block)]
    except KeyError:
        raise TypeError(f"no HTML for {type(block).__name__}") from None


def _svg(block: Figure) -> Markup:
    slug = f"fig-{block.slug}"
    svg = inline_svg(to_svg(block.figure), slug)
    return Markup(svg.replace(">", f'><title id="{slug}-title">{Markup.escape(block.title)}</title>', 1))


def render_html(
    run: RunData,
    extras: dict | None = None,
    specs: list[FigureSpec] | None = None,
    table: Table | None = None,
    explained_by: tuple[RunData, ...] = (),
) -> str:
    """The run's report: the registered sections (report/sections/), the
    answer first. ``extras`` is ``Store.extras(run_id)`` (latency
    histograms); ``specs``/``table`` may be passed when already built;
    ``explained_by``: the run's explain runs (ReportContext)."""
    ctx = ReportContext(run, table=table, extras=extras, specs=specs, wants_figures=True, explained_by=explained_by)
    notes = []
    if run.status != "complete":
        notes.append(f"This run is {run.status}: the figures use the samples measured so far.")
    shown = [
        (section, section.heading(ctx), blocks, section.fold(ctx, blocks))
        for section, blocks in sections_for(ctx, HTML)
    ]
    return _env.get_template("report.html.j2").render(
        run=run,
        table=ctx.table,
        sections=shown,
        notes=notes,
        emulated_note=EMULATED_NOTE,
        cell_class=cell_class,
        kind_of=_kind_of,
        svg=_svg,
        version=_version(),
    )


def render_page(template: str, **context) -> str:
    """Another page made of report blocks (history): TEMPLATE imports the
    block macros with the helpers they call."""
    return _env.get_template(template).render(
        kind_of=_kind_of, svg=_svg, cell_class=cell_class, emulated_note=EMULATED_NOTE, version=_version(), **context
    )


def render_compare_html(result, regressions=None, fail_pct: float | None = None) -> str:
    """``isobench compare`` as a page (result: compare.RunComparison)."""
    return _env.get_template("compare.html.j2").render(
        r=result,
        regressions=regressions or [],
        fail_pct=fail_pct,
        legend=cmp.legend(result),
        header=cmp.header(result),
        sides=cmp.sides,
        status=cmp.status_text,
        version=_version(),
        fmt_p=cmp.fmt_p,
        interval=cmp.interval_text,
        regression_line=cmp.regression_line,
        label=cmp.metric_label,
        emulated_note=EMULATED_NOTE,
    )
