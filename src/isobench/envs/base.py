"""The narrow interface every environment kind implements.

An environment starts, runs argv lists (never shell strings), exposes two
scratch directories, reports facts and stops. It knows nothing about
workloads.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExecResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying why a command failed, for errors and the store."""
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f} s: {' '.join(self.argv)}"
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
        return f"exit {self.returncode}: {' '.join(self.argv)}: {tail[0]}"


class EnvironmentError_(RuntimeError):
    """An environment could not be started or used."""


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

    def __enter__(self) -> "Environment":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
