"""Client/server workloads: the server runs inside the environment under
test, the load generator on the client host (clienthost/).

A ServerWorkload adds to Workload:

* ``ports``: (port, "tcp"|"udp") the server listens on inside the
  environment, known before environments start so Docker bridge
  environments can publish them;
* ``server_argv(case, env)``: the server's foreground command, bound to
  ``env.server_bind_addr()`` (the benchmark address, or 0.0.0.0 inside a
  bridge container whose namespace has only its own address);
* ``client_argv(case, addr, port)``: the load generator, run in the client
  namespace against ``env.endpoint(port)``;
* ``parse(case, result)``: pure, on the generator's output.

Servers are started per measured run and stopped right after it
(``start_server`` / ``stop_server``), so only the environment being
measured has a server up, and native and host-network Docker can use the
same port in turn. They are started through ``start-stop-daemon``
(dpkg, so present on the host and in the image) via ``env.exec``, which
works the same in every environment kind: the daemon is detached, its
pidfile lives in the environment's tmp directory (``isobench clean`` kills
leftovers of native servers from it) and its output in a log beside it.

CPU cost is measured on the host over the client's run: /proc/stat deltas
(all CPUs, busy = user+nice+system+irq+softirq+steal) minus the load
generator's own CPU time (its rusage), i.e. what the system under test,
the kernel's network path and the virtualisation layers spent. On a shared
machine other processes' CPU is included too; see docs/clienthost.md.
"""

from __future__ import annotations

import os
import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from isobench.clienthost import ClientHost
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.host import counters
from isobench.workloads.base import Measurement, ParseError, Workload, WorkloadError
from isobench.workloads.duetcall import SERVER_PAIR_CPUS, DuetCall, decide_server
from isobench.workloads.procstat import proc_cpu_ticks, proc_gone

READY_TIMEOUT_S = 60
# What a server sample costs beside its client's own run, for the study's
# estimate (expected_s): the server started, reached, its CPU time read
# twice and stopped, about ten commands in the environment (a container's
# exec takes tens of ms). With netlat's, netbw's, redis's and oltp's models
# it reproduces network-quick's run 20261128-224824 (4 rounds of 11 cases,
# 8 min 44 s, the one run of them whose length was noted; its samples are
# not in this host's store): refit from a run's time_spent when there are more.
SERVER_SAMPLE_S = 0.8
# In an environment's tmp directory: the servers' pidfiles, logs and sockets
# (leftovers.py finds the pidfiles of a killed run here).
SERVERS_DIR = "servers"


def servers_dir(env: Environment) -> str:
    return posixpath.join(env.paths.tmp, SERVERS_DIR)


# -- host CPU accounting -----------------------------------------------------------


@dataclass(frozen=True)
class CpuTimes:
    busy: int  # clock ticks, all CPUs
    total: int
    ncpu: int


def parse_proc_stat(text: str) -> CpuTimes:
    """The aggregate 'cpu' line of /proc/stat. guest/guest_nice are already
    counted in user/nice, so they are not added again."""
    ncpu = 0
    agg = None
    for line in text.splitlines():
        if line.startswith("cpu "):
            agg = [int(x) for x in line.split()[1:]]
        elif line.startswith("cpu") and line[3:4].isdigit():
            ncpu += 1
    if agg is None:
        raise ParseError("no aggregate cpu line in /proc/stat")
    f = (agg + [0] * 10)[:10]
    user, nice, system, idle, iowait, irq, softirq, steal = f[:8]
    busy = user + nice + system + irq + softirq + steal
    return CpuTimes(busy=busy, total=busy + idle + iowait, ncpu=max(ncpu, 1))


def read_proc_stat(path: str = "/proc/stat") -> CpuTimes:
    with open(path) as fh:
        return parse_proc_stat(fh.read())


def clk_tck() -> int:
    return os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuWindow:
    wall_s: float
    host_busy_s: float  # CPU-seconds all CPUs were busy
    client_cpu_s: float  # of which the load generator's own process
    ncpu: int
    server_cpu_s: float | None = None  # the server process's own user+sys time, when readable

    @property
    def sut_cpu_s(self) -> float:
        """Host busy CPU-seconds minus the load generator's: the system under test's cost."""
        return max(0.0, self.host_busy_s - self.client_cpu_s)

    def pct(self, cpu_s: float) -> float:
        """CPU-seconds as % of the whole host's capacity over the window."""
        return 100.0 * cpu_s / (self.wall_s * self.ncpu) if self.wall_s > 0 else float("nan")


def cpu_window(
    before: CpuTimes, after: CpuTimes, wall_s: float, client_cpu_s: float, hz: int | None = None
) -> CpuWindow:
    hz = hz or clk_tck()
    return CpuWindow(
        wall_s=wall_s, host_busy_s=(after.busy - before.busy) / hz, client_cpu_s=client_cpu_s, ncpu=after.ncpu
    )


def per_gb(cpu_s: float, nbytes: float) -> float:
    return cpu_s / (nbytes / 1e9) if nbytes > 0 else float("nan")


# -- the workload base ---------------------------------------------------------------


def sweep_cases(param: str, values) -> list[str]:
    """Swept points as cases named ``param=value`` (the report's curves look for it)."""
    return [f"{param}={v}" for v in values]


def sweep_value(case: str, param: str) -> int:
    name, _, value = case.partition("=")
    if name != param or not value.isdigit():
        raise KeyError(f"case {case!r} is not {param}=N")
    return int(value)


class ServerWorkload(Workload):
    ports: ClassVar[tuple[tuple[int, str], ...]] = ()
    # Absolute path, for start-stop-daemon --exec; `isobench clean` kills a
    # leftover native server only if its pid still runs this executable.
    server_exe: ClassVar[str] = ""
    client: ClientHost | None = None  # set by the runner (runner.attach_client_host)

    def __init__(self, params, host):
        super().__init__(params, host)
        self.duet_calls: dict[str, DuetCall] = {}  # case -> the runner's call

    # -- under schedule = "duet" (workloads/duetcall.py) ----------------------------------
    # Each case is decided from its own sample alone, as a user's command is:
    # a side must hold the server and its client. The call is said in the
    # answer; none runs as a duet yet (decide_server says what is missing).
    def duet_mode(self) -> str | None:
        return "false" if self.params.duet is False else "auto"

    @property
    def duets(self) -> bool:
        return False

    def may_duet(self) -> bool:
        return False

    def duet_decision(
        self, mode: str, side_cpus: int, sample: Callable[[], tuple[dict, dict] | None], env: str
    ) -> DuetCall:
        if mode == "false" or side_cpus < SERVER_PAIR_CPUS:  # known without a sample
            return decide_server(mode, side_cpus, env=env)
        found = sample()
        window = stored_window(found[1].get("cpu_window")) if found is not None else None
        if window is None or window.server_cpu_s is None:
            return decide_server(mode, side_cpus, env=env)
        return decide_server(mode, side_cpus, window.server_cpu_s, window.client_cpu_s, window.wall_s, env)

    def settle_duet(self, call: DuetCall, case: str = "") -> None:
        self.duet_calls[case] = call

    def duet_decided(self, case: str = "") -> bool:
        return case in self.duet_calls

    @classmethod
    def owns_process(cls, exe: str, argv: list[str]) -> bool:
        """Whether a process (its /proc/PID/exe target and argv) is this
        workload's server. The executable may be a symlink (redis-server ->
        redis-check-rdb), so its target counts too."""
        return bool(cls.server_exe) and exe in (cls.server_exe, os.path.realpath(cls.server_exe))

    # -- to implement --------------------------------------------------------------
    def server_argv(self, case: str, env: Environment) -> list[str]:
        """Arguments after the server executable (foreground mode)."""
        raise NotImplementedError

    def client_argv(self, case: str, addr: str, port: int) -> list[str]:
        raise NotImplementedError

    def server_port(self, case: str) -> tuple[int, str]:
        """The port the client of this case talks to."""
        return self.ports[0]

    def client_timeout(self, case: str) -> float:
        return self.params.timeout_s

    # -- server lifecycle --------------------------------------------------------------
    def argv(self, case: str, paths: Paths) -> list[str]:
        raise WorkloadError(f"{self.name} runs its load generator on the client host, not in the environment")

    def _files(self, env: Environment) -> tuple[str, str]:
        d = servers_dir(env)
        return posixpath.join(d, f"{self.name}.pid"), posixpath.join(d, f"{self.name}.log")

    def start_server(self, env: Environment, case: str) -> None:
        pidfile, log = self._files(env)
        env.exec(["mkdir", "-p", posixpath.dirname(pidfile)], timeout=30)
        if self._server_alive(env):  # an earlier sample's server that a stop missed
            self.stop_server(env)
        argv = [
            "start-stop-daemon",
            "--start",
            "--background",
            "--make-pidfile",
            "--pidfile",
            pidfile,
            "--output",
            log,
            "--exec",
            self.server_exe,
            "--",
            *self.server_argv(case, env),
        ]
        r = env.exec(argv, timeout=60)
        if not r.ok:
            raise WorkloadError(f"{self.name} server did not start: {r.describe()}", r)
        self.wait_ready(env, case)
        self._pid = self._read_pid(env)

    def wait_ready(self, env: Environment, case: str) -> None:
        """Until the client host can reach the server (TCP), or it listens (UDP)."""
        port, proto = self.server_port(case)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if proto == "tcp":
                addr, eport = env.endpoint(port, proto)
                if self._client().wait_tcp(addr, eport, timeout=1):
                    return
            else:
                r = env.exec(["ss", "-Hlnu", "sport", "=", f":{port}"], timeout=10)
                if r.ok and r.stdout.strip():
                    return
                time.sleep(0.1)
            if not self._server_alive(env):
                break
        _, log = self._files(env)
        tail = env.exec(["tail", "-n", "5", log], timeout=10).stdout.strip().replace("\n", " | ")
        raise WorkloadError(f"{self.name} server not reachable on {port}/{proto}: {tail or 'no output'}")

    def _server_alive(self, env: Environment) -> bool:
        """Whether the pidfile names a live process of this server's own
        executable (--exec: never a stranger whose pid was reused); read from
        the exit code, which a container's exec does not lose."""
        pidfile, _ = self._files(env)
        exe = ["--exec", self.server_exe] if self.server_exe else []
        r = env.exec(["start-stop-daemon", "--status", "--pidfile", pidfile, *exe], timeout=10)
        return r.returncode == 0 and not r.timed_out

    def stop_server(self, env: Environment, grace_s: float = 20) -> None:
        """SIGTERM, wait until the process is gone or a zombie (it has let go
        of its port; reaping is its parent's business, and the host's init
        may be slow at it, which start-stop-daemon --retry would wait for),
        SIGKILL after grace_s."""
        pidfile, _ = self._files(env)
        pid = self._read_pid(env)
        if pid is None:
            return
        ssd = ["start-stop-daemon", "--stop", "--pidfile", pidfile, "--oknodo", "--signal"]
        env.exec([*ssd, "TERM"], timeout=10)
        deadline = time.monotonic() + grace_s
        killed = False
        while True:
            if proc_gone(env.exec(["cat", f"/proc/{pid}/stat"], timeout=10)):
                break
            if time.monotonic() > deadline:
                if killed:
                    raise WorkloadError(f"{self.name} server (pid {pid}) survives SIGKILL")
                env.exec([*ssd, "KILL"], timeout=10)
                killed, deadline = True, time.monotonic() + 10
            time.sleep(0.05)
        env.exec(["rm", "-f", pidfile], timeout=10)

    def _read_pid(self, env: Environment, patience_s: float = 30) -> str | None:
        """The pid in the server's pidfile, None when there is none. An empty
        answer is asked again: a container's exec can lose its output (moby
        #27289), and a stop that took it for "no server" left one running
        into the next sample (CI of bdf6be2)."""
        pidfile, _ = self._files(env)
        deadline = time.monotonic() + patience_s
        while True:
            r = env.exec(["cat", pidfile], timeout=10)
            if r.ok and r.stdout.strip().isdigit():
                return r.stdout.strip()
            if r.returncode == 1 and not r.timed_out:  # cat: no such file
                return None
            if time.monotonic() > deadline:
                why = "it reads empty" if r.ok else r.describe()
                raise WorkloadError(f"{self.name}: cannot read its pidfile {pidfile} within {patience_s:.0f} s: {why}")
            time.sleep(0.2)

    def _client(self):
        if self.client is None:
            raise WorkloadError(f"{self.name} needs a client host (none attached)")
        return self.client

    # -- one measured run ----------------------------------------------------------------
    def run(self, case: str, env: Environment) -> Measurement:
        self.start_server(env, case)
        try:
            self.before_measure(case, env)
            return self.measure(case, env)
        finally:
            self.stop_server(env)

    def before_measure(self, case: str, env: Environment) -> None:
        """Unmeasured warm-up after the server started (default: none)."""

    def measure(self, case: str, env: Environment) -> Measurement:
        """Run the load generator once over the host-CPU window; the result's
        extra carries the window for workloads that report CPU cost."""
        port, proto = self.server_port(case)
        addr, eport = env.endpoint(port, proto)
        argv = self.client_argv(case, addr, eport)
        server_before = self._server_ticks(env)
        with counters.around(env.counters) as box:  # the load generator's window only
            before = read_proc_stat()
            t0 = time.perf_counter()
            run = self._client().run(argv, timeout=self.client_timeout(case))
            wall = time.perf_counter() - t0
            after = read_proc_stat()
            box["extra"] = window_extra = {"cpu_window": {"client_cpu_s": run.cpu_s}}
        server_after = self._server_ticks(env)
        if not run.result.ok:
            raise WorkloadError(run.result.describe(), run.result)
        m = self.parse(case, run.result)
        if counters.EXTRA_KEY in window_extra:
            m.extra[counters.EXTRA_KEY] = window_extra[counters.EXTRA_KEY]
        window = cpu_window(before, after, wall, run.cpu_s)
        if server_before is not None and server_after is not None:
            window = replace(window, server_cpu_s=(server_after - server_before) / clk_tck())
        m.extra.setdefault(
            "cpu_window",
            {
                "wall_s": window.wall_s,
                "host_busy_s": window.host_busy_s,
                "client_cpu_s": window.client_cpu_s,
                "ncpu": window.ncpu,
                "server_cpu_s": window.server_cpu_s,
            },
        )
        self.add_cpu_metrics(case, m, window)
        return m

    def add_cpu_metrics(self, case: str, m: Measurement, window: CpuWindow) -> None:
        """Workloads that report CPU cost override this."""

    def reparse(self, case: str, raw: str, extra: dict) -> Measurement:
        """The parser's values, and the CPU-cost ones again from the host
        CPU window measure() stored beside them (they divide by what the
        parser read, e.g. the bytes iperf3 moved). Without a whole window
        the CPU-cost values are left out: reparse keeps the stored ones."""
        m = super().reparse(case, raw, extra)
        window = stored_window(extra.get("cpu_window"))
        if window is not None:
            self.add_cpu_metrics(case, m, window)
        return m

    def _server_ticks(self, env: Environment) -> int | None:
        """utime + stime of the server process (clock ticks), read inside the
        environment; None when unreadable."""
        pid = getattr(self, "_pid", None)
        if not pid:
            return None
        r = env.exec(["cat", f"/proc/{pid}/stat"], timeout=10)
        return proc_cpu_ticks(r.stdout) if r.ok else None


def stored_window(doc) -> CpuWindow | None:
    """The CpuWindow measure() kept in a sample's extra["cpu_window"], or
    None when it is not all there (a counters-only entry, a hand-made run)."""
    if not isinstance(doc, dict):
        return None
    try:
        server = doc.get("server_cpu_s")
        return CpuWindow(
            wall_s=float(doc["wall_s"]),
            host_busy_s=float(doc["host_busy_s"]),
            client_cpu_s=float(doc["client_cpu_s"]),
            ncpu=int(doc["ncpu"]),
            server_cpu_s=None if server is None else float(server),
        )
    except (KeyError, TypeError, ValueError):
        return None


def known_cases(cases: tuple, allowed: tuple, what: str) -> tuple:
    bad = [c for c in cases if c not in allowed]
    if bad or not cases:
        raise ValueError(f"{what} cases must be among {list(allowed)}, got {list(cases)}")
    if len(set(cases)) != len(cases):
        raise ValueError(f"duplicate {what} cases in {list(cases)}")
    return cases


def bounded_timeout(params, derived: float) -> float:
    """The study's timeout_s when it set one, else what the run's length implies."""
    return params.timeout_s if "timeout_s" in params.model_fields_set else derived


def check_result(result: ExecResult, what: str) -> ExecResult:
    if not result.ok:
        raise WorkloadError(f"{what}: {result.describe()}", result)
    return result
