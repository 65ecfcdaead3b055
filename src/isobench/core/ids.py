"""Identifiers that become paths, container names, shell words or SQL
patterns: one closed character set and length each, checked at every
entry (study file, import, --rename, --resume, --run-id, fleet inventory)
and again where an identifier becomes a path (``under``).

``re.fullmatch`` throughout: ``$`` with ``match`` lets a trailing newline
through."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

# study, environment and workload names
NAME_MAX = 31
NAME_RE = re.compile(rf"[a-z][a-z0-9-]{{0,{NAME_MAX - 1}}}")
NAME_RULE = f"lower-case letters, digits and '-', starting with a letter, at most {NAME_MAX} characters"
# run ids: made by isobench (date-time-study-hex) or chosen with --run-id/--rename
RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RUN_ID_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 128 characters"
# fleet inventory host names (they become part of run ids and Ansible --limit)
HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
HOST_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters"


class BadIdentifier(ValueError):
    """str() is the one-line message."""


def shown(value: object, limit: int = 80) -> str:
    """A value as it may be printed in a message: control characters
    escaped, long values cut."""
    if not isinstance(value, str):
        return printable(repr(value))[:limit]
    text = printable(value)
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def printable(text: str) -> str:
    """``text`` with every control character (ESC, OSC, CR, newline ...)
    written as an escape, so user text can neither move the cursor nor
    write the clipboard nor fake a second line."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    code = ord(ch)
    if unicodedata.category(ch) in ("Zs",):
        return ch
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_name(value: object) -> bool:
    return isinstance(value, str) and NAME_RE.fullmatch(value) is not None


def check_name(value: object, what: str) -> str:
    if not is_name(value):
        raise BadIdentifier(f"{what}: bad name {shown(value)}; use {NAME_RULE}")
    return value  # type: ignore[return-value]


def check_run_id(value: object, what: str) -> str:
    if not isinstance(value, str) or RUN_ID_RE.fullmatch(value) is None:
        raise BadIdentifier(f"{what}: bad run id {shown(value)}; a run id is {RUN_ID_RULE}")
    return value


def check_host(value: object, what: str) -> str:
    if not isinstance(value, str) or HOST_RE.fullmatch(value) is None:
        raise BadIdentifier(
            f"{what}: bad host name {shown(value)}; fleet host names are {HOST_RULE} "
            "(set ansible_host to the address and give the host a plain name)"
        )
    return value


def under(root: str | os.PathLike, *parts: str) -> Path:
    """``root/parts...`` (as given, not resolved), refused unless it stays inside ``root`` (no
    absolute part, no '..', no symlink out)."""
    joined = Path(root).joinpath(*parts)
    base, path = Path(root).resolve(), joined.resolve()
    if path != base and base not in path.parents:
        raise BadIdentifier(f"{joined}: leaves {root}; an identifier must not name a path outside it")
    return joined
