"""A small synchronous face on ``qemu.qmp``'s asyncio QMPClient, for the QMP
monitor and for the QEMU guest agent.

qemu.qmp speaks both: the guest agent (qemu-ga) uses the same JSON framing
and the same ``execute``/``return``/``error`` messages as QMP, only without
a greeting or capabilities negotiation, which QMPClient turns off with
``await_greeting = negotiate = False``. The library is asyncio-only and the
Environment interface is synchronous, so each client runs its own event
loop in a daemon thread and every call waits on it with a deadline: nothing
here can block longer than the timeout it is given.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qemu.qmp import QMPClient

# asyncio and qemu.qmp load with the first client: the env kinds' registry
# imports this module for `validate` and `envs` too, which open no socket

# guest-exec-status carries up to 16 MiB of output per stream (qemu-ga's
# cap), base64-encoded: one JSON line can reach ~45 MB.
READ_LIMIT = 64 * 1024 * 1024

# Replies to requests we gave up on (the guest was not listening yet) come
# back later with unknown ids; the library drops them with a warning.
logging.getLogger("qemu.qmp").setLevel(logging.CRITICAL)


class QmpTimeout(TimeoutError):
    """The peer did not answer within the deadline."""


class QmpCommandError(RuntimeError):
    """The peer answered with an error (``{"error": ...}``)."""


class SyncQmp:
    """One connection to a QMP monitor (greeting=True) or a guest agent
    socket (greeting=False), used from synchronous code."""

    def __init__(self, path: str, *, greeting: bool, name: str = "qmp"):
        import asyncio

        self.path = path
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"isobench-{name}", daemon=True)
        self._thread.start()
        self._client = self._call_soon(self._make_client, name, greeting)
        self._connected = False

    @staticmethod
    def _make_client(name: str, greeting: bool) -> QMPClient:
        from qemu.qmp import QMPClient

        client = QMPClient(name, readbuflen=READ_LIMIT)
        client.await_greeting = greeting
        client.negotiate = greeting
        return client

    def _call_soon(self, fn, *args):
        done = threading.Event()
        box: list = []

        def run():
            try:
                box.append((True, fn(*args)))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                box.append((False, exc))
            done.set()

        self._loop.call_soon_threadsafe(run)
        if not done.wait(10):
            raise QmpTimeout("event loop did not answer")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def _run(self, coro, timeout: float) -> Any:
        import asyncio

        fut = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, timeout), self._loop)
        try:
            return fut.result(timeout + 5)
        except TimeoutError:
            fut.cancel()
            raise QmpTimeout(f"no answer from {self.path} within {timeout:g} s") from None

    def connect(self, timeout: float) -> None:
        self._run(self._client.connect(self.path), timeout)
        self._connected = True

    def execute(self, command: str, arguments: dict | None = None, timeout: float = 30) -> Any:
        """Run one command; returns its ``return`` value."""
        from qemu.qmp.error import QMPError

        try:
            return self._run(self._client.execute(command, arguments), timeout)
        except QMPError as exc:
            # ExecuteError carries the peer's error; others are protocol trouble
            raise QmpCommandError(f"{command}: {exc}") from None

    def events(self):
        """The client's event listener interface (QMP monitor only)."""
        return self._client

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._connected:
            try:
                self._run(self._client.disconnect(), 5)
            except Exception:  # noqa: BLE001 - the peer may be gone already
                pass
            self._connected = False
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()
