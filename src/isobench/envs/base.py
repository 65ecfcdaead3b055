"""The narrow interface every environment kind implements.

An environment starts, runs argv lists (never shell strings), exposes two
scratch directories, reports facts and stops. It knows nothing about
workloads.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field

from isobench.errors import EnvironmentError_
from isobench.proc import ExecResult


@dataclass
class Paths:
    """Where workloads may write inside the environment.

    data: on the environment's own storage (host disk, container overlay
    or volume, VM data disk). tmp: a RAM-backed directory (tmpfs).
    """

    data: str
    tmp: str


@dataclass
class Environment(abc.ABC):
    name: str  # instance name from the study, e.g. "docker-nat"
    options: dict = field(default_factory=dict)

    kind: str = "abstract"

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        """Run argv inside the environment; never raises on non-zero exit."""

    @abc.abstractmethod
    def write_file(self, path: str, content: bytes) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None:
        """Remove everything start() created; safe to call twice."""

    @property
    @abc.abstractmethod
    def paths(self) -> Paths: ...

    # -- the benchmark network (client host); see clienthost.py -----------------
    def expose(self, host_addr: str, ports: list[tuple[int, str]]) -> None:
        """Before start(): the host's address on the client host's bridge and
        the (port, "tcp"|"udp") servers will listen on, so environments that
        must publish ports (Docker bridge) can do it when they start."""
        self._bench_addr = host_addr
        self._bench_ports = list(ports)

    @property
    def bench_addr(self) -> str:
        addr = getattr(self, "_bench_addr", None)
        if addr is None:
            raise EnvironmentError_(f"{self.name}: no client host attached (expose() not called)")
        return addr

    def server_bind_addr(self) -> str:
        """The address a server inside binds to. Default: the environment
        shares the host's network, so bind the benchmark address only."""
        return self.bench_addr

    def endpoint(self, port: int, proto: str = "tcp") -> tuple[str, int]:
        """Where the client host reaches a server listening on `port` inside.
        Default: the host's benchmark address, same port."""
        return self.bench_addr, port

    def facts(self) -> dict:
        """What this environment is, recorded with every result."""
        return {"kind": self.kind, "options": dict(self.options)}

    def package_versions(self, packages: list[str]) -> dict[str, str]:
        """Versions of Debian packages as installed in the environment itself."""
        if not packages:
            return {}
        result = self.exec(["dpkg-query", "-W", "-f", "${Package}\t${Version}\n", *packages], timeout=30)
        versions = {}
        for line in result.stdout.splitlines():
            name, _, version = line.partition("\t")
            if name and version:
                versions[name] = version
        return {pkg: versions.get(pkg, "not installed") for pkg in packages}

    def __enter__(self) -> "Environment":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
