"""A fleet report in the terminal, as Markdown and as one HTML page:
each host's Table I side by side, then the cross-host summary."""

from __future__ import annotations

import math

from markupsafe import escape
from rich import box
from rich.table import Table as RichTable

from isobench.core.sink import rich_text as plain
from isobench.report.fleet import CrossCell, FleetReport
from isobench.results.numbers import fmt_pct


def _pct(x: float) -> str:
    return fmt_pct(x) if math.isfinite(x) else "\u2014"


def _pp(x: float) -> str:
    return f"{x:.1f} pp" if math.isfinite(x) else "\u2014"


def summary_rows(rep: FleetReport) -> list[list[str]]:
    """workload, cell, env, one column per host, spread, outlier."""
    out = []
    for c in rep.cells:
        out.append(
            [
                c.workload,
                c.label,
                c.env + (" (vs fleet median)" if c.is_baseline else ""),
                *[_pct(v.pct) for v in c.values],
                _pp(c.spread_pp),
                c.outlier or "\u2014",
            ]
        )
    return out


def side_by_side_rows(rep: FleetReport) -> list[list[str]]:
    """workload, cell, env, each host's Table I cell text."""
    out = []
    for c in rep.cells:
        out.append([c.workload, c.label, c.env, *[v.text for v in c.values]])
    return out


def render_terminal(rep: FleetReport, console) -> None:
    t = RichTable(
        title=plain(f"Fleet {rep.fleet_id}: Table I per host (change vs that host's baseline)"), box=box.SIMPLE_HEAVY
    )
    for h in ["workload", "metric", "env", *rep.hosts]:
        t.add_column(plain(h), overflow="fold")
    for r in side_by_side_rows(rep):
        t.add_row(*map(plain, r))  # host names and labels are user text: no markup
    console.print(t)
    s = RichTable(title="Cross-host summary: overhead per host, spread and outlier", box=box.SIMPLE_HEAVY)
    for h in ["workload", "metric", "env", *rep.hosts, "spread", "outlier"]:
        s.add_column(plain(h), overflow="fold")
    for r in summary_rows(rep):
        s.add_row(*map(plain, r))
    console.print(s)


def _md(rows: list[list[str]], header: list[str]) -> list[str]:
    cell = lambda x: str(x).replace("|", "\\|")  # noqa: E731
    return [
        "| " + " | ".join(map(cell, header)) + " |",
        "|" + "---|" * len(header),
        *["| " + " | ".join(map(cell, r)) + " |" for r in rows],
    ]


def render_markdown(rep: FleetReport) -> str:
    lines = [
        f"# Fleet {rep.fleet_id}",
        "",
        f"Hosts: {', '.join(rep.hosts)}",
        "",
        "## Table I per host (change vs that host's baseline)",
        "",
    ]
    lines += _md(side_by_side_rows(rep), ["workload", "metric", "env", *rep.hosts])
    lines += ["", "## Cross-host summary", ""]
    lines += _md(summary_rows(rep), ["workload", "metric", "env", *rep.hosts, "spread", "outlier"])
    return "\n".join(lines) + "\n"


def _html_table(rows: list[list[str]], header: list[str]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(rep: FleetReport, svg: str | None) -> str:
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}th{background:#eee}"
    )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Fleet {escape(rep.fleet_id)}</title>"
        f"<style>{style}</style></head><body>",
        f"<h1>Fleet {escape(rep.fleet_id)}</h1><p>{len(rep.hosts)} hosts: {escape(', '.join(rep.hosts))}</p>",
        "<h2>Table I per host (change vs that host's baseline)</h2>",
        _html_table(side_by_side_rows(rep), ["workload", "metric", "env", *rep.hosts]),
        "<h2>Cross-host summary</h2><p>Per host: overhead vs its own baseline (+ = worse); for the baseline, "
        "the host's mean vs the fleet's median. Spread: max - min across hosts; outlier: the host furthest "
        "from the median.</p>",
        _html_table(summary_rows(rep), ["workload", "metric", "env", *rep.hosts, "spread", "outlier"]),
    ]
    if svg:
        from isobench.report.html import inline_svg

        parts += ["<h2>Overhead per environment, one marker per host</h2>", str(inline_svg(svg, "fleet"))]
    return "".join(parts) + "</body></html>\n"


def report_fleet(rep: FleetReport, fmt: str, output: str | None, console) -> str | None:
    """Print or write REP; returns the path written, if any."""
    from pathlib import Path

    if fmt == "html":
        from isobench.report.figures.fleet import fleet_overhead_figure
        from isobench.report.figures.output import to_svg

        fig = fleet_overhead_figure(rep)
        path = Path(output) if output else Path("results") / f"{rep.fleet_id}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(rep, to_svg(fig) if fig is not None else None), encoding="utf-8")
        return str(path)
    if fmt == "md":
        text = render_markdown(rep)
        if output:
            Path(output).write_text(text)
            return output
        console.print(text, markup=False, highlight=False)
        return None
    render_terminal(rep, console)
    return None


__all__ = ["CrossCell", "report_fleet"]
