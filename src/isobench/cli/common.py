"""What every command module shares: the consoles, the --store option, the
one-line failure and opening a store. Command modules (cli.py,
transfer_cli.py, fleet/commands.py) import it; it imports no command."""

from __future__ import annotations

import math
import os
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.markup import escape

from isobench.core.ids import printable, shown
from isobench.core.workspace import DEFAULT_STORE

PIPE_COLUMNS = 100  # a pipe or CI log without COLUMNS: wider than rich's 80, narrower than a wide log


def columns() -> int:
    """The width for output that is not a terminal: COLUMNS when set, else 100."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and 20 <= int(text) <= 10_000 else PIPE_COLUMNS


# A terminal is measured; a pipe, a file or a CI log gets COLUMNS (else 100).
console = Console(width=None if sys.stdout.isatty() else columns())
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else columns())

STORE_OPTION = click.option(
    "--store",
    "store_path",
    envvar="ISOBENCH_STORE",
    default=DEFAULT_STORE,
    show_default=True,
    metavar="FILE",
    help="SQLite file holding every run (env: ISOBENCH_STORE).",
    callback=lambda ctx, param, value: _known_store(value),
)


def _known_store(value: str) -> str:
    """The store a command will use is an input from the start: `try --save`
    writes before it opens the store, and an output must never be it."""
    if value:
        _inputs.add(os.path.realpath(value))
        _stores.append(value)
    return value


def current_store() -> str | None:
    """The store this command was given (--store or ISOBENCH_STORE), if any."""
    return _stores[-1] if _stores else None


class Finite(click.FloatRange):
    """The one type of every float option: a finite number in its range
    (FloatRange alone lets NaN through, and NaN as a threshold turns a gate off)."""

    name = "finite number"

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{shown(value)} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def fold(lines, out: Console) -> None:
    """Each line folded to OUT's width at spaces, its continuation indented
    two spaces (validate, run's and try's plan, clean). A word is never cut
    (a path, a run id, a rule are copied): one wider than the width stays whole.
    Control characters escaped; printed literally, never as console markup."""
    for line in lines:
        for part in textwrap.wrap(
            printable(line), out.width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
        ):
            out.print(part, highlight=False, markup=False, soft_wrap=True)


# A message quoting user input (a key, a value, a path) is cut to this.
MESSAGE_LIMIT = 2000


class Failure(SystemExit):
    """fail()'s exit: status 2, carrying its one line for a command that
    also says it as a JSON error document (validate --format json)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message


def fail(message: str) -> NoReturn:
    """One line and exit status 2. The message holds user text (paths,
    names, "[study]"): printed literally, never as console markup, and with
    control characters escaped (no terminal escape sequence, no second line)."""
    err_console.print(
        f"[bold red]error:[/] {escape(printable(message)[:MESSAGE_LIMIT])}", highlight=False, soft_wrap=True
    )
    raise Failure(printable(message)[:MESSAGE_LIMIT])


def shipped_or_path(ctx, param, value: str | None) -> str | None:
    """A STUDY_FILE argument's callback: a path as given (a `/` or .toml in
    it), or a shipped study's name (`isobench run quick` from any directory,
    whatever files it holds); a name that is neither is one line listing the
    shipped names."""
    if value is None:
        return None
    from isobench.core.shipped import NotAStudy, study_path

    try:
        return study_path(value)
    except NotAStudy as exc:
        fail(str(exc))


def open_store(path: str, create: bool = False, reader: bool = False):
    """The store at PATH, or one line and exit 2. Commands that do not make
    runs (create=False) never create a store: a typo in --store is said, not
    answered with an empty new store. Commands that only read (reader) read
    a store they may not write (a read-only filesystem) where it is."""
    from isobench.store.db import Store, StoreError

    try:
        store = Store(path, create=create, reader=reader)
    except StoreError as exc:
        fail(str(exc))
    _inputs.add(os.path.realpath(path))
    return store


# -- outputs never destroy inputs (docs/hostile-inputs.md, "Outputs") ------------------------

_inputs: set[str] = set()  # the stores this command opened (resolved)
_stores: list[str] = []  # as given, the last one the command's
_own: set[str] = set()  # default outputs (results/RUN_ID.html ...): isobench's own, replaced freely
_force = False

FORCE_OPTION = click.option(
    "--force",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, param, value: globals().__setitem__("_force", bool(value)),
    help="Replace an existing output file, or write through a symlink.",
)


def written_here(path) -> None:
    """A file this command wrote itself (try's --save): writing it again replaces it."""
    _own.add(os.path.realpath(path))


def check_output(path, what: str = "-o") -> None:
    """The one rule for every file a command writes (-o, --junit, --figures,
    archive -o): never the open store (nor its -wal/-shm, nor a path
    resolving to it); never through a symlink nor over an existing regular
    file unless --force (a default output under results/ is isobench's own
    and is replaced). Devices (/dev/null, /dev/stdout) are written as given."""
    text = os.fspath(path)
    real = os.path.realpath(text)
    if any(real in (s, s + "-wal", s + "-shm", s + "-journal") or _same_file(real, s) for s in _inputs):
        fail(f"{what} {text}: is the store this command uses (not even with --force); give another path")
    if _force or real in _own:
        return
    if os.path.islink(text):
        fail(f"{what} {text}: is a symlink (to {real}); give the target itself, or pass --force")
    if os.path.isfile(text):
        fail(f"{what} {text}: exists; give another path, or pass --force to replace it")


def _same_file(a: str, b: str) -> bool:
    """Whether two existing paths are one file (a hard link to the store)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


RESULTS = "results"  # default outputs: in the working directory, isobench's own


def results_dir() -> str:
    """results/, where default outputs go, refused in one line when it is a
    symlink: in a shared working directory, a link made `archive` write (and
    replace, as its own) a root-owned file wherever it pointed (issue 55)."""
    if os.path.islink(RESULTS):
        fail(
            f"{RESULTS}: is a symlink (to {os.path.realpath(RESULTS)}); default outputs go to a results "
            "directory here, never through a link: remove the link, or give -o PATH"
        )
    return RESULTS


def default_output(run_id: str, suffix: str, directory: str | None = None) -> Path:
    """DIRECTORY/RUN_ID<suffix> (default results/: results_dir), for a run
    id that must stay a file name there (a stored id is checked again: the
    store may be someone's file)."""
    from isobench.core.ids import BadIdentifier, check_run_id, under

    try:
        path = under(directory or results_dir(), check_run_id(run_id, "run id") + suffix)
    except BadIdentifier as exc:
        fail(f"{exc}; give -o PATH to write it elsewhere")
    return own(path)


def own(path: Path) -> Path:
    """PATH as a default output of isobench's: replaced without --force."""
    _own.add(os.path.realpath(path))
    return path


def _drop(path) -> None:
    try:
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
    except OSError:
        pass


@contextmanager
def writing(path, what: str = "-o"):
    """Around writing a user-named file: the output rule (check_output)
    first; a missing directory, a read-only or full disk is one line naming
    the path, not a traceback, and leaves no file where none was."""
    check_output(path, what)
    existed = os.path.lexists(path)
    try:
        yield
    except OSError as exc:
        if not existed:
            _drop(path)  # a full disk left a 0-byte or partial file: it is no output
        fail(
            f"{what} {path}: cannot write: {exc.strerror or exc}; give a path in an existing, writable "
            "directory with free space"
        )
