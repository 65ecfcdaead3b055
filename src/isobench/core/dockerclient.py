"""The one way isobench talks to the local Docker Engine."""

from __future__ import annotations

import select
import struct
import time
from collections.abc import Iterator

from isobench.core.errors import EnvironmentError_
from isobench.core.owner import Keeper

API_TIMEOUT_S = 60  # engine calls other than long execs


def engine(timeout: float = API_TIMEOUT_S):
    """A pinged client for the local engine, or a one-line error saying how to start it."""
    import docker
    import docker.errors
    from requests.exceptions import ConnectionError as RequestsConnectionError

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client
    except (docker.errors.DockerException, RequestsConnectionError) as exc:
        raise EnvironmentError_(
            f"Docker Engine is not reachable ({str(exc).splitlines()[0][:120]}); "
            "start it with scripts/install-host.sh (it starts dockerd)"
        ) from None


def engine_or_none(timeout: float = 30):
    """A client, or None when no engine answers (nothing to clean or report then)."""
    try:
        return engine(timeout)
    except EnvironmentError_:
        return None


REMOVE_TRIES = (0.5, 1.0, 2.0, 4.0)  # seconds between tries: a busy engine gets ~8 s more


def remove_retrying(item, **kwargs) -> str | None:
    """Force-remove a container or volume; None once it is gone, else the
    last error in one line. Removal can fail for a moment (the engine still
    tearing down the container's mounts), and a single failed call would
    leave it behind until the next run. An engine that does not answer at
    all is not waited for (the run's teardown reports it instead)."""
    import docker.errors

    error = "?"
    for pause in (*REMOVE_TRIES, None):
        try:
            item.remove(force=True, **kwargs)
            return None
        except docker.errors.NotFound:
            return None
        except docker.errors.APIError as exc:  # the engine answered "not now": worth another try
            error = first_line(exc)
        except Exception as exc:  # noqa: BLE001 - no answer at all (engine down, timed out): no use waiting
            return first_line(exc)
        if pause is not None:
            time.sleep(pause)
    return error


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:120]


def remove_labelled(label: str, keeper: Keeper) -> list[str]:
    """Remove the containers and volumes with this label (key=value) but
    those `keeper` keeps (their owner still runs); returns what went. One
    that cannot be removed must not keep the others: each is tried (with
    retries), and what failed is raised once at the end."""
    client = engine_or_none()
    if client is None:
        return []
    removed, failed = [], []
    for what, items, kwargs in (
        ("container", client.containers.list(all=True, filters={"label": label}), {"v": True}),
        ("volume", client.volumes.list(filters={"label": label}), {}),
    ):
        for item in items:
            labels = item.labels if what == "container" else item.attrs.get("Labels")
            if keeper.keeps_marked(f"{what} {item.name}", labels):
                continue
            problem = remove_retrying(item, **kwargs)
            if problem is None:
                removed.append(f"{what} {item.name}")
            else:
                failed.append(f"{what} {item.name}: {problem}")
    if failed:
        raise EnvironmentError_("could not remove " + "; ".join(failed))
    return removed


def exec_frames(sock, deadline: float) -> Iterator[tuple[int, bytes]]:
    """An attached exec's multiplexed stream (no tty): (1 stdout | 2 stderr,
    bytes) frames until the engine closes it; TimeoutError past `deadline`
    (time.monotonic), which the SDK's own reader has no notion of."""

    def exactly(n: int) -> bytes:
        got = b""
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise TimeoutError("the engine did not answer in time")
            chunk = sock.recv(n - len(got))
            if not chunk:
                return got
            got += chunk
        return got

    while True:
        header = exactly(8)
        if len(header) < 8:
            return
        stream, size = struct.unpack(">BxxxL", header)
        data = exactly(size)
        if data:
            yield stream, data
        if len(data) < size:
            return
