"""Figures as files: SVG (text stays text) and PNG, byte-identical for the
same run."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

from isobench.report.figures.catalog import FigureSpec

# Text stays text in SVG (searchable, selectable, small); dates and hash salts
# fixed so the same run gives byte-identical files.
SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "isobench"}


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def to_png(fig: Figure, dpi: int = 150) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def write_figures(specs: list[FigureSpec], directory) -> list[str]:
    """Every figure as SLUG.svg and SLUG.png; returns the paths written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        svg, png = d / f"{spec.slug}.svg", d / f"{spec.slug}.png"
        svg.write_text(to_svg(spec.figure))
        png.write_bytes(to_png(spec.figure))
        written += [str(svg), str(png)]
    return written
