"""A server process's /proc/PID/stat, read through an environment's exec:
its state and CPU ticks (pure), and whether an answer says it is gone."""

from __future__ import annotations

from isobench.core.proc import ExecResult


def proc_gone(r: ExecResult) -> bool:
    """Whether `cat /proc/PID/stat` says the process is gone or a zombie; an
    exec that failed or lost its output says nothing (asked again)."""
    if r.returncode == 1 and not r.timed_out:  # no such file: reaped
        return True
    return r.ok and proc_state(r.stdout) in ("Z", "X")


def proc_state(stat: str) -> str:
    """The state letter of a /proc/PID/stat line (after the parenthesised name)."""
    _, _, rest = stat.rpartition(")")
    return rest.split()[0] if rest.split() else ""


def proc_cpu_ticks(stat: str) -> int | None:
    """utime + stime (fields 14 and 15) of a /proc/PID/stat line."""
    rest = stat.rpartition(")")[2].split()
    try:
        return int(rest[11]) + int(rest[12])
    except (IndexError, ValueError):
        return None
