"""One self-contained HTML file per report: inline CSS, figures as inline
SVG, no script and nothing fetched (a Content-Security-Policy says so), so it
opens from a file, offline, years later."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from isobench.report.attribution import section_lines as attribution_lines
from isobench.report import compare_render as cmp
from isobench.report.figures import KIND_ORDER, KIND_TITLES, FigureSpec, build_figures, to_svg
from isobench.results.model import RunData
from isobench.results.table import (
    EMULATED_NOTE,
    build_table,
    Cell,
    fmt_fact,
    fmt_num,
    host_facts,
    inconclusive_lines,
    is_emulated,
    run_facts,
    Table,
    tone,
)


def _version() -> str:
    try:
        return version("isobench")
    except PackageNotFoundError:
        return "dev"


_env = Environment(loader=PackageLoader("isobench.report", "templates"),
                   autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)


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
        body = re.sub(rf'url\(#({alt})\)', lambda m: f"url(#{prefix}-{m[1]})", body)
        body = re.sub(rf'href="#({alt})"', lambda m: f'href="#{prefix}-{m[1]}"', body)
    body = body.replace("<svg ", f'<svg role="img" aria-labelledby="{prefix}-title" ', 1)
    return Markup(body)  # noqa: S704 - matplotlib escapes every text it writes


@dataclass(frozen=True)
class _ShownFigure:
    slug: str
    title: str
    caption: str
    svg: Markup


_CAPTIONS = {
    "attribution": "stacked: host CPU µs per unit of work by category, client host's share removed; "
                   "QEMU's threads taken out of user/system (docs/attribution.md)",
    "normalised": "bars: candidate vs baseline on a log axis, >1 is better for every metric (latency-like "
                  "metrics inverted), whiskers: the table's corrected interval (an arrow where it runs off "
                  "the axis), * changed after Benjamini-Hochberg correction",
    "sweep": "mean and 95% CI at each swept value",
    "throughput-latency": "each point one swept value, mean and 95% CI on both axes",
    "latency-cdf": "histograms of every repetition pooled",
    "cpu-cost": "mean and 95% CI per direction; * differs significantly from the baseline",
    "throughput-cpu": "each point one swept value, mean and 95% CI on both axes",
    "startup": "start request to ready; mean and 95% CI",
    "scale-out": "aggregate throughput through the proxy and its ratio to the fewest instances; dotted: linear",
    "per-instance": "each instance's own mean (95% CI): spread between the lines is unfairness",
    "fairness": "Jain's index (1 = every instance served alike) and slowest/fastest instance",
    "density": "one reading per run, as the environment's instances start one by one, page cache dropped",
}


def figure_groups(specs: list[FigureSpec]) -> list[tuple[str, str, list[_ShownFigure]]]:
    out = []
    for kind in KIND_ORDER:
        shown = []
        for s in specs:
            if s.kind != kind:
                continue
            svg = inline_svg(to_svg(s.figure), f"fig-{s.slug}")
            svg = Markup(svg.replace(">", f'><title id="fig-{s.slug}-title">{Markup.escape(s.title)}</title>', 1))
            shown.append(_ShownFigure(s.slug, s.title, _CAPTIONS.get(kind, ""), svg))
        if shown:
            out.append((kind, KIND_TITLES[kind], shown))
    return out


@dataclass(frozen=True)
class _EnvRow:
    name: str
    is_baseline: bool
    emulated: bool
    kind: str
    options: list[tuple[str, str]]
    tools: list[tuple[str, str]]
    other: list[tuple[str, str]]


def env_rows(run: RunData, table: Table) -> list[_EnvRow]:
    rows = []
    for col in table.columns:
        facts = dict(run.env_facts.get(col.env) or {})
        kind = fmt_fact(facts.pop("kind", None))
        options = facts.pop("options", None) or {}
        tools = facts.pop("tool_versions", None) or {}
        as_pairs = (lambda d: [(str(k), fmt_fact(v)) for k, v in sorted(d.items())]
                    if isinstance(d, dict) else [("", fmt_fact(d))])
        rows.append(_EnvRow(col.env, col.is_baseline, is_emulated(run, col.env), kind,
                            as_pairs(options), as_pairs(tools), as_pairs(facts)))
    return rows


def render_html(run: RunData, extras: dict | None = None, specs: list[FigureSpec] | None = None,
                table: Table | None = None) -> str:
    """The run's report. ``extras`` is ``Store.extras(run_id)`` (latency
    histograms); ``specs``/``table`` may be passed when already built."""
    table = table or build_table(run)
    specs = build_figures(table, extras, run.env_facts) if specs is None else specs
    notes = []
    if run.status != "complete":
        notes.append(f"This run is {run.status}: the figures use the samples measured so far.")
    return _env.get_template("report.html.j2").render(
        run=run, table=table, figure_groups=figure_groups(specs), run_facts=run_facts(run),
        host_facts=host_facts(run), env_rows=env_rows(run, table), emulated_note=EMULATED_NOTE,
        cell_class=cell_class, notes=notes, inconclusive=inconclusive_lines(table), version=_version(),
        attribution=attribution_lines(run))


def render_compare_html(result, regressions=None, fail_pct: float | None = None) -> str:
    """``isobench compare`` as a page (result: compare.RunComparison)."""
    return _env.get_template("compare.html.j2").render(
        r=result, regressions=regressions or [], fail_pct=fail_pct, legend=cmp.legend(result),
        status=cmp.status_text, version=_version(), fmt_num=fmt_num, fmt_p=cmp.fmt_p,
        interval=cmp.interval_text, regression_line=cmp.regression_line, emulated_note=EMULATED_NOTE)
