"""Children that must not outlive isobench (QEMU, stress-ng), and the two
signals that end a run (SIGINT, SIGTERM): either raises KeyboardInterrupt
for one orderly teardown, and a teardown under way is not cut short by
another (issue 55, 20)."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
from collections.abc import Iterator

_PR_SET_PDEATHSIG = 1
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_came: list[int] = []  # the signals interrupt_on_signals() raised for, in order


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when isobench dies, even by SIGKILL
    (runs in the child between fork and exec)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _interrupt(signum: int, frame: object) -> None:
    _came.append(signum)
    raise KeyboardInterrupt


def interrupt_on_signals() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt (SIGTERM gets Ctrl-C's
    orderly teardown), each noted: an error one caused (a C extension's
    import cut short says "ImportError: initialization failed") reads as the
    interrupt it was. A SIGINT the shell ignores (a background job) stays
    ignored."""
    _came.clear()
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _interrupt)


def interrupted() -> bool:
    """Did SIGINT or SIGTERM come since interrupt_on_signals()?"""
    return bool(_came)


def _noted(signum: int, frame: object) -> None:
    _came.append(signum)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """SIGINT and SIGTERM noted, not acted on, while inside: a teardown (its
    containers, volumes, cgroups and the run's status) must finish once it
    has begun, whatever comes after the first signal. Python handlers, not
    SIG_IGN: a command the teardown starts still hears them. The main thread
    only (elsewhere signals are not handled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _noted) for sig in SIGNALS if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """held(), and a signal that came inside raised as KeyboardInterrupt
    once outside: a step that must be whole (a run's record written and its
    id told to the caller) is, and the interrupt still lands after it."""
    before = len(_came)
    with held():
        yield
    if len(_came) > before:
        raise KeyboardInterrupt
