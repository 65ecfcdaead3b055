"""Reading a file a user names (a study, a run export, a host's facts):
only a regular file, only up to a cap, never blocking. A FIFO would hang
the reader and /dev/zero would fill memory; both are refused before a
byte is read."""

from __future__ import annotations

import os
import stat


class BoundedReadError(ValueError):
    """str() is the one-line message."""


def read_bounded(path: str | os.PathLike, cap: int, what: str) -> bytes:
    """The bytes of regular file PATH, refused (one line naming PATH) when
    it is not a regular file or holds more than CAP bytes."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BoundedReadError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BoundedReadError(
                f"{path}: not a regular file; a {what} must be a file on disk (not a pipe, device or directory)"
            )
        if st.st_size > cap:
            raise BoundedReadError(
                f"{path}: {st.st_size:,} bytes, more than a {what} may hold ({cap:,}); is it the right file?"
            )
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:  # grew while read
            raise BoundedReadError(f"{path}: more than a {what} may hold ({cap:,} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise BoundedReadError(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
