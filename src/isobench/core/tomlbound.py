"""TOML a user or a store hands over (a study file, a run's stored study
text), parsed only after a linear look at its size in keys: tomllib
recurses once per dotted-key level (3,000 levels in 6 KB end in a
RecursionError) and its cost grows with depth times keys (40 KB of deep
dotted keys took 2.5 GB and 30 s). A study needs a few levels and a few
hundred keys."""

from __future__ import annotations

import re
import tomllib

MAX_DEPTH = 16  # segments of one dotted key, or tables and arrays inside each other
MAX_KEYS = 10_000  # "=" signs and table headers
# a dotted key of more than MAX_DEPTH segments (bare or quoted), anywhere
# (possessive, and starting where no bare key goes on: linear in the text)
_SEGMENT = r'(?:[A-Za-z0-9_-]++|"[^"\n]{0,200}+"|\'[^\'\n]{0,200}+\')'
_DEEP_KEY = re.compile(rf"(?<![A-Za-z0-9_-])(?:{_SEGMENT}[ \t]*+\.[ \t]*+){{{MAX_DEPTH}}}{_SEGMENT}")
_DEEP_NEST = re.compile(rf"(?:[\[{{][ \t\n]*){{{MAX_DEPTH + 1}}}")


class TomlBoundError(ValueError):
    """str() says what is too much, without the text."""


def guard(text: str) -> None:
    """TomlBoundError when TEXT has more keys or deeper keys than a study."""
    if text.count("=") + text.count("[") > MAX_KEYS:
        raise TomlBoundError(f"more than {MAX_KEYS:,} keys; a study has a few hundred")
    if _DEEP_KEY.search(text):
        raise TomlBoundError(f"a dotted key of more than {MAX_DEPTH} parts; a study needs a few")
    if _DEEP_NEST.search(text):
        raise TomlBoundError(
            "nested too deeply (arrays or tables inside each other); a study needs at most a few levels"
        )


def loads(text: str) -> dict:
    """tomllib.loads after ``guard``; TomlBoundError for what is too much
    (a RecursionError included), tomllib.TOMLDecodeError for what is not TOML."""
    guard(text)
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise TomlBoundError(
            "nested too deeply (arrays or tables inside each other); a study needs at most a few levels"
        ) from None
