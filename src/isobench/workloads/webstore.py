"""A DVD-Store-style three-tier web store (VMware's DS2 / CloudStone /
Weathervane experiments): nginx -> php-fpm (PHP 8.2) -> PostgreSQL 15 in
every environment instance, one independent stack per instance, driven
from the client host by drivers/webstore_load.py (closed loop with think
time, or open-loop Poisson arrivals).

prepare() writes each instance's configs and PHP page (data/webstore/),
generates the data set from the seed (webstore_data.py), initialises a
cluster and loads it with COPY, all with bounded timeouts. Each measured
run starts PostgreSQL, php-fpm and nginx as the ``postgres`` user (never
system services) from their own configs, with pidfiles in the servers
directory so ``isobench clean`` finds them after a SIGKILL, drives all
instances at once and stops the servers in reverse order. See
docs/workloads/webstore.md.
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from importlib import resources
from typing import ClassVar

from isobench.core.metric import Metric
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment
from isobench.workloads import webstore_data
from isobench.workloads.base import (
    Footprint,
    Measurement,
    ParseError,
    WorkloadError,
    WorkloadParams,
)
from isobench.workloads.multi import MultiServerWorkload, in_parallel
from isobench.workloads.server import READY_TIMEOUT_S, bounded_timeout, servers_dir, sweep_cases, sweep_value
from isobench.workloads.webstore_metrics import OPS, case_metrics, parse_webstore, peak_metrics, peak_search
from isobench.workloads.webstore_params import WebstoreParams
from isobench.workloads.webstore_scripts import Daemon, start_script, stop_script

BASE_PORT = 18480
PG_BIN = "/usr/lib/postgresql/15/bin"
EXES = {"pg": f"{PG_BIN}/postgres", "fpm": "/usr/sbin/php-fpm8.2", "nginx": "/usr/sbin/nginx"}
USER = "postgres"  # PostgreSQL refuses root; php-fpm and nginx run as it too
PREPARE_STEP_S = 900  # initdb / load under an emulated guest can be slow; a hang still ends
TAGS = ("pg", "fpm", "nginx")  # start order; stopped in reverse
STOP_GRACE_S = 20


class Webstore(MultiServerWorkload):
    name: ClassVar[str] = "webstore"
    Params: ClassVar[type[WorkloadParams]] = WebstoreParams
    packages: ClassVar[tuple[str, ...]] = ("nginx", "php8.2-fpm", "php8.2-pgsql", "postgresql-15")
    server_exe: ClassVar[str] = EXES["nginx"]
    base_port: ClassVar[int] = BASE_PORT
    # 2: quantiles interpolate by rank inside their log bucket (drivers/loghist.py,
    # fb0e5f2, 2026-11-24); version 1 read every rank in a bucket as its middle
    parser_version: ClassVar[int] = 2
    params: WebstoreParams

    def __init__(self, params, host):
        super().__init__(params, host)
        self._draws: dict[tuple[str, str], int] = {}  # samples run per (case, environment)
        self._stream = str(params.seed)
        self._seed_tar: bytes | None = None  # the loaded cluster, packed once per run

    def max_instances(self) -> int:
        return max(self.params.instances)

    def cases(self) -> list[str]:
        p = self.params
        return sweep_cases("instances", p.instances) + sweep_cases("rate", p.rates) + (["peak"] if p.peak else [])

    def instance_count(self, case: str) -> int:
        # load sweeps and the peak search run on the fewest instances
        return sweep_value(case, "instances") if case.startswith("instances=") else min(self.params.instances)

    @classmethod
    def owns_process(cls, exe: str, argv: list[str]) -> bool:
        # the executables are shared with system services: our config paths tell ours
        return exe in EXES.values() and any("webstore-" in a for a in argv)

    def footprint(self) -> list[Footprint]:
        rows = self.params.customers * 120 + self.params.products * 200
        return [Footprint("customers", "disk", 40_000_000 + 4 * rows * self.max_instances())]

    def expected_s(self, case: str) -> float:
        # the driver's set time, each probe's for the peak search, plus
        # starting and stopping three servers per instance
        p = self.params
        runs = p.peak_steps if case == "peak" else 1
        return float(runs * (p.warmup_s + p.duration_s) + 2 * self.instance_count(case))

    # -- metrics ------------------------------------------------------------------
    def ops(self) -> list[str]:
        return [op for op in OPS if op in self.params.mix]

    def metrics(self, case: str) -> list[Metric]:
        if case == "peak":
            return peak_metrics()
        open_loop = case.startswith("rate=") or self.params.mode == "open"
        return case_metrics(self.ops(), self.params.limits_ms, self.instance_count(case), open_loop)

    # -- files --------------------------------------------------------------------
    def _base(self, env: Environment, index: int) -> str:
        return posixpath.join(env.paths.data, f"webstore-{index}")

    def _run(self, env: Environment, index: int) -> str:
        # sockets on the tmpfs, with a short path (unix socket paths are < 108 bytes)
        return posixpath.join(env.paths.tmp, f"webstore-{index}")

    def _argv(self, env: Environment, index: int, tag: str) -> list[str]:
        base, run = self._base(env, index), self._run(env, index)
        if tag == "pg":
            return [
                "-D",
                f"{base}/pg",
                "-k",
                run,
                "-c",
                "listen_addresses=",
                "-c",
                f"shared_buffers={self.params.shared_buffers_mb}MB",
                "-c",
                "max_connections=300",
                "-c",
                "logging_collector=off",
            ]
        if tag == "fpm":
            return ["--nodaemonize", "--fpm-config", f"{base}/php-fpm.conf"]
        return ["-c", f"{base}/nginx.conf", "-p", f"{base}/", "-e", f"{base}/log/nginx-error.log"]

    def config_files(self, env: Environment, index: int) -> dict[str, str]:
        base, run = self._base(env, index), self._run(env, index)
        fpm = (
            f"[global]\npid = {run}/fpm.pid\nerror_log = {base}/log/fpm.log\ndaemonize = no\n"
            f"[store]\nlisten = {run}/fpm.sock\npm = static\npm.max_children = {self.params.php_workers}\n"
            f"clear_env = yes\nenv[WS_PGHOST] = {run}\n"
        )
        tmp = "".join(
            f"  {t}_temp_path {base}/tmp/{t};\n" for t in ("client_body", "fastcgi", "proxy", "uwsgi", "scgi")
        )
        nginx = (
            f"daemon off;\nworker_processes 1;\npid {run}/nginx.pid;\nerror_log {base}/log/nginx-error.log;\n"
            f"events {{ worker_connections 4096; }}\nhttp {{\n  access_log off;\n{tmp}"
            f"  keepalive_requests 1000000;\n"
            f"  server {{\n    listen {env.server_bind_addr()}:{BASE_PORT + index} backlog=1024;\n"
            f"    location = /ds.php {{\n      fastcgi_pass unix:{run}/fpm.sock;\n"
            f"      fastcgi_param SCRIPT_FILENAME {base}/www/ds.php;\n"
            f"      fastcgi_param QUERY_STRING $query_string;\n"
            f"      fastcgi_param REQUEST_METHOD $request_method;\n    }}\n  }}\n}}\n"
        )
        return {"php-fpm.conf": fpm, "nginx.conf": nginx}

    # -- prepare / cleanup ------------------------------------------------------------
    def prepare(self, env: Environment) -> None:
        """Every instance's files and its loaded database: a copy of one
        loaded once on the client host (initdb and COPY under TCG took
        minutes per guest), or, without a client host or PostgreSQL there,
        loaded in each instance. Instances are prepared in parallel."""
        seed = self._seed()
        in_parallel(self.instances(env, self.max_instances()), lambda i, m: self._prepare_one(m, i, seed))

    def _prepare_one(self, member: Environment, i: int, seed: bytes | None) -> None:
        base, run = self._base(member, i), self._run(member, i)
        self._check(member, ["rm", "-rf", base, run], "clearing old files")
        self._check(member, ["mkdir", "-p", f"{base}/www", f"{base}/log", f"{base}/tmp", run], "creating directories")
        for name, text in self.config_files(member, i).items():
            member.write_file(f"{base}/{name}", text.encode())
        page = resources.files("isobench.data").joinpath("webstore").joinpath("ds.php")
        member.write_file(f"{base}/www/ds.php", page.read_bytes())
        if seed is None:
            self._load(member, i)
            return
        member.write_file(f"{base}/seed.tar.gz", seed)
        self._check(member, ["tar", "-C", base, "-xzf", f"{base}/seed.tar.gz"], "unpacking the loaded database")
        self._check(member, ["rm", "-f", f"{base}/seed.tar.gz"], "removing the copy's archive")
        self._own(member, base, run)

    def _own(self, member: Environment, base: str, run: str) -> None:
        # the postgres user must reach its files: the run's own directories only
        self._check(member, ["chmod", "o+x", member.paths.data, member.paths.tmp], "opening directories")
        self._check(member, ["chown", "-R", f"{USER}:{USER}", base, run], "chown to postgres")

    def _load(self, member: Environment, i: int) -> None:
        """initdb and COPY the data set into instance i's cluster (pg/)."""
        p = self.params
        base, run = self._base(member, i), self._run(member, i)
        pkg = resources.files("isobench.data").joinpath("webstore")
        self._check(member, ["mkdir", "-p", f"{base}/load", f"{base}/log", run], "creating directories")
        member.write_file(f"{base}/load/schema.sql", pkg.joinpath("schema.sql").read_bytes())
        for name, text in webstore_data.tables(p.customers, p.products, p.seed, p.stock).items():
            member.write_file(f"{base}/load/{name}", text.encode())
        self._own(member, base, run)
        self._check(
            member,
            [
                "runuser",
                "-u",
                USER,
                "--",
                f"{PG_BIN}/initdb",
                "-D",
                f"{base}/pg",
                "--auth=trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            "initdb",
        )
        try:
            self._start_servers(member, i, ("pg",))
            self._check(
                member,
                [
                    "psql",
                    "-h",
                    run,
                    "-U",
                    "postgres",
                    "-X",
                    "-q",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-v",
                    f"datadir={base}/load",
                    "-f",
                    f"{base}/load/schema.sql",
                    "postgres",
                ],
                "loading the database",
            )
        finally:
            self._stop_servers(member, i, ("pg",))
        member.exec(["rm", "-rf", f"{base}/load"], timeout=60)

    def _seed(self) -> bytes | None:
        """The loaded cluster's pg/ as a tar.gz, built once per run on the
        client host (the same Debian PostgreSQL 15 as the image's, so the
        data directory is valid in every environment); None when there is
        no client host or no PostgreSQL on it."""
        if self._seed_tar is not None or self.client is None or not os.path.exists(f"{PG_BIN}/initdb"):
            return self._seed_tar
        # the host as a scratch environment: its files under the run's own
        # directories, its temporary server's pidfile where `isobench clean` looks
        from isobench.envs.native import NativeEnvironment

        host = NativeEnvironment(name="webstore-seed", run_id=self.client.run_id)
        host.start()
        try:
            self._load(host, 0)
            archive = posixpath.join(host.paths.data, "seed.tar.gz")
            self._check(host, ["tar", "-C", self._base(host, 0), "-czf", archive, "pg"], "packing the loaded database")
            with open(archive, "rb") as fh:
                self._seed_tar = fh.read()
        finally:
            host.stop()
        return self._seed_tar

    def _check(self, env: Environment, argv: list[str], what: str) -> ExecResult:
        r = env.exec(argv, timeout=PREPARE_STEP_S)
        if not r.ok:
            raise WorkloadError(f"webstore prepare in {env.name}: {what} failed: {r.describe()}", r)
        return r

    def cleanup(self, env: Environment) -> None:
        def one(i: int, member: Environment) -> None:
            try:
                self._stop_servers(member, i)
            finally:
                member.exec(["rm", "-rf", self._base(member, i), self._run(member, i)], timeout=120)

        in_parallel(self.instances(env, self.max_instances()), one)

    # -- servers ----------------------------------------------------------------------
    def _instance_files(self, env: Environment, index: int, tag: str = "nginx") -> tuple[str, str]:
        stem = posixpath.join(servers_dir(env), f"{self.name}-{index}-{tag}")
        return f"{stem}.pid", f"{stem}.log"

    def _files(self, env: Environment) -> tuple[str, str]:
        # the single-server lifecycle (wait_ready) watches an instance's nginx
        return self._instance_files(env, self._current or 0)

    def _daemons(self, env: Environment, index: int, tags: tuple[str, ...]) -> list[Daemon]:
        run = self._run(env, index)
        probes = {"pg": ("pg_isready", "-q", "-h", run), "fpm": ("test", "-S", f"{run}/fpm.sock"), "nginx": ()}
        return [
            Daemon(
                tag,
                EXES[tag],
                tuple(self._argv(env, index, tag)),
                *self._instance_files(env, index, tag),
                probe=probes[tag],
            )
            for tag in tags
        ]

    def _start_servers(self, member: Environment, index: int, tags: tuple[str, ...] = TAGS) -> None:
        """One exec starts the instance's servers in order, each waited for
        (nginx by the client host, after); on failure they are stopped."""
        script = start_script(self._daemons(member, index, tags), USER, READY_TIMEOUT_S * 3)
        r = member.exec(["sh", "-c", script], timeout=READY_TIMEOUT_S * 3 * len(tags) + 60)
        if not r.ok:
            try:
                self._stop_servers(member, index, tags)
            except WorkloadError:
                pass  # the start's own error says more
            raise _instance_error(member, index, r)

    def _stop_servers(self, member: Environment, index: int, tags: tuple[str, ...] = TAGS) -> None:
        pidfiles = [(tag, self._instance_files(member, index, tag)[0]) for tag in reversed(tags)]
        r = member.exec(["sh", "-c", stop_script(pidfiles, STOP_GRACE_S)], timeout=len(tags) * (STOP_GRACE_S + 15) + 30)
        if not r.ok:
            raise _instance_error(member, index, r)

    def start_instances(self, env: Environment, case: str, n: int) -> None:
        members = self.instances(env, n)
        try:
            in_parallel(members, lambda i, m: self._start_servers(m, i))
            for i, member in enumerate(members):  # nginx answers the client host
                self._current = i
                try:
                    self.wait_ready(member, "")
                finally:
                    self._current = None
        except BaseException:
            try:
                self.stop_instances(env, n)
            except WorkloadError:
                pass  # the start's own error says more
            raise

    def stop_instances(self, env: Environment, n: int) -> None:
        in_parallel(self.instances(env, n), lambda i, m: self._stop_servers(m, i))

    # -- the driver -----------------------------------------------------------------
    def client_timeout(self, case: str) -> float:
        return bounded_timeout(self.params, self.params.warmup_s + self.params.duration_s + 120)

    def driver_config(self, endpoints: list[tuple[str, int]], rate: float | None = None) -> dict:
        """The driver's settings; `rate` forces the open loop at that rate."""
        p = self.params
        return {
            "endpoints": [list(e) for e in endpoints],
            "mode": "open" if rate else p.mode,
            "users": p.users,
            "think_s": p.think_s,
            "rate": rate or p.rate,
            "connections": p.connections,
            "duration_s": p.duration_s,
            "warmup_s": p.warmup_s,
            "mix": p.mix,
            "customers": p.customers,
            "products": p.products,
            "seed": self._stream,
            "lines": [1, p.max_lines],
            "timeout_s": 30.0,
        }

    def driver_argv(self, case: str, endpoints: list[tuple[str, int]], rate: float | None = None) -> list[str]:
        if rate is None and case.startswith("rate="):
            rate = sweep_value(case, "rate")
        return [sys.executable, "-m", "isobench.drivers.webstore_load", json.dumps(self.driver_config(endpoints, rate))]

    def run(self, case: str, env: Environment) -> Measurement:
        # the k-th sample of a cell draws request stream k (think times,
        # customers, products): the same for every environment of a round, so
        # pairs see the same requests, and another each round, so the rounds'
        # spread includes the driver's randomness (one stream for all rounds
        # gave identical order counts and a "certain" change with no spread)
        k = self._draws.get((case, env.name), 0)
        self._draws[(case, env.name)] = k + 1
        self._stream = f"{self.params.seed}-{k}"
        if case != "peak":
            return super().run(case, env)
        n = self.instance_count(case)
        self.start_instances(env, case, n)
        try:
            endpoints = self.endpoints(env, n)
            return peak_search(lambda rate: self._probe(case, endpoints, rate), self.params)
        finally:
            self.stop_instances(env, n)

    def _probe(self, case: str, endpoints, rate: float) -> dict[str, float] | None:
        """One open-loop run at `rate`: its values, or None when operations failed too often."""
        run = self._client().run(self.driver_argv(case, endpoints, rate), timeout=self.client_timeout(case))
        if not run.result.ok:
            raise WorkloadError(run.result.describe(), run.result)
        try:
            return parse_webstore(run.result.stdout, self.ops(), self.params.max_error_rate, self.params.limits_ms)[0]
        except ParseError as exc:
            if "load generator" in str(exc):
                raise
            return None

    def units(self, case: str, m: Measurement) -> list:
        # an operation is one HTTP request through nginx, PHP and PostgreSQL;
        # the peak search's probes have no single rate: per run there
        if "ops_per_s" in m.values:
            return ["operation", m.values["ops_per_s"] * self.params.duration_s]
        return ["run", 1.0]

    def cannot_reparse(self, case: str) -> str:
        if case == "peak":
            return (
                "the peak search keeps each probe's p90s, not the probes' driver outputs; "
                "only a new run measures it with the current parser"
            )
        return ""

    def parse(self, case: str, result: ExecResult) -> Measurement:
        values, extra = parse_webstore(result.stdout, self.ops(), self.params.max_error_rate, self.params.limits_ms)
        return Measurement(values=values, extra=extra, raw=result.stdout)


def _instance_error(member: Environment, index: int, r: ExecResult) -> WorkloadError:
    """One line: the instance, and what its start or stop script said."""
    said = " ".join((r.stderr or r.describe()).split())[:400]
    return WorkloadError(f"webstore instance {index} in {member.name}: {said}", r)
