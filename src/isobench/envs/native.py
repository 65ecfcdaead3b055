"""The host itself: the baseline every other environment is compared to."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from isobench.core.errors import EnvironmentError_
from isobench.core.gate import SideGate
from isobench.core.gatedproc import run_gated
from isobench.core.owner import Keeper
from isobench.core.proc import ExecResult, move_pids, move_tree, run_argv, run_sample, tree
from isobench.core.workspace import DATA_ROOT, TMP_ROOT, of_run
from isobench.envs.base import Environment, Paths
from isobench.envs.kinds import INSTANCES, EnvKind, EnvProbe, EnvSpec, Pin, placed_duet_problems
from isobench.envs.pinning import placement
from isobench.host import samplecgroup

TREE_TTL_S = 1.0  # a duet's native side: how often move() walks /proc


class NativeSpec(EnvSpec):
    kind: Literal["native"] = "native"
    instances: int = INSTANCES
    pin: Pin = False


class NativeKind(EnvKind):
    name = "native"
    spec = NativeSpec
    presets = {"native": {}}
    rank = 0
    installs_on_host = True

    def make(self, name, spec, *, run_id, host, image, index) -> Environment:
        return NativeEnvironment(name=name, spec=spec, run_id=run_id, cpu=placement(spec.pin, index))

    def duet_problems(self, spec, side_cpus: int) -> list[tuple[str, str]]:
        return placed_duet_problems(spec.instances, {"pin": spec.pin})

    def clean(self, run_id: str | None, keeper: Keeper) -> list[str]:
        """The sample cgroups a run left (isobench/RUN-ENV.N): their processes killed, then removed."""
        removed = []
        for name, dirs in samplecgroup.leftovers().items():
            if run_id is not None and not of_run(name, run_id):
                continue
            if keeper.keeps_run(f"cgroup isobench/{name}", partial(of_run, name)):
                continue
            if not samplecgroup.remove_dirs(dirs):
                removed.append(f"cgroup isobench/{name}")
        return removed

    def probe(self) -> EnvProbe:
        from isobench.host.facts import host_facts
        from isobench.host.hostinfo import cpu_model

        facts = host_facts()
        return EnvProbe("native", True, f"{cpu_model()}, {facts['cores']} cores, kernel {facts['kernel']}")


@dataclass
class NativeEnvironment(Environment):
    spec: NativeSpec = field(default_factory=NativeSpec)
    kind: str = "native"
    run_id: str = "adhoc"
    # the host CPUs pin gave this instance (taskset -c: everything it runs
    # stays on them); None: not pinned
    cpu: str | None = None
    # pids of the commands running now: place() moves them too (a duet
    # swaps its sides' CPUs while their samples run)
    _live: set[int] = field(default_factory=set, repr=False)
    # move()'s last walk of their trees: (when, {live pid: its tree})
    _walked: tuple[float, dict[int, list[int]]] = field(default_factory=lambda: (0.0, {}), repr=False)
    # the cgroups of the commands a duet's gate runs now: a move is one cpuset write each
    _groups: dict[int, samplecgroup.SampleCgroup] = field(default_factory=dict, repr=False)
    _made: int = field(default=0, repr=False)

    holds_at_gate = True  # a pipe the harness holds (core/gatedproc.py)

    def __post_init__(self) -> None:
        slug = f"{self.run_id}-{self.name}"
        # data on the host's disk, tmp on the host's /dev/shm tmpfs
        self._paths = Paths(data=os.path.join(DATA_ROOT, slug), tmp=os.path.join(TMP_ROOT, slug))
        self._own_cpu = self.cpu  # where pin put it, when place() lets it go

    @property
    def paths(self) -> Paths:
        return self._paths

    def start(self) -> None:
        os.makedirs(self._paths.data, exist_ok=True)
        os.makedirs(self._paths.tmp, exist_ok=True)

    def provide_packages(self, names: list[str], log: Callable[[str], None]) -> None:
        from isobench.host.aptplan import still_safe
        from isobench.host.packages import InstallError, install_on_host, to_install
        from isobench.host.prepare import needed_packages

        missing = to_install(names)  # or older than the image's: the sameness check compares versions
        if not missing:
            return
        log(f"{self.name}: installing the study's {' '.join(missing)} on this host (apt-get)")
        try:  # the user agreed to apt's plan before the run (run/hostpackages.py); fresh lists may change it
            install_on_host(missing, check=lambda: still_safe(missing, needed_packages()))
        except InstallError as exc:
            raise EnvironmentError_(f"{self.name}: cannot install the study's packages: {exc}") from None

    def place(self, cpus: tuple[int, ...] | None) -> None:
        # taskset on every command it runs next, as pin does; the running
        # ones (and their children) moved with sched_setaffinity
        self.cpu = self._own_cpu if cpus is None else ",".join(map(str, cpus))
        target = set(os.sched_getaffinity(0)) if self.cpu is None else {int(c) for c in self.cpu.split(",")}
        for pid in list(self._live):
            move_tree(pid, target)

    def move(self, cpus: tuple[int, ...]) -> str:
        # a duet's swap, ten a second: a gated command's cgroup is one cpuset
        # write (as a container's); anything else is walked in /proc at most
        # every TREE_TTL_S (3.4 ms with 83 processes here, work on whichever
        # side's CPU the harness runs) and moved thread by thread
        self.cpu = ",".join(map(str, cpus))
        hows = []
        for group in list(self._groups.values()):
            group.set_cpus(self.cpu)
            hows.append(group.how)
        if self._live:
            now = time.monotonic()
            if now - self._walked[0] > TREE_TTL_S or set(self._walked[1]) != self._live:
                self._walked = (now, {pid: tree(pid) for pid in list(self._live)})
            for pids in self._walked[1].values():
                move_pids(pids, set(cpus))
            hows.append("sched_setaffinity per thread")
        return " + ".join(hows) or "nothing running to move"

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        if self.gate is not None and self.gate.claim(argv):
            return self._gated(argv, timeout, cwd, self.gate)
        timed = self.timed is not None and list(argv) == self.timed
        if timed:
            self.timed = None  # once: a repeat of it runs plain
        if self.cpu is not None:  # pinned: everything it runs stays on its core
            argv = ["taskset", "-c", self.cpu, *argv]
        if timed:
            return self._sample(argv, timeout, cwd)
        return run_argv(argv, timeout, cwd, live=self._live, own_session=True)

    def _sample(self, argv: list[str], timeout: float, cwd: str | None) -> ExecResult:
        """A one-at-a-time sample's command, in a cgroup that only tracks it
        (host/samplecgroup.py): it ends when its process does, not when a
        child it left lets go of its pipes (as a container's exec), and
        whatever it left (a daemon it forked) is killed with the cgroup."""
        self._made += 1
        try:
            group = samplecgroup.SampleCgroup(f"{self.run_id}-{self.name}.{self._made}", None, track_only=True)
        except OSError:  # no cgroup here: its session is still ended with it
            return run_sample(argv, timeout, cwd, live=self._live)
        try:
            return run_sample(argv, timeout, cwd, live=self._live, join=group.procs_files)
        finally:
            group.remove()

    def _gated(self, argv: list[str], timeout: float, cwd: str | None, gate: SideGate) -> ExecResult:
        """argv held at the duet's gate, standing in cgroups of its own as a
        container's command does; whatever it leaves running is killed with
        them once its fillers stop."""
        self._made += 1
        try:
            group = samplecgroup.SampleCgroup(f"{self.run_id}-{self.name}.{self._made}", self.cpu)
        except OSError as exc:  # no cgroups to stand in: pinned by taskset, moved by the walk
            gate.standing = f"the harness's cgroups ({exc})"
            return run_gated(argv, timeout, cwd, gate, [], pin=self.cpu, live=self._live)
        self._groups[self._made] = group

        def done(key: int = self._made) -> None:
            self._groups.pop(key, None)
            group.remove()

        return run_gated(argv, timeout, cwd, gate, group.procs_files, done=done)

    def recorded_options(self) -> dict:
        options = super().recorded_options()
        if self._own_cpu is not None:
            options["cpu"] = self._own_cpu
        return options

    def facts(self) -> dict:
        facts = super().facts()
        if self._own_cpu is not None:
            facts["pinning"] = {"host_cpu": self._own_cpu, "how": "taskset"}
        return facts

    def health(self, timeout: float = 10) -> str | None:
        """The host itself: if it stopped answering, isobench stopped too."""
        return None

    def write_file(self, path: str, content: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(content)

    def measure_startup(self, timeout: float) -> dict[str, float]:
        """Spawning a process (``true``) until it has exited."""
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True, timeout=30, stdin=subprocess.DEVNULL)
        return {"ready_s": time.perf_counter() - t0}

    def stop(self) -> None:
        for group in list(self._groups.values()):  # a duet's fillers never stopped
            group.remove()
        self._groups.clear()
        shutil.rmtree(self._paths.data, ignore_errors=True)
        shutil.rmtree(self._paths.tmp, ignore_errors=True)
