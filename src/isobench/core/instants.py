"""Times as stored: a run's start and finish are UTC instants in one fixed
form (``2026-05-01T10:00:00+0000``), so that text order is time order in
SQL and in Python. A time from another zone (a fleet host abroad) is
converted on import and on opening an older store; a text that is no time
is refused at import."""

from __future__ import annotations

from datetime import UTC, datetime

FORMAT = "%Y-%m-%dT%H:%M:%S+0000"
# SQL: the stored form
CANONICAL_GLOB = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]+0000"


def order_by(column: str, desc: bool = False) -> str:
    """SQL ORDER BY terms for COLUMN in time order; a text that is no time
    sorts as the oldest (never "the latest")."""
    way = " DESC" if desc else ""
    return f"({column} GLOB '{CANONICAL_GLOB}'){way}, {column}{way}"


def now_utc() -> str:
    return datetime.now(UTC).strftime(FORMAT)


def utc(text: object) -> str:
    """TEXT (ISO 8601 with a UTC offset) as the stored UTC form; ValueError
    when it is not a time or has no offset (its instant would be a guess)."""
    if not isinstance(text, str) or len(text) > 40:
        raise ValueError("not an ISO 8601 time")
    t = datetime.fromisoformat(text)
    if t.tzinfo is None:
        raise ValueError("no UTC offset")
    return t.astimezone(UTC).strftime(FORMAT)
