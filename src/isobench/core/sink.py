"""One escape per place text goes: every string from a store, a study or a
tool (names, facts, run fields, study text) passes through the function of
the sink it reaches, and nothing else escapes it.

- ``terminal``: control characters written as escapes (no cursor move, no
  clipboard write, no second line); for rich, pass it as ``Text`` or with
  ``markup=False``, or through ``markup`` where it sits inside console markup.
  Progress notes and labels (run/progress.py), warnings (``say``) and
  failures (cli.common.fail) all pass it.
- ``markup``: ``terminal`` plus rich's markup escape (``[/x]``, ``[link=...]``).
- ``lines``: ``terminal`` for a multi-line text (study text): newlines and tabs kept.
- ``markdown``: one line, GFM's emphasis, code, table, link and image syntax,
  entities and tags written literally.
- ``csv_cell``: a leading ``= + - @`` (a spreadsheet formula) made text.
- figures take text literally: ``report.style.literal_text`` turns
  matplotlib's mathtext off (``$...$``) around building and saving them.
HTML is escaped by jinja2's autoescape."""

from __future__ import annotations

import re

from isobench.core.ids import printable


def terminal(text: object) -> str:
    return printable(str(text))


def say(text: object, file=None) -> None:
    """One line on stderr (or ``file``) outside rich: ``terminal`` first."""
    import sys

    print(terminal(text), file=file if file is not None else sys.stderr, flush=True)


def markup(text: object) -> str:
    from rich.markup import escape

    return escape(terminal(text))


def lines(text: str) -> str:
    return "\n".join(printable(line.replace("\t", "    ")) for line in str(text).split("\n"))


def rich_text(text: object, style: str = ""):
    """A rich Text of ``lines(text)``: never read as markup."""
    from rich.text import Text

    return Text(lines(str(text)), style=style)


# Markup GFM acts on: emphasis, code, cell separators, and only where it
# would act (an interval "[1, 2]" stays): "<" opening a tag or autolink, "!["
# of an image, "](" of a link, "&" of an entity. A link definition ("[x]: url")
# needs a line of its own, which no escaped text starts.
_MD_SPECIAL = re.compile(r"([\\`*_|]|<(?=[A-Za-z/!?])|!(?=\[)|\](?=\()|&(?=#?\w+;))")


def markdown(text: object) -> str:
    return _MD_SPECIAL.sub(r"\\\1", terminal(str(text).replace("\n", " ")))


def csv_cell(text: str) -> str:
    """A spreadsheet reads a cell starting with = + - @ (or a tab or CR
    before one) as a formula: a leading quote keeps it text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
