"""The narrow interface every environment kind implements.

An environment starts, runs argv lists (never shell strings), exposes two
scratch directories, reports facts and stops. It knows nothing about
workloads. It keeps the validated, frozen spec it was made from and reads
its options from it by attribute: each option's default is the spec
model's, nowhere else. A plain dict of them exists only in its facts.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from isobench.core.errors import EnvironmentError_
from isobench.core.gate import PYTHON, SideGate
from isobench.core.proc import ExecResult
from isobench.core.strictmodel import StrictModel
from isobench.host.packages import library_names


class EnvSpec(StrictModel):
    """Base of every kind's study-file model. Each subclass declares
    ``kind: Literal["<name>"] = "<name>"`` and ``instances: int = INSTANCES``
    itself (field order is the order of the stored options)."""

    if TYPE_CHECKING:  # what every subclass declares, for the type checker only (no field here)
        kind: str = ""
        instances: int = 1


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
    # the study's spec of this environment (each kind narrows the type and
    # defaults to its own model's defaults); never a dict
    spec: EnvSpec = field(default_factory=EnvSpec)

    kind: str = "abstract"
    # spec fields that describe the study's group, not one environment: left
    # out of the options recorded in facts()
    unrecorded: ClassVar[frozenset[str]] = frozenset({"kind", "instances"})
    # set by expose(): the client host's bridge address and the servers' ports
    _bench_addr: str | None = field(default=None, init=False, repr=False, compare=False)
    _bench_ports: list[tuple[int, str]] = field(default_factory=list, init=False, repr=False, compare=False)
    # a duet's gate while its sample runs (run/duet.py): exec() holds the
    # timed command at it and lets fillers through it, in kinds that can
    gate: SideGate | None = field(default=None, init=False, repr=False, compare=False)
    # the command a sample times, while it runs (run/measure.take): a kind
    # whose exec() can end whatever that command leaves (a daemon it forked,
    # a child holding its pipes) ends it with the sample (native: a cgroup)
    timed: list[str] | None = field(default=None, init=False, repr=False, compare=False)
    _gate_said: str | None = field(default=None, init=False, repr=False, compare=False)
    # whether this kind's exec() holds the timed command at `gate` (a VM's agent has no stdin to hold)
    holds_at_gate: ClassVar[bool] = False

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

    # -- capabilities: every kind answers; the defaults say "not here" -------
    def pre_start(self) -> None:  # noqa: B027 - a capability whose default is nothing to do
        """One-off work before start() that is not startup (a VM's disk, the
        KVM probe), so a group's density timing counts start() alone."""

    def provide_packages(self, names: list[str], log: Callable[[str], None]) -> None:  # noqa: B027
        """Debian packages the study adds to isobench's own (a command
        workload's ``packages``). The kinds that run the image have them
        already: while the study runs they are part of its recipe
        (images.study_packages). A kind that runs the host's own programs
        installs those the host lacks."""

    def discards_contents(self) -> bool:
        """Whether stop() takes everything the workloads started or wrote
        inside with it (a container and its volume, a guest and its disks):
        the runner then skips their own cleanup there, which would only delay
        the stop (a command round trip each). Not where they outlive it: the
        host's processes and directories."""
        return False

    @property
    def vmm_pid(self) -> int | None:
        """The host process holding a guest's memory (a group reads its PSS
        for density); None when there is none."""
        return None

    def place(self, cpus: tuple[int, ...] | None) -> None:
        """Run everything that follows on these host CPUs: one side of a duet
        (run/duet.py), the samples of both sides on disjoint CPUs. None puts
        the environment back where its own spec places it. A kind whose work
        cannot be kept on chosen CPUs raises; its EnvKind.duet_problems says
        so before anything starts."""
        raise EnvironmentError_(f"{self.name}: a {self.kind} environment cannot be placed on chosen host CPUs")

    def gate_problem(self) -> str:
        """Why this environment cannot hold a command at a duet's gate ("" when
        it can: its kind's exec() honours `gate`, and the gate's program runs
        in it, asked once). One that cannot falls back: its command starts
        when the other side is released, and the duet's record and the
        answer say so and how far apart the starts were."""
        if not self.holds_at_gate:
            return f"a {self.kind} environment has no gate: its command starts at the release"
        if self._gate_said is None:
            r = self.exec([PYTHON, "-I", "-S", "-c", ""], timeout=30)
            self._gate_said = "" if r.ok else f"{PYTHON} does not run in it ({r.describe()[:160]})"
        return self._gate_said

    def move(self, cpus: tuple[int, ...]) -> str:
        """place(), while a sample runs: a duet swaps its sides' CPUs many
        times a second, so a kind with a faster way than place() to move
        everything it runs overrides this (a container's cgroup). Returns
        how it moved, as the duet's record says it."""
        self.place(cpus)
        return f"{self.kind} placement"

    def counters(self) -> dict[str, float]:
        """This environment's own cumulative counters (isobench.host.counters
        names: cgroup.*, vmm.*), read before and after every sample; empty
        when the kind has nothing beyond the host's (native)."""
        return {}

    def instances(self) -> list[Environment]:
        """What a multi-instance workload drives: a group's members, or the
        environment itself."""
        return [self]

    def health(self, timeout: float = 10) -> str | None:
        """Is the environment still there to measure in? None when it is;
        otherwise one line saying what stopped answering (the engine, the
        guest, its agent). Asked after a failed sample, so a dead engine
        or guest is told apart from a failing workload; must return within
        about `timeout` seconds. Default: nothing beyond the host to lose."""
        return None

    def measure_startup(self, timeout: float) -> dict[str, float] | None:
        """Start a fresh instance configured like this one, to ready, and
        remove it: {"ready_s": ...} plus kind-specific timings (the startup
        workload's sample). None: this kind cannot measure it."""
        return None

    # -- the benchmark network (client host); see clienthost.py -----------------
    def expose(self, host_addr: str, ports: list[tuple[int, str]]) -> None:
        """Before start(): the host's address on the client host's bridge and
        the (port, "tcp"|"udp") servers will listen on, so environments that
        must publish ports (Docker bridge) can do it when they start."""
        self._bench_addr = host_addr
        self._bench_ports = list(ports)

    @property
    def attached(self) -> bool:
        """Is a client host attached (expose() called)?"""
        return self._bench_addr is not None

    @property
    def bench_addr(self) -> str:
        if self._bench_addr is None:
            raise EnvironmentError_(f"{self.name}: no client host attached (expose() not called)")
        return self._bench_addr

    @property
    def bench_ports(self) -> list[tuple[int, str]]:
        """The (port, proto) servers will listen on; empty when not attached."""
        return list(self._bench_ports)

    def server_bind_addr(self) -> str:
        """The address a server inside binds to. Default: the environment
        shares the host's network, so bind the benchmark address only."""
        return self.bench_addr

    def endpoint(self, port: int, proto: str = "tcp") -> tuple[str, int]:
        """Where the client host reaches a server listening on `port` inside.
        Default: the host's benchmark address, same port."""
        return self.bench_addr, port

    def recorded_options(self) -> dict:
        """The options recorded in facts() (stored runs and reports read
        them): the spec's fields but `unrecorded`, in the spec's field order.
        Kinds add what they decide per instance (where it is pinned)."""
        return self.spec.model_dump(exclude=set(self.unrecorded))

    def facts(self) -> dict:
        """What this environment is, recorded with every result."""
        return {"kind": self.kind, "options": self.recorded_options()}

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

    def library_versions(self, packages: list[str]) -> dict[str, str]:
        """Versions of the libraries ``packages`` depend on directly (libc6
        and liblzma5 under pixz), as installed in the environment: the same
        tool can run other library code on each side (results/versions.py
        notes it). Alternatives not installed are left out."""
        if not packages:
            return {}
        r = self.exec(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}\n", *packages], timeout=30)
        found = self.package_versions(library_names(r.stdout)) if r.ok else {}
        return {name: version for name, version in found.items() if version != "not installed"}

    def __enter__(self) -> Environment:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
