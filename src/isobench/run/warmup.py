"""A warm-up sample that fails stops the run before its first measured
round (issue 55): a program missing from the image failed every Docker
warm-up with exit 127 in an instant, measure_for fitted its rounds to those
instants, and the host's samples were measured beside failing containers.
The one line names the environment, the cell, how it failed and, where the
failure says which program was not found, the package that brings it."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from isobench.core.errors import EnvironmentError_
from isobench.host.packages import package_of

# what a shell, GNU time, env and the Docker engine say of a program they
# did not find; and a command table's own preparation (workloads/command.py
# resolve), which names the table's program itself
NOT_FOUND = (
    re.compile(r"([\w.+/-]+): (?:\d+: )?(?:command )?not found"),
    re.compile(r"cannot run ([^\s:]+): No such file or directory"),
    re.compile(r"env: '([^']+)': No such file or directory"),
    re.compile(r'exec: "([^"]+)": executable file not found'),
)
RESOLVE = re.compile(r"command: ([^\s:]+) cannot be run in \S+ \(exit 127\): not found on ")
EXIT = re.compile(r"\bexit (\d+)\b")


def exit_code(error: str) -> int | None:
    """The exit status a sample's error names ("command exit 127: ..."). Pure."""
    found = EXIT.search(error)
    return int(found.group(1)) if found else None


def missing_program(error: str) -> str | None:
    """The program a failed sample's error says was not found: only with
    exit 127, and only a name its own command line (the error's text before
    the complaint) holds, so a word of the output is never taken for one. Pure."""
    if exit_code(error) != 127:
        return None
    own = RESOLVE.search(error)
    if own:
        return posixpath.basename(own.group(1))
    for pattern in NOT_FOUND:
        for found in pattern.finditer(error):
            name = posixpath.basename(found.group(1))
            if name and name in re.findall(r"[\w.+-]+", error[: found.start(1)]):
                return name
    return None


class WarmupFailed(EnvironmentError_):
    """A warm-up sample failed: the run stops, one line (``line``) says why
    and what would work."""

    def __init__(self, env: str, cell: str, error: str, program: str | None, package: str | None):
        self.env, self.cell, self.error, self.program, self.package = env, cell, error, program, package
        self.kept: str | None = None  # the run that keeps what was measured before (the runner sets it)
        key = cell.split("/")[0]
        super().__init__(self.line(lambda p: f'add "{p}" to packages in [workloads.{key}]', "nothing was measured"))

    def line(self, give: Callable[[str], str], after: str) -> str:
        """``give(package)``: how this command gives a package ("give
        --package bzip2"); ``after``: what is kept."""
        if self.program is None:
            remedy = "fix what fails there, then run again"
        elif self.package is not None:
            remedy = f"{self.env} has no {self.program}: {give(self.package)} (the host's {self.program} is in it)"
        else:
            remedy = f"{self.env} has no {self.program}: {give('PACKAGE')}, the Debian package that installs it"
        return (
            f"{self.env}: the warm-up of {self.cell} failed ({' '.join(self.error.split())[:300]}); {remedy}; "
            f"the run stopped before its first measured round, {after}"
        )


def warmup_failed(env: str, cell: str, error: str, gone: str | None = None) -> WarmupFailed:
    """The stop for a warm-up sample of ``cell`` that failed in ``env``
    with ``error`` (``gone``: the environment itself stopped answering)."""
    program = missing_program(error) if gone is None else None
    return WarmupFailed(env, cell, gone or error, program, package_of(program) if program else None)
