"""The `isobench` command run in the test's own process: the same outermost
frame as the program (cli/entry.main: its exit status, its one line on
stderr), without an interpreter start and the imports every command pays
for (a second or more of CPU each in the unit lane). What is per process is
reset before each command (the stores it opened, what the store's shapes
said once), and every SQLite connection it opened is closed after, as a
process's exit closes it (a store's -wal and -shm files go). A command that
could hang or never end (a FIFO, /dev/zero) still runs as a process of its
own, under a timeout. One difference stays: ISOBENCH_HOME is read when
isobench.core.workspace is first imported, so a test that sets it names no
state directory for the command (only an unexpected error's traceback log
and the default store live there: such a test fails on the first, and
names its store)."""

from __future__ import annotations

import sqlite3
import subprocess

from isobench.cli import common, entry
from isobench.store import shapes


def isobench(capfd, *args: str) -> subprocess.CompletedProcess:
    """ARGS run as `isobench ARGS` would, in the environment and directory
    the caller set (monkeypatch); stdout and stderr read through CAPFD."""
    shapes._said.clear()
    common._inputs.clear()
    common._stores.clear()
    capfd.readouterr()  # only this command's output
    connect, opened = sqlite3.connect, []

    def connect_and_keep(*a, **kw):
        opened.append(connect(*a, **kw))
        return opened[-1]

    # the store a command leaves open sits in reference cycles: only the
    # collector (100 ms and more in a test process) or this would close it
    sqlite3.connect = connect_and_keep
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sqlite3.connect = connect
        for db in opened:
            db.close()
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(["isobench", *map(str, args)], code, out, err)
