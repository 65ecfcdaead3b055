"""Figures as files: SVG (text stays text) and PNG, byte-identical for the
same run."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

from isobench.core import sink
from isobench.report.figures.catalog import FigureSpec

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# Text stays text in SVG (searchable, selectable, small); dates and hash salts
# fixed so the same run gives byte-identical files.
SVG_RC: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "isobench"}
# Text in a figure is taken literally: "$...$" in a metric or case name is
# not mathtext (it would fail to parse, or draw as something else). The
# flag is read when a Text is made: for those made so far, and for the tick
# labels made while drawing, every figure is saved through these two.
LITERAL_RC: dict[RcKeyType, Any] = {"text.parse_math": False}


def _literal(fig: Figure) -> None:
    for text in fig.findobj(Text):
        text.set_parse_math(False)
        shown = text.get_text()
        if not shown.replace("\n", "").isprintable():  # a control character: drawn as its escape (core/sink.py)
            text.set_text(sink.lines(shown))


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    _literal(fig)
    with matplotlib.rc_context({**SVG_RC, **LITERAL_RC}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def to_png(fig: Figure, dpi: int = 150) -> bytes:
    buf = io.BytesIO()
    _literal(fig)
    with matplotlib.rc_context(LITERAL_RC):
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
