"""One output convention for every command (docs/output.md): `-o/--output
FILE` with `-` for stdout, `--format terminal|md|html|json` where there is a
report, `--format terminal|json` where there is a table or lines, a JSON
document with a schema name and version, durations written one way, and old
spellings kept as hidden aliases that say they are deprecated."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import click
from rich.console import Console

from isobench.cli.common import FORCE_OPTION, columns, err_console, writing

# Exit statuses besides 0 (docs/output.md#exit-status; 2 and 3 are cli/entry.py's)
EXIT_GATE = 1  # a gate failed: a change for the worse beyond --fail-on-change
EXIT_BLIND = 4  # blind: --require-resolution unmet, or validate --strict on a study that can resolve nothing


def gate_exit(failed: bool, blind: bool) -> None:
    """Exit as the gates say: a regression found wins over blindness (it was
    seen, whatever else was not); nothing when neither."""
    if failed or blind:
        raise SystemExit(EXIT_GATE if failed else EXIT_BLIND)


SCHEMA_VERSION = 1  # of every document below; bumped when a field changes meaning or goes
STDOUT = "-"
FORMATS = ("terminal", "md", "html", "json")
TABLE_FORMATS = ("terminal", "json")  # a command whose human output is a table or lines


def output_option(what: str = "Write to FILE instead of stdout (- for stdout).", dir_okay: bool = False):
    """-o/--output FILE, and --force (the output rule: common.check_output)."""
    option = click.option(
        "--output", "-o", metavar="FILE", type=click.Path(dir_okay=dir_okay, allow_dash=True), help=what
    )
    return lambda f: FORCE_OPTION(option(f))


def format_option(default: str = "terminal", extra: str = ""):
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=default,
        show_default=True,
        help="terminal, Markdown, one offline HTML file, or JSON (schema: docs/output.md)." + extra,
    )


def table_format_option(command: str, json_alias: bool = True):
    """--format terminal|json, read into ``fmt``, for COMMAND, whose human
    output is a table or lines. With JSON_ALIAS, also --json, its old
    spelling: hidden, said deprecated once, and read as --format json (the
    command sees ``fmt`` alone); the command's help says so in one sentence
    (tests/unit/test_output_formats.py holds the two together)."""
    fmt = click.option(
        "--format",
        "fmt",
        type=click.Choice(TABLE_FORMATS),
        default="terminal",
        show_default=True,
        help="terminal (a table or lines) or JSON (schema: docs/output.md).",
    )
    if not json_alias:
        return fmt
    alias = click.option(
        "--json",
        "old_json",
        is_flag=True,
        hidden=True,
        callback=deprecated(f"{command} --json", "--format json"),
        help="Deprecated spelling of --format json.",
    )

    def decorate(f):
        # a wrapper, not a second option writing into fmt: which of two
        # options sharing a name wins differs between click releases
        @functools.wraps(f)
        def merged(*args, old_json: bool = False, **kwargs):
            if old_json:
                kwargs["fmt"] = "json"
            return f(*args, **kwargs)

        return fmt(alias(merged))

    return decorate


def deprecated(old: str, new: str):
    """Callback of a hidden old spelling: works for one more release and says so once."""

    def warn(ctx, param, value):
        if value not in (None, False, ()):
            err_console.print(
                f"note: {old} is deprecated and goes in the next release; use {new}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        return value

    return warn


def to_stdout(output: str | None) -> bool:
    return output in (None, STDOUT)


def plain(value):
    """A value JSON can hold without NaN or infinity (null instead)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# Every document's top-level fields, as docs/output.md lists them (a test holds the two together).
# Kinds whose fields changed meaning since version 1: validate's
# `repetitions` (an integer, was a text), report's and compare's
# `rounds_needed` (null beyond the cap, was the cap + 1).
BUMPED = {"validate": 2, "report": 2, "compare": 2}


def version_of(kind: str) -> int:
    return BUMPED.get(kind, SCHEMA_VERSION)


SCHEMAS = {
    "runs": ("runs",),
    "validate": (
        "study_file",
        "study",
        "ok",
        "environments",
        "instances",
        "workloads",
        "warmup",
        "repetitions",
        "size",
        "resolution",
        "not_run",
        "packages_plan",
    ),
    "envs": ("environments", "presets"),
    "doctor": ("findings",),
    "fleet-list": ("hosts",),
    "fleet-run": ("fleet_id", "study", "hosts", "complete", "next"),
    "fleet-clean": ("hosts", "clean"),
    "reparse": ("dry_run", "runs"),
    "import": ("run_id", "file"),
    "archive": ("run_id", "file"),
    "clean": ("removed",),
    "studies": ("studies",),
    "images-build": ("tag",),
    "calibrate": ("run_id", "env", "rates"),
    "report": ("run", "host_facts", "cell_columns", "cells", "attribution"),
    "compare": (
        "run_a",
        "run_b",
        "form",
        "baseline",
        "tolerance_pct",
        "fail_on_change_pct",
        "require_resolution_pct",
        "counts",
        "summary",
        "cells",
        "only_in_a",
        "only_in_b",
        "mismatched",
        "facts_diff",
        "regressions",
        "blind",
    ),
    "explain": ("explains", "runs"),
    "history": (
        "study",
        "newest_run",
        "level",
        "groups",
        "left_out",
        "fail_on_change_pct",
        "require_resolution_pct",
        "failing",
        "blind",
    ),
}


def document(kind: str, body: dict) -> str:
    """The JSON text of one command's answer: {"schema": "isobench.KIND",
    "version": N, ...body}, body holding at least SCHEMAS[kind]'s fields."""
    missing = [k for k in SCHEMAS[kind] if k not in body]
    if missing:  # a programming error: the documented schema and the code went apart
        raise AssertionError(f"isobench.{kind} document lacks {missing}")
    doc = {"schema": f"isobench.{kind}", "version": version_of(kind), **body}
    return json.dumps(plain(doc), indent=2, allow_nan=False, default=str) + "\n"


def error_document(kind: str, message: str, body: dict | None = None) -> str:
    """The JSON text of a command that failed (docs/output.md#failures):
    {"schema", "version", "ok": false, "error": the one line, ...body}."""
    doc = {"schema": f"isobench.{kind}", "version": version_of(kind), **(body or {}), "ok": False, "error": message}
    return json.dumps(plain(doc), indent=2, allow_nan=False, default=str) + "\n"


def emit(text: str, output: str | None, what: str = "-o") -> None:
    """TEXT to stdout (no -o, or -o -) or to the file OUTPUT."""
    if to_stdout(output):
        click.echo(text, nl=not text.endswith("\n"))
        return
    assert output is not None  # to_stdout took None
    with writing(output, what):
        Path(output).write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def terminal_to(output: str | None, render, console: Console) -> None:
    """RENDER(console) on stdout, or into the file OUTPUT at the width a pipe
    gets (COLUMNS, else 100)."""
    if to_stdout(output):
        render(console)
        return
    assert output is not None  # to_stdout took None
    with writing(output), open(output, "w", encoding="utf-8") as fh:
        render(Console(file=fh, width=columns()))


class Duration(click.ParamType):
    """A time as everywhere else: 30m, 1h30m, 90s, or plain seconds."""

    name = "duration"

    def __init__(self, min_s: float = 0.0, max_s: float | None = None) -> None:
        self.min_s, self.max_s = min_s, max_s

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            from isobench.analysis.budget import duration_seconds

            try:
                seconds = duration_seconds(value)
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        if seconds < self.min_s or (self.max_s is not None and seconds > self.max_s):
            most = f" and at most {self.max_s:g} s" if self.max_s is not None else ""
            self.fail(f"{value!r}: give at least {self.min_s:g} s{most}", param, ctx)
        return seconds


def old_fail_on_regression(command: str):
    """The gate's old spelling on `command` (compare, history): hidden,
    read into ``old_fail_pct``, said deprecated once."""
    from isobench.cli.common import Finite

    return click.option(
        "--fail-on-regression",
        "old_fail_pct",
        type=Finite(min=0),
        hidden=True,
        callback=deprecated(f"{command} --fail-on-regression", "--fail-on-change"),
        help="Deprecated spelling of --fail-on-change.",
    )
