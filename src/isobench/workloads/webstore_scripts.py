"""The shell one webstore instance's stack starts and stops with: one
``env.exec`` each instead of the ~25 round trips of starting, probing and
stopping three servers one command at a time (each a process spawn in the
guest, slow under TCG; issue 23 item 7). Pure: every argument is one of
isobench's own paths or numbers, each shell-quoted here, so the text is
never built from a study's strings unquoted.

A server is started by ``start-stop-daemon`` with its pidfile in the
servers directory (``isobench clean`` finds leftovers there) and waited for
by a readiness probe (none for the last one: the client host checks that
it answers). Stopping is TERM, a wait until the process is gone or a
zombie, KILL after the grace time, as ``ServerWorkload.stop_server``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

POLL_S = 0.2


@dataclass(frozen=True)
class Daemon:
    tag: str  # the server's short name in messages
    exe: str
    argv: tuple[str, ...]  # its arguments after exe
    pidfile: str
    log: str
    probe: tuple[str, ...] = ()  # until it succeeds the server is not ready; () for none


def _q(args) -> str:
    return " ".join(shlex.quote(str(a)) for a in args)


def start_script(daemons: list[Daemon], user: str, ready_s: float) -> str:
    """Start each daemon in order, waiting for its probe, ready_s at most
    each; exits non-zero with one line on stderr naming the server and
    its log's last lines."""
    polls = max(1, int(ready_s / POLL_S))
    lines = ["set -u"]
    for d in daemons:
        tail = f'"$(tail -n 5 {shlex.quote(d.log)} 2>/dev/null | tr "\\n" "|")"'
        lines.append(f"mkdir -p {shlex.quote(d.pidfile.rsplit('/', 1)[0])}")
        lines.append(
            f"start-stop-daemon --start --background --make-pidfile --pidfile {shlex.quote(d.pidfile)} "
            f"--output {shlex.quote(d.log)} --chuid {shlex.quote(user)} --exec {shlex.quote(d.exe)} -- "
            f"{_q(d.argv)} || {{ echo {shlex.quote(d.tag + ' did not start')} >&2; exit 1; }}"
        )
        if d.probe:
            lines += [
                "n=0",
                f"until {_q(d.probe)} >/dev/null 2>&1; do",
                f"  if ! start-stop-daemon --status --pidfile {shlex.quote(d.pidfile)}; then",
                f"    echo {shlex.quote(d.tag + ' exited: ')}{tail} >&2; exit 1; fi",
                "  n=$((n+1))",
                f"  if [ $n -ge {polls} ]; then echo {shlex.quote(f'{d.tag} not ready in {ready_s:g} s: ')}{tail} >&2;"
                " exit 1; fi",
                f"  sleep {POLL_S}",
                "done",
            ]
    return "\n".join(lines) + "\n"


def stop_script(pidfiles: list[tuple[str, str]], grace_s: float) -> str:
    """Stop each (tag, pidfile) in order; a missing pidfile is nothing to
    stop. Exits non-zero naming a server that survives SIGKILL."""
    polls, kill_polls = max(1, int(grace_s / 0.05)), int(10 / 0.05)
    lines = [
        "set -u",
        "rc=0",
        # the state letter after the ") " that ends the command name
        "state() { sed -n 's/.*) \\([A-Za-z]\\).*/\\1/p' /proc/$1/stat 2>/dev/null; }",
        'gone() { s=$(state $1); [ -z "$s" ] || [ "$s" = Z ] || [ "$s" = X ]; }',
    ]
    for tag, pidfile in pidfiles:
        p = shlex.quote(pidfile)
        lines += [
            f"pid=$(cat {p} 2>/dev/null || true)",
            'case "$pid" in ""|*[!0-9]*) pid="";; esac',
            'if [ -n "$pid" ]; then',
            f"  start-stop-daemon --stop --pidfile {p} --oknodo --signal TERM >/dev/null",
            "  n=0",
            f"  while ! gone $pid && [ $n -lt {polls} ]; do sleep 0.05; n=$((n+1)); done",
            "  if ! gone $pid; then",
            f"    start-stop-daemon --stop --pidfile {p} --oknodo --signal KILL >/dev/null",
            "    n=0",
            f"    while ! gone $pid && [ $n -lt {kill_polls} ]; do sleep 0.05; n=$((n+1)); done",
            f'    if ! gone $pid; then echo {shlex.quote(tag)}" server (pid $pid) survives SIGKILL" >&2; rc=1; fi',
            "  fi",
            "fi",
            # a survivor keeps its pidfile: `isobench clean` finds it there
            f'if [ -z "$pid" ] || gone $pid; then rm -f {p}; fi',
        ]
    return "\n".join(lines + ["exit $rc"]) + "\n"
