"""The one way isobench talks to the local Docker Engine."""

from __future__ import annotations

from isobench.core.errors import EnvironmentError_

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
            "start it with scripts/install-host.sh (it starts dockerd)") from None


def engine_or_none(timeout: float = 30):
    """A client, or None when no engine answers (nothing to clean or report then)."""
    try:
        return engine(timeout)
    except EnvironmentError_:
        return None
