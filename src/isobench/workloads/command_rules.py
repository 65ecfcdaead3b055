"""The rules that read a user's command's output, as the study file gives
them (``OutputMetric``, ``Units``), and their pure readers: GNU time's
verbose block (the timed part's wall, CPU and peak memory), a regular
expression with named groups, a JSON path into stdout. Each reader raises
ParseError naming what it could not read; none runs anything
(workloads/command.py runs the command). A study's regular expressions run
under RE2 (google-re2): time linear in the output, whatever the pattern, so
a stranger's rule cannot hang a run or a reparse; what RE2 cannot run in
linear time (backreferences, lookarounds, possessive quantifiers) is refused
when the study is read."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

import re2
from pydantic import Field, model_validator

from isobench.core.strictmodel import StrictModel
from isobench.workloads.base import ParseError

# `/usr/bin/time -v` opens its block with this line (after "Command exited
# with non-zero status N" or "Command terminated by signal N" when it did).
TIME_BLOCK_START = "\tCommand being timed:"
_TIME_FIELDS = {
    "wall": re.compile(r"^\tElapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)$", re.M),
    "user": re.compile(r"^\tUser time \(seconds\): (\S+)$", re.M),
    "sys": re.compile(r"^\tSystem time \(seconds\): (\S+)$", re.M),
    "rss_kb": re.compile(r"^\tMaximum resident set size \(kbytes\): (\S+)$", re.M),
}
# the filesystem's reads and writes of the timed process and its children
# (getrusage's ru_inblock/ru_oublock), in 512-byte blocks: what a duet's two
# sides would share of the disk (workloads/duetcall.py)
_BLOCK_FIELDS = (
    re.compile(r"^\tFile system inputs: (\d+)$", re.M),
    re.compile(r"^\tFile system outputs: (\d+)$", re.M),
)
BLOCK_BYTES = 512
_ENDED_RE = re.compile(r"^Command (?:exited with non-zero status|terminated by signal) \d+\s*\Z")


def clock_seconds(text: str) -> float:
    """GNU time's elapsed clock, "m:ss.cc" or "h:mm:ss", in seconds."""
    parts = text.split(":")
    if not 2 <= len(parts) <= 3:
        raise ParseError(f"GNU time's elapsed time {text!r} is not h:mm:ss or m:ss")
    try:
        seconds = 0.0
        for part in parts:
            seconds = seconds * 60 + float(part)
    except ValueError:
        raise ParseError(f"GNU time's elapsed time {text!r} is not h:mm:ss or m:ss") from None
    return seconds


def split_time(stderr: str) -> tuple[str, str]:
    """(the command's own stderr, GNU time's block): the block is the last
    one, opened by its "Command being timed" line."""
    at = stderr.rfind(TIME_BLOCK_START)
    if at < 0:
        raise ParseError("no '/usr/bin/time -v' block in stderr (the command did not run under GNU time)")
    own = stderr[:at]
    lines = own.splitlines(keepends=True)
    if lines and _ENDED_RE.match(lines[-1]):
        own = "".join(lines[:-1])
    return own, stderr[at:]


def parse_time_block(block: str) -> dict[str, float]:
    """wall_s, user_s, sys_s and peak_rss_mib from GNU time's verbose block."""
    found = {}
    for key, pattern in _TIME_FIELDS.items():
        m = pattern.search(block)
        if m is None:
            raise ParseError(f"GNU time's block has no {key} line")
        found[key] = m.group(1)
    try:
        return {
            "wall_s": clock_seconds(found["wall"]),
            "user_s": float(found["user"]),
            "sys_s": float(found["sys"]),
            "peak_rss_mib": float(found["rss_kb"]) / 1024,
        }
    except ValueError as exc:
        raise ParseError(f"GNU time's block has a bad number: {exc}") from None


def block_io_bytes(block: str) -> float | None:
    """The filesystem inputs and outputs GNU time's verbose block counts, in
    bytes; None when the block lacks either line. Pure."""
    found = [p.search(block) for p in _BLOCK_FIELDS]
    if any(m is None for m in found):
        return None
    return float(sum(int(m.group(1)) for m in found if m is not None) * BLOCK_BYTES)


def tail_lines(text: str, n: int = 5, width: int = 300) -> str:
    """The last ``n`` non-blank lines of an output, each cut at ``width``, joined by " | "."""
    lines = [line.strip()[:width] for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-n:])


# --- regular expressions ------------------------------------------------------

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # its own report goes to stderr; ours is one line


def rule_regex(source: str) -> Any:
    """A study's regex compiled by RE2, multi-line (``^`` and ``$`` at each
    line, as Python's re.M); ValueError says why RE2 cannot run it."""
    try:
        return re2.compile(f"(?m){source}", _RE2_OPTIONS)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"cannot run in linear time under RE2 ({why}); write it without backreferences or lookarounds"
        ) from None


def value_group(pattern: Any, metric: str) -> str:
    """The group whose match is the metric's value: the one named after the
    metric, else the only named group. ValueError says which to name."""
    names = list(pattern.groupindex)
    if metric in names:
        return metric
    if len(names) == 1:
        return names[0]
    if not names:
        raise ValueError(f"has no named group; mark the number with (?P<{metric}>...)")
    raise ValueError(f"has groups {', '.join(names)}: name the value's group after the metric, (?P<{metric}>...)")


def read_regex(text: str, pattern: Any, metric: str) -> float:
    """The metric's number from the last match of ``pattern`` (rule_regex's)
    in ``text``."""
    last = None
    for match in pattern.finditer(text):
        last = match
    if last is None:
        shown = pattern.pattern.removeprefix("(?m)")
        raise ParseError(f"metric {metric}: the regex {shown!r} matches nothing in the output")
    raw = last.group(value_group(pattern, metric))
    return number(raw, metric)


def number(raw: Any, metric: str) -> float:
    if isinstance(raw, bool) or raw is None:
        raise ParseError(f"metric {metric}: {raw!r} is not a number")
    try:
        value = float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise ParseError(f"metric {metric}: {str(raw)[:80]!r} is not a number") from None
    if not math.isfinite(value):
        raise ParseError(f"metric {metric}: {raw!r} is not a finite number")
    return value


# --- JSON paths -----------------------------------------------------------------

# $.jobs[0].read.iops, results[0]["mean"]: keys, indices, quoted keys
_STEP_RE = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_-]*)|\[(-?[0-9]+)\]|\["([^"\\]*)"\]')


def json_path(path: str) -> tuple[str | int, ...]:
    """The steps of a JSON path: ``$.a.b[0]``, ``a.b[0]`` or ``a["b.c"]``.
    ValueError when it is not one."""
    rest = path[1:] if path.startswith("$") else path
    steps: list[str | int] = []
    pos = 0
    while pos < len(rest):
        m = _STEP_RE.match(rest, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"{path!r} is not a JSON path like $.results[0].mean (stopped at {rest[pos:][:20]!r})")
        key, index, quoted = m.groups()
        steps.append(int(index) if index is not None else key if key is not None else quoted)
        pos = m.end()
    if not steps:
        raise ValueError(f"{path!r} names nothing; write a path like $.results[0].mean")
    return tuple(steps)


def first_json(text: str) -> Any:
    """The first JSON document in an output (tools may print a line before it)."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, m.start())[0]
        except json.JSONDecodeError:
            continue
    raise ParseError("the output holds no JSON document")


def read_json(doc: Any, steps: tuple[str | int, ...], path: str, metric: str) -> float:
    node = doc
    for i, step in enumerate(steps):
        try:
            if isinstance(step, int) and isinstance(node, list):
                node = node[step]
            elif isinstance(step, str) and isinstance(node, dict):
                node = node[step]
            else:
                raise KeyError(step)
        except (KeyError, IndexError):
            where = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps[: i + 1])
            raise ParseError(f"metric {metric}: the output's JSON has no {where} (json = {path!r})") from None
    return number(node, metric)


class OutputMetric(StrictModel):
    """``[workloads.NAME.metrics.METRIC]``: one number read from every run's output."""

    regex: str | None = None
    json_: str | None = Field(None, alias="json")
    stream: Literal["stdout", "stderr"] = "stdout"
    unit: str = Field("", max_length=20)
    higher_is_better: bool
    primary: bool = False
    description: str = Field("", max_length=200)

    @model_validator(mode="after")
    def _one_rule(self) -> OutputMetric:
        if (self.regex is None) == (self.json_ is None):
            raise ValueError("give one of regex = '...' (a named group marks the number) or json = '$.path'")
        if self.regex is not None:
            try:
                re.compile(self.regex, re.M)
            except re.error as exc:
                raise ValueError(f"regex does not compile: {exc}") from None
            try:
                rule_regex(self.regex)
            except ValueError as exc:
                raise ValueError(f"regex {exc}") from None
        elif self.json_ is not None:
            json_path(self.json_)
        return self


class Units(StrictModel):
    """``[workloads.NAME.units]``: the work one run of the command does,
    counted, so attribution divides each counter by it (µs per request, not
    per run): ``count`` for a fixed amount, or ``metric``, one of the
    table's output metrics read from every run (the requests a load
    generator says it made)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9 _-]{0,29}$")
    count: float | None = Field(None, gt=0)
    metric: str | None = None

    @model_validator(mode="after")
    def _one_count(self) -> Units:
        if (self.count is None) == (self.metric is None):
            raise ValueError("give one of count = N (per run) or metric = 'NAME' (one of the table's metrics)")
        return self
