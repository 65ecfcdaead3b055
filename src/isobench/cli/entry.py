"""The `isobench` command's outermost frame: no Python traceback ever reaches
the user. A known error (IsobenchError and the store's and study's own) is
one line; anything unexpected is one line plus the path of a log holding the
traceback, which `--debug` (anywhere on the command line) prints instead."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import tempfile
import time
import traceback

DEBUG_FLAG = "--debug"
EXIT_ERROR = 2  # the CLI's usage/known-error status
EXIT_UNEXPECTED = 3


def _log_dir() -> str:
    from isobench.core.workspace import STATE_ROOT

    for root in (os.path.join(STATE_ROOT, "logs"), os.path.join(tempfile.gettempdir(), "isobench-logs")):
        try:
            os.makedirs(root, exist_ok=True)
            if os.access(root, os.W_OK):
                return root
        except OSError:
            continue
    return tempfile.gettempdir()


def write_traceback(exc: BaseException) -> str | None:
    """The traceback in a new log file; returns its path, or None when no
    log directory takes it (a full disk: no second traceback, no empty log)."""
    from isobench.core.workspace import STATE_ROOT

    name = f"error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    for root in (_log_dir(), os.path.join(STATE_ROOT, "logs"), os.path.join(tempfile.gettempdir(), "isobench-logs")):
        path = os.path.join(root, name)
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(f"isobench {' '.join(sys.argv[1:])}\n\n")
                traceback.print_exception(exc, file=fh)
            return path
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return None


def one_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return " ".join(lines) if len(lines) <= 3 else lines[0]


def _say(message: str) -> None:
    # plain write: the message holds user text (paths, names) that must print literally
    # and with control characters escaped: no escape sequence reaches the terminal
    from isobench.core.ids import printable

    sys.stderr.write(f"error: {printable(message)[:2000]}\n")  # a message quoting user input is bounded
    sys.stderr.flush()


def _known_errors() -> tuple[type[BaseException], ...]:
    from isobench.core.errors import IsobenchError

    known: list[type[BaseException]] = [IsobenchError]
    for mod, name in (
        ("isobench.store.db", "StoreError"),
        ("isobench.study", "StudyError"),
        ("isobench.core.ids", "BadIdentifier"),
        ("isobench.store.transfer", "TransferError"),
    ):
        # a module never imported cannot have raised its error; importing it
        # here would cost a second (the study pulls in every workload)
        if mod in sys.modules and hasattr(sys.modules[mod], name):
            known.append(getattr(sys.modules[mod], name))
    return tuple(known)


def _damaged(exc: Exception) -> bool:
    import sqlite3

    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in str(exc) or "not a database" in str(exc))


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in args or os.environ.get("ISOBENCH_DEBUG") == "1"
    args = [a for a in args if a != DEBUG_FLAG]
    import click

    from isobench.cli.main import main as cli_main

    try:
        # not standalone: a usage error is said here, in one bounded line
        code = cli_main.main(args=args, prog_name="isobench", standalone_mode=False)
    except SystemExit:
        raise
    except click.ClickException as exc:  # a bad option, a bad value, an unknown command
        if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
            exc.show()  # `isobench` alone: its help, as click prints it
        else:
            _say_usage(exc)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:  # Ctrl-C or end of input at a prompt, as click says it
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except BrokenPipeError:  # `isobench runs | head`: the reader left; nothing more to say
        _quiet_stdout()
        sys.exit(1)
    except _known_errors() as exc:
        if debug:
            traceback.print_exc()
        _say(one_line(str(exc)))
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - the last frame: everything becomes one line
        if _damaged(exc):  # a damaged page met mid-command (issue 47): no "unexpected", no exit 3
            from isobench.cli.common import current_store
            from isobench.store.damage import damaged_line

            _say(damaged_line(current_store() or "the store", one_line(str(exc))))
            sys.exit(EXIT_ERROR)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:  # a fault, not a bug: one line, exit 2
            _say(f"{exc.filename or 'a file isobench writes'}: the disk is full ({exc.strerror}); free space on it")
            sys.exit(EXIT_ERROR)
        if debug:
            traceback.print_exc()
            sys.exit(EXIT_UNEXPECTED)
        path = write_traceback(exc)
        where = f"traceback in {path}" if path else "its traceback could not be written either"
        _say(
            f"unexpected {type(exc).__name__}: {one_line(str(exc))[:300]} ({where}; "
            f"run again with {DEBUG_FLAG} to print it)"
        )
        sys.exit(EXIT_UNEXPECTED)
    # a command's end, --help or ctx.exit(N): click returns the code (or the command's None)
    sys.exit(code if isinstance(code, int) and not isinstance(code, bool) else 0)


# A usage error quotes what was typed (a 100 KB option value, an unknown
# option): its one line is cut to this.
USAGE_LIMIT = 300


def usage_line(exc) -> str:
    """Click's error as one line of at most USAGE_LIMIT characters (plus the
    help hint), control characters escaped."""
    from isobench.core.ids import printable

    text = printable(" ".join(exc.format_message().split())).removesuffix(".")
    if len(text) > USAGE_LIMIT:
        text = f"{text[:USAGE_LIMIT]}... (cut at {USAGE_LIMIT} characters)"
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        text += f"; see `{ctx.command_path} --help`"
    return text


def _say_usage(exc) -> None:
    sys.stderr.write(f"error: {usage_line(exc)}\n")
    sys.stderr.flush()


def _quiet_stdout() -> None:
    """Stdout's reader is gone: later writes (the interpreter's final flush) go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    main()
