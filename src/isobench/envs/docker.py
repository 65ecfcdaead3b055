"""Docker Engine through its API: one long-lived container per environment,
workload commands run in it with exec (sharing its cgroup, network and
storage)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors
from requests.exceptions import ReadTimeout

from isobench.core.dockerclient import engine, engine_or_none, first_line, remove_labelled, remove_retrying
from isobench.core.errors import EnvironmentError_
from isobench.core.owner import Keeper, owner_labels
from isobench.core.proc import KILL_GRACE_S, ExecResult, bounded, bounded_timed_out
from isobench.core.workspace import GUEST_DATA_DIR, GUEST_TMP_DIR, LABEL
from isobench.envs import docker_isolation as isolation
from isobench.envs import oom
from isobench.envs import runtimes as rt
from isobench.envs.base import Environment, Paths
from isobench.envs.docker_held import held_exec
from isobench.envs.docker_spec import DockerSpec
from isobench.envs.kinds import EnvKind, EnvProbe, placed_duet_problems
from isobench.envs.pinning import placement
from isobench.host.counters import cgroup_cpu, set_cgroup_cpuset
from isobench.host.hostinfo import Finding

DATA_DIR, TMP_DIR = GUEST_DATA_DIR, GUEST_TMP_DIR


class DockerKind(EnvKind):
    name = "docker"
    spec = DockerSpec
    presets = {
        "docker-nat": {"network": "bridge", "storage": "overlay"},
        "docker-host": {"network": "host", "storage": "volume"},
        # docker-nat under another OCI runtime
        "docker-crun": {"network": "bridge", "storage": "overlay", "runtime": "crun"},
        "docker-gvisor": {
            "network": "bridge",
            "storage": "overlay",
            "runtime": "runsc",
            "gvisor_platform": rt.GVISOR_DEFAULT_PLATFORM,
        },
        "docker-placebo": isolation.PLACEBO,  # the least isolation the engine allows
    }
    placebo = "docker-placebo"
    # explain's settings; nearest the host: the placebo's (no namespace, profile or limit of its own)
    settings = {
        "network": ("network",),
        "storage": ("storage",),
        "seccomp": ("seccomp",),
        "apparmor": ("apparmor",),
        "pid": ("pid",),
        "ipc": ("ipc",),
        "runtime": ("runtime", "gvisor_platform"),  # a platform is runsc's alone: it moves with it
        "cpus": ("cpus",),
        "memory": ("memory_mb",),
    }
    host_side = "docker-placebo"
    rank = 10
    needs_image = True

    def make(self, name, spec, *, run_id, host, image, index) -> Environment:
        return DockerEnvironment(
            name=name,
            spec=spec,
            placed_cpuset=placement(spec.pin, index),
            run_id=run_id,
            image=image or "",
            host_cores=host.cores,
            host_mem_bytes=host.mem_bytes,
        )

    def duet_problems(self, spec, side_cpus: int) -> list[tuple[str, str]]:
        return placed_duet_problems(spec.instances, {"pin": spec.pin, "cpuset": spec.cpuset})

    def probe(self) -> EnvProbe:
        try:
            client = engine(timeout=10)
        except EnvironmentError_ as exc:
            return EnvProbe("docker", False, str(exc))
        info = client.info()
        bridge = "?"
        try:
            bridge = client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Subnet"]
        except Exception:  # noqa: BLE001 - informative only
            pass
        from isobench.images import image_tag

        tag = image_tag()
        have = bool(client.images.list(name=tag))
        lines = [
            f"Docker {info.get('ServerVersion')}, storage {info.get('Driver')}, bridge {bridge}, "
            f"image {tag} {'built' if have else 'not built yet (isobench images build)'}"
        ]
        for name, state in rt.states(client, tag if have else None).items():
            lines.append(f"runtime {name}: {state}")
        return EnvProbe("docker", True, "\n".join(lines))

    def host_readings(self) -> dict:
        client = engine_or_none(timeout=5)
        try:
            return {"driver": client.info().get("Driver") if client else None}
        except Exception:  # noqa: BLE001 - no engine is itself a finding
            return {"driver": None}

    def host_findings(self, r: dict) -> list[Finding]:
        drv = r.get("driver")
        fix = "" if drv == "overlay2" else "use overlay2 (what the studies measured as the union file system)"
        return [
            Finding(
                "docker storage driver",
                "ok" if drv == "overlay2" else ("warn" if drv else "info"),
                drv or "engine not reachable",
                fix,
            )
        ]

    def check(self, spec: DockerSpec) -> list[tuple[str, str]]:  # type: ignore[override]  # kind_of pairs them
        return isolation.engine_check(spec) + self._runtime_problems(spec)

    def _runtime_problems(self, spec: DockerSpec) -> list[tuple[str, str]]:
        if spec.runtime == "runc":
            return []  # Docker's own: its problems are the engine's, found at start
        client = engine_or_none()
        if client is None:
            return []  # the engine's own error comes at start
        from isobench.images import image_tag

        tag = image_tag()
        have = bool(client.images.list(name=tag))
        states = rt.states(client, tag if have else None)
        name = rt.engine_name(spec.runtime, spec.gvisor_platform)
        state = states.get(name, "unknown")
        if state.startswith("available") or state.startswith("registered, not probed"):
            return []
        working = [n for n, s in states.items() if s.startswith("available")] or ["runc"]
        if "runc" not in working:
            working.insert(0, "runc")
        return [("runtime", f"{name} cannot run here: {state}; this host has {', '.join(working)}")]

    def unsupported(self, spec: DockerSpec, workload: str) -> str | None:  # type: ignore[override]  # as check
        return rt.UNSUPPORTED.get(rt.engine_name(spec.runtime, spec.gvisor_platform), {}).get(workload)

    def clean(self, run_id: str | None, keeper: Keeper) -> list[str]:
        """Containers and volumes labelled isobench (with this run's id), but a live owner's."""
        return remove_labelled(f"{LABEL}.run={run_id}" if run_id else f"{LABEL}=1", keeper)


@dataclass
class DockerEnvironment(Environment):
    spec: DockerSpec = field(default_factory=DockerSpec)
    kind: str = "docker"
    run_id: str = "adhoc"
    image: str = ""
    host_cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    host_mem_bytes: int = 0
    placed_cpuset: str | None = None  # the host CPUs pin gave this instance of its group
    _container: Any = None  # the docker SDK's objects: it has no types
    _volume: Any = None
    _client: Any = None  # docker.DockerClient
    _published: dict = field(default_factory=dict)  # "port/proto" -> host port (bridge)
    _isolation: dict = field(default_factory=dict)  # as the engine reported it after start

    unrecorded = frozenset({"kind", "instances", "pin"})  # pin: recorded as the cpuset it gave
    holds_at_gate = True  # its exec's stdin is the gate's pipe (envs/docker_held.py)

    @property
    def container_name(self) -> str:
        return f"isobench-{self.run_id}-{self.name}"

    @property
    def engine_runtime(self) -> str:
        """The daemon.json runtime name every container of this environment uses."""
        return rt.engine_name(self.spec.runtime, self.spec.gvisor_platform)

    @property
    def cpuset(self) -> str | None:
        """The host CPUs its container may use: pin's, else the spec's (a spec has not both)."""
        return self.placed_cpuset if self.placed_cpuset is not None else self.spec.cpuset

    @property
    def paths(self) -> Paths:
        return Paths(data=DATA_DIR, tmp=TMP_DIR)

    def _labels(self) -> dict[str, str]:
        # the owner (this process) too: clean leaves the container while it runs
        return {LABEL: "1", f"{LABEL}.run": self.run_id, f"{LABEL}.env": self.name, **owner_labels(self.run_id)}

    def start(self) -> None:
        spec = self.spec
        self._client = engine()
        kwargs: dict = {
            "name": self.container_name,
            "labels": self._labels(),
            "detach": True,
            "command": ["sleep", "infinity"],
            # an init as PID 1 reaps exec'd processes that exit (servers
            # stopped by start-stop-daemon would otherwise stay zombies)
            "init": True,
            "network_mode": "host" if spec.network == "host" else "bridge",
            # tmpfs pages are only allocated when written; the cap just bounds it
            "tmpfs": {path: f"size={self._tmpfs_bytes()}" for path in isolation.tmpfs_dirs(spec, TMP_DIR, DATA_DIR)},
            "shm_size": "1g",  # MPI's shared-memory transport lives in /dev/shm
            "runtime": self.engine_runtime,
            **isolation.run_options(spec),
        }
        bridge = kwargs["network_mode"] == "bridge"
        if bridge and self.bench_ports:
            # NAT, as a remote client reaches a container: each server port
            # published on the benchmark address only, host port chosen by
            # Docker (the host's own servers may use the same port number)
            kwargs["ports"] = {f"{port}/{proto}": (self.bench_addr,) for port, proto in self.bench_ports}
        if spec.storage == "volume":
            self._volume = self._client.volumes.create(name=f"{self.container_name}-data", labels=self._labels())
            kwargs["volumes"] = {self._volume.name: {"bind": DATA_DIR, "mode": "rw"}}
        if self.cpuset:
            kwargs["cpuset_cpus"] = self.cpuset
        if spec.cpus:
            kwargs["nano_cpus"] = int(spec.cpus * 1e9)
        if spec.memory_mb:
            kwargs["mem_limit"] = f"{spec.memory_mb}m"
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        try:
            self._container = self._client.containers.run(self.image, **kwargs)
            self._container.reload()  # what the engine gave, read back once it runs, not only what was asked
            self._isolation = isolation.verified(spec, self._container.attrs, DATA_DIR)
        except (docker.errors.DockerException, EnvironmentError_) as exc:
            try:
                self.stop()
            except EnvironmentError_:
                pass  # the run's teardown sweeps this run's label and reports what stays
            raise EnvironmentError_(f"{self.name}: cannot start container from {self.image}: {exc}") from None
        if "ports" in kwargs:
            self._published = {k: int(v[0]["HostPort"]) for k, v in (self._container.ports or {}).items() if v}

    def server_bind_addr(self) -> str:
        # A bridge container's own namespace holds only its bridge address
        return "0.0.0.0" if self.spec.network != "host" else super().server_bind_addr()

    def endpoint(self, port: int, proto: str = "tcp") -> tuple[str, int]:
        if self.spec.network == "host":
            return super().endpoint(port, proto)
        published = self._published.get(f"{port}/{proto}")
        if published is None:
            raise EnvironmentError_(f"{self.name}: port {port}/{proto} was not published")
        return self.bench_addr, published

    def _tmpfs_bytes(self) -> int:
        if self.spec.tmpfs_mb:
            return self.spec.tmpfs_mb * 2**20
        return max(256 * 2**20, self.host_mem_bytes // 2)

    def exec(self, argv: list[str], timeout: float, cwd: str | None = None) -> ExecResult:
        if self._container is None:
            raise EnvironmentError_(f"{self.name}: not started")
        if self.gate is not None and self.gate.claim(argv):
            return held_exec(self._container.id, argv, timeout, cwd, self.gate)
        full = bounded(argv, timeout)
        kills_before = oom.read(self._container.id, with_limit=False)[0]
        start = time.perf_counter()
        # a client whose socket outlives the in-container bound, so the tool's
        # own timeout fires first and we still read its output
        client = docker.from_env(timeout=timeout + KILL_GRACE_S + 30)
        try:
            api = client.api
            exec_id = api.exec_create(self._container.id, full, workdir=cwd)["Id"]
            out, err = api.exec_start(exec_id, demux=True)
            code = api.exec_inspect(exec_id)["ExitCode"]
        except ReadTimeout:
            return ExecResult(
                argv, -9, "", "engine did not answer in time", time.perf_counter() - start, timed_out=True
            )
        except docker.errors.DockerException as exc:
            return ExecResult(argv, -1, "", f"engine error: {exc}", time.perf_counter() - start)
        finally:
            client.close()
        wall = time.perf_counter() - start
        stdout = (out or b"").decode("utf-8", errors="replace")
        stderr = (err or b"").decode("utf-8", errors="replace")
        timed_out = bounded_timed_out(code, wall, timeout)
        killed = oom.killed_line(kills_before, *oom.read(self._container.id)) if code == 137 and not timed_out else ""
        return ExecResult(
            argv, code if code is not None else -1, stdout, stderr, wall, timed_out=timed_out, killed=killed
        )

    def write_file(self, path: str, content: bytes) -> None:
        # The archive API (docker cp) cannot see tmpfs mounts, so stream the
        # bytes to dd's stdin over a hijacked exec socket instead.
        self.exec(["mkdir", "-p", os.path.dirname(path) or "/"], timeout=30)
        api = self._client.api
        exec_id = api.exec_create(
            self._container.id, bounded(["dd", f"of={path}", "bs=1M", "status=none"], 600), stdin=True
        )["Id"]
        sock = api.exec_start(exec_id, socket=True)._sock
        try:
            view = memoryview(content)
            for offset in range(0, len(view), 1 << 20):
                sock.sendall(view[offset : offset + (1 << 20)])
            sock.shutdown(socket.SHUT_WR)  # EOF for dd
            while sock.recv(65536):
                pass
        finally:
            sock.close()
        code = self._wait_exit(exec_id, timeout=60)
        if code != 0:
            raise EnvironmentError_(f"{self.name}: could not write {path} (dd exit {code})")

    def _wait_exit(self, exec_id: str, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self._client.api.exec_inspect(exec_id)
            if not info["Running"]:
                return info["ExitCode"]
            time.sleep(0.05)
        return None

    def counters(self) -> dict[str, float]:
        """The container's own CPU time from its cgroup (cpuacct on v1)."""
        return cgroup_cpu(self._container.id) if self._container is not None else {}

    def measure_startup(self, timeout: float) -> dict[str, float]:
        """Creating and starting a container of this environment's image, on
        its network mode and OCI runtime, until its process runs (the engine answers the
        start request once it does); removed at once."""
        client = engine(timeout)
        kwargs = {"network_mode": "host" if self.spec.network == "host" else "bridge", "runtime": self.engine_runtime}
        container = None
        try:
            t0 = time.perf_counter()
            container = client.containers.run(
                self.image, ["sleep", "infinity"], detach=True, labels=self._labels(), **kwargs
            )
            return {"ready_s": time.perf_counter() - t0}
        finally:
            if container is not None:
                container.remove(force=True)
            client.close()

    def health(self, timeout: float = 10) -> str | None:
        """The engine answers a ping and the container still runs. A
        stopped engine stops its containers too (no restart policy), so a
        restarted engine does not bring the environment back: the runner
        skips its cells and --resume measures them in a fresh container."""
        if self._container is None:
            return None
        try:
            client = docker.from_env(timeout=timeout)
            try:
                client.ping()
                state = client.api.inspect_container(self._container.id)["State"]
            finally:
                client.close()
        except docker.errors.NotFound:
            return f"{self.name}: its container {self.container_name} is gone"
        except Exception as exc:  # noqa: BLE001 - any failure to reach the engine means it is not answering
            return f"{self.name}: the Docker Engine stopped answering ({first_line(exc)})"
        if not state.get("Running"):
            return f"{self.name}: its container {self.container_name} stopped ({state.get('Status', '?')})"
        return None

    def place(self, cpus: tuple[int, ...] | None) -> None:
        # the container's cpuset, changed in place (docker update --cpuset-cpus):
        # every process in it, exec'd ones included, moves with it
        if self._container is None:
            raise EnvironmentError_(f"{self.name}: not started")
        target = self.cpuset if cpus is None else ",".join(map(str, cpus))
        if target is None:
            target = ",".join(map(str, sorted(os.sched_getaffinity(0))))
        try:
            self._container.update(cpuset_cpus=target)
        except docker.errors.DockerException as exc:
            if not self._write_cpuset(target):  # gVisor's runsc has no `update`; its cgroup moves it
                raise EnvironmentError_(f"{self.name}: cannot move the container to CPUs {target}: {exc}") from None

    def move(self, cpus: tuple[int, ...]) -> str:
        # its cgroup's cpuset written directly: 0.02 ms where `docker update` takes 16 ms
        how = self._write_cpuset(",".join(map(str, cpus)))
        if how:
            return how
        self.place(cpus)
        return "docker update"

    def _write_cpuset(self, cpulist: str) -> str:
        try:  # "" where this host has no cgroup file for it (another layout)
            return set_cgroup_cpuset(self._container.id, cpulist) if self._container is not None else ""
        except OSError as exc:
            raise EnvironmentError_(f"{self.name}: cannot move the container to CPUs {cpulist}: {exc}") from None

    def discards_contents(self) -> bool:
        return True  # stop() removes the container, its processes and its volume

    def stop(self) -> None:
        problems = [
            p
            for p in (
                remove_retrying(self._container, v=True) if self._container is not None else None,
                remove_retrying(self._volume) if self._volume is not None else None,
            )
            if p
        ]
        self._container = self._volume = None
        if problems:
            raise EnvironmentError_(f"{self.name}: " + "; ".join(problems))

    def recorded_options(self) -> dict:  # in the spec's field order, as this instance runs
        platform = rt.platform_used(self.spec.runtime, self.spec.gvisor_platform)
        return {**super().recorded_options(), "cpuset": self.cpuset, "gvisor_platform": platform}

    def facts(self) -> dict:
        facts = super().facts()
        facts.update({"image": self.image, "container": self.container_name})
        facts.update(isolation.facts(self.spec, self._isolation))
        if self.cpuset:
            facts["pinning"] = {"cpuset": self.cpuset, "how": "docker --cpuset-cpus"}
        if self._client is not None:
            info = self._client.info()
            facts.update(
                {
                    "storage_driver": info.get("Driver"),
                    "cgroup_version": info.get("CgroupVersion"),
                    "docker_version": info.get("ServerVersion"),
                    "security_options": info.get("SecurityOptions"),
                }
            )
            entry = (info.get("Runtimes") or {}).get(self.engine_runtime) or {}
            args = entry.get("runtimeArgs") or []
            facts["runtime"] = f"{rt.version(entry)}{' ' + ' '.join(args) if args else ''}"
            facts["runtime_info"] = {
                "name": self.engine_runtime,
                "path": entry.get("path"),
                "version": rt.version(entry),
                "runtime_args": args,
            }
        return facts
