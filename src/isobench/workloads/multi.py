"""Multi-instance server workloads: one server per instance of the
environment (envs/group.py), all driven at once from the client host.

Instance i (0-based) listens on ``base_port + i`` everywhere, so N native
servers can share the host's address; every instance publishes every
instance's port (Docker bridge), which costs a few unused proxies but keeps
the environments ignorant of workloads. Servers start before each measured
run and stop after it, like single-instance servers.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import ClassVar

from isobench.core.metric import PER_INSTANCE, Metric, instance_metric
from isobench.envs.base import Environment
from isobench.envs.group import members_of
from isobench.host import counters
from isobench.workloads.base import Measurement, WorkloadError
from isobench.workloads.server import ServerWorkload, servers_dir


def per_instance_metrics(
    name: str, unit: str, higher_is_better: bool, n: int, describe: Callable[[int], str]
) -> list[Metric]:
    """Instance 1..n's own value of metric `name` (describe(i) says what it is)."""
    return [
        Metric(instance_metric(i, name), unit, higher_is_better, describe(i), role=PER_INSTANCE)
        for i in range(1, n + 1)
    ]


def per_instance_values(name: str, values: list[float]) -> dict[str, float]:
    """The values of per_instance_metrics, in instance order."""
    return {instance_metric(i, name): v for i, v in enumerate(values, start=1)}


def in_parallel(members: list[Environment], fn: Callable[[int, Environment], object]) -> None:
    """fn(index, member) for every member at once (each its own container or
    guest: starting four stacks one after another left the other guests
    idle). Every call ends before this returns, so a caller's cleanup never
    races a start; the first error (in member order) is raised."""
    if len(members) <= 1:
        for i, m in enumerate(members):
            fn(i, m)
        return
    pool = ThreadPoolExecutor(max_workers=len(members))
    try:
        futures = [pool.submit(fn, i, m) for i, m in enumerate(members)]
        wait(futures)
    finally:
        pool.shutdown(wait=True)  # after a Ctrl-C too: the calls are bounded, and a cleanup must not race them
    for f in futures:
        f.result()


class MultiServerWorkload(ServerWorkload):
    base_port: ClassVar[int] = 0

    def max_instances(self) -> int:
        """The most instances any case drives (ports are reserved for them)."""
        raise NotImplementedError

    def __init__(self, params, host):
        super().__init__(params, host)
        # its ports depend on its params: set per instance over the class's ()
        self.ports = tuple((self.base_port + i, "tcp") for i in range(self.max_instances()))  # type: ignore[misc]
        self._current: int | None = None  # the instance the single-server lifecycle is acting on

    # -- to implement ------------------------------------------------------------
    def instance_argv(self, case: str, env: Environment, index: int) -> list[str]:
        """The server's arguments (after server_exe) for instance `index` inside `env`."""
        raise NotImplementedError

    def instance_count(self, case: str) -> int:
        """How many instances this case drives."""
        raise NotImplementedError

    def driver_argv(self, case: str, endpoints: list[tuple[str, int]]) -> list[str]:
        """The client host's load generator against every instance's (address, port)."""
        raise NotImplementedError

    # -- one measured run ---------------------------------------------------------
    def run(self, case: str, env: Environment) -> Measurement:
        """Start the case's instances, run the driver once on the client host
        against all of them, stop them."""
        n = self.instance_count(case)
        self.start_instances(env, case, n)
        try:
            argv = self.driver_argv(case, self.endpoints(env, n))
            with counters.around(env.counters) as box:  # the driver's window only
                run = self._client().run(argv, timeout=self.client_timeout(case) + 30)
                box["extra"] = window = {"cpu_window": {"client_cpu_s": run.cpu_s}}
            if not run.result.ok:
                raise WorkloadError(run.result.describe(), run.result)
            m = self.parse(case, run.result)
            if counters.EXTRA_KEY in window:
                m.extra[counters.EXTRA_KEY] = window[counters.EXTRA_KEY]
            return m
        finally:
            self.stop_instances(env, n)

    # -- instances ----------------------------------------------------------------
    def instances(self, env: Environment, n: int) -> list[Environment]:
        members = members_of(env)
        if len(members) < n:
            raise WorkloadError(
                f"{self.name} drives {n} instances but environment {env.name} has "
                f"{len(members)}: set instances = {n} in [environments.{env.name}]"
            )
        return members[:n]

    def endpoints(self, env: Environment, n: int) -> list[tuple[str, int]]:
        return [m.endpoint(self.base_port + i) for i, m in enumerate(self.instances(env, n))]

    def _instance_files(self, member: Environment, index: int) -> tuple[str, str]:
        d = servers_dir(member)
        return posixpath.join(d, f"{self.name}-{index}.pid"), posixpath.join(d, f"{self.name}-{index}.log")

    def start_instances(self, env: Environment, case: str, n: int) -> None:
        """Start instance 0..n-1 and wait until the client host reaches each."""
        started = []
        try:
            for i, member in enumerate(self.instances(env, n)):
                self._start_one(member, case, i)
                started.append((member, i))
        except BaseException:
            for member, i in started:
                self._stop_one(member, i)
            raise

    def stop_instances(self, env: Environment, n: int) -> None:
        errors = []
        for i, member in enumerate(self.instances(env, n)):
            try:
                self._stop_one(member, i)
            except WorkloadError as exc:
                errors.append(str(exc))
        if errors:
            raise WorkloadError("; ".join(errors))

    # The single-instance lifecycle (server.py) runs with this instance's
    # files, argv and port, so its readiness and stop logic is reused as is.
    def _start_one(self, member: Environment, case: str, index: int) -> None:
        self._current = index
        try:
            self.start_server(member, case)
        finally:
            self._current = None

    def _stop_one(self, member: Environment, index: int) -> None:
        self._current = index
        try:
            self.stop_server(member)
        finally:
            self._current = None

    def _files(self, env: Environment) -> tuple[str, str]:
        return self._instance_files(env, self._current or 0)

    def server_argv(self, case: str, env: Environment) -> list[str]:
        return self.instance_argv(case, env, self._current or 0)

    def server_port(self, case: str) -> tuple[int, str]:
        return self.base_port + (self._current or 0), "tcp"
