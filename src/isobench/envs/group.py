"""N identical instances of one environment: processes on the host, Docker
containers or VMs (a study's ``instances = N``).

To a single-instance workload a group is its first member: exec, paths,
endpoint, startup measurement and the rest go there. Multi-instance workloads
(workloads/multi.py) take ``instances()`` (the members) and drive them all at once.

Starting a group is also the density measurement: members start one after
another, and before the first and after each one the host's MemAvailable is
read with the page cache dropped (so only what the instances hold counts),
with each VM's QEMU proportional set size (PSS) beside it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from isobench.core.errors import EnvironmentError_
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.host.hostinfo import meminfo


def parse_pss(smaps_rollup: str) -> int | None:
    """The Pss line of /proc/PID/smaps_rollup, in bytes."""
    for line in smaps_rollup.splitlines():
        if line.startswith("Pss:"):
            parts = line.split()
            return int(parts[1]) * 1024
    return None


def pss_bytes(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return parse_pss(fh.read())
    except OSError:
        return None


def drop_caches() -> bool:
    """sync, then drop the page cache, dentries and inodes (root only)."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def available_after_drop() -> tuple[int, bool]:
    dropped = drop_caches()
    time.sleep(0.2)  # let reclaim settle before reading
    return meminfo().get("MemAvailable", 0), dropped


def density_points(available_before: int, steps: list[dict]) -> list[dict]:
    """Per started instance N: memory the first N hold (MemAvailable drop),
    the mean per instance, and that instance's startup time. Pure."""
    out = []
    for n, step in enumerate(steps, start=1):
        used = available_before - step["mem_available"]
        point = {"n": n, "startup_s": step["startup_s"], "mem_used_bytes": used, "mem_per_instance_bytes": used / n}
        if step.get("vmm_pss_bytes") is not None:
            point["vmm_pss_bytes"] = step["vmm_pss_bytes"]
        out.append(point)
    return out


@dataclass
class InstanceGroup(Environment):
    members: list[Environment] = field(default_factory=list)
    kind: str = "group"
    _density: list[dict] = field(default_factory=list)
    _density_note: str = ""

    def __post_init__(self) -> None:
        if not self.members:
            raise ValueError("an instance group needs at least one member")
        self.kind = self.members[0].kind

    @property
    def first(self) -> Environment:
        return self.members[0]

    def start(self) -> None:
        before, dropped = available_after_drop()
        steps = []
        try:
            for member in self.members:
                member.pre_start()  # one-off work (disk, KVM probe) is not startup
                t0 = time.perf_counter()
                member.start()
                startup = time.perf_counter() - t0
                available, _ = available_after_drop()
                pid = member.vmm_pid
                steps.append(
                    {"startup_s": startup, "mem_available": available, "vmm_pss_bytes": pss_bytes(pid) if pid else None}
                )
        except BaseException:
            try:
                self.stop()
            except EnvironmentError_:
                pass  # the start's own error matters more; the run's teardown sweeps the rest
            raise
        self._density = density_points(before, steps)
        self._density_note = (
            "page cache dropped before each reading"
            if dropped
            else "page cache NOT dropped (not root): figures include cache growth"
        )

    def counters(self) -> dict[str, float]:
        """The members' own counters, summed (same names)."""
        out: dict[str, float] = {}
        for member in self.members:
            for k, v in member.counters().items():
                out[k] = out.get(k, 0.0) + v
        return out

    def discards_contents(self) -> bool:
        return all(member.discards_contents() for member in self.members)

    def stop(self) -> None:
        problems = []
        for member in reversed(self.members):
            try:
                member.stop()
            except Exception as exc:  # noqa: BLE001 - one failed stop must not keep the others running
                problems.append(" ".join(str(exc).split())[:150])
        if problems:  # the runner's teardown reports them and remembers the leftovers
            raise EnvironmentError_("; ".join(problems))

    def health(self, timeout: float = 10) -> str | None:
        """The first member that stopped answering, if any."""
        for member in self.members:
            problem = member.health(timeout)
            if problem is not None:
                return problem
        return None

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        return self.first.exec(argv, timeout, cwd)

    def write_file(self, path: str, content: bytes) -> None:
        self.first.write_file(path, content)

    @property
    def paths(self) -> Paths:
        return self.first.paths

    def instances(self) -> list[Environment]:
        return list(self.members)

    def measure_startup(self, timeout: float) -> dict[str, float] | None:
        return self.first.measure_startup(timeout)

    def expose(self, host_addr: str, ports: list[tuple[int, str]]) -> None:
        super().expose(host_addr, ports)
        for member in self.members:
            member.expose(host_addr, ports)

    def server_bind_addr(self) -> str:
        return self.first.server_bind_addr()

    def endpoint(self, port: int, proto: str = "tcp") -> tuple[str, int]:
        return self.first.endpoint(port, proto)

    def facts(self) -> dict:
        facts = self.first.facts()
        facts["instances"] = len(self.members)
        facts["members"] = [m.name for m in self.members]
        pinning = [m.facts().get("pinning") for m in self.members]
        if any(pinning):
            facts["pinning"] = pinning
        facts["density"] = list(self._density)
        facts["density_note"] = self._density_note
        return facts


def members_of(env: Environment) -> list[Environment]:
    """The instances a multi-instance workload drives: a group's members, or
    the environment itself."""
    return env.instances()
