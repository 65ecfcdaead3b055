"""Your own program as a workload, declared in the study file alone:

    [workloads.mybuild]
    command = ["make", "-j1"]
    setup = ["make", "clean"]
    files = ["src"]

Any table holding ``command`` is this workload, under the user's name for it
(Workload.claimed_by_field). Each sample runs ``setup``, then ``command``
``repeat`` times under GNU time (``/usr/bin/time -v``), then ``cleanup``; only
the command's runs are timed. Its metrics: the timed part's wall time
(primary unless an output metric is), user and system CPU seconds and peak
resident memory from GNU time, and any metric read from the command's output
by a regular expression or a JSON path (command_rules.py). The ``files`` are
copied byte-identical into each environment's scratch directory
(command_files.py), the command's working directory unless ``workdir``
says otherwise. What each environment runs (the digest of the executable
it resolves and of every copied file, the versions of the table's
``packages``: Workload.program) is compared with the baseline's before
the first sample, and a difference refuses the run unless ``same_program
= false`` (run/prepare.py; docs/workloads/command.md).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import shlex
import time
from typing import Any, ClassVar

from isobench.core.metric import DURATION, Metric
from isobench.core.plants import CannotPlant, planted_amount, slowdown_of
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.workloads import command_files as cf
from isobench.workloads.base import Footprint, Measurement, ParseError, Workload, WorkloadError, WorkloadParams, check
from isobench.workloads.command_params import BUILTIN, KEEP_CHARS, SYSTEM_PATH, CommandParams
from isobench.workloads.command_rules import (
    block_io_bytes,
    first_json,
    json_path,
    parse_time_block,
    read_json,
    read_regex,
    rule_regex,
    split_time,
    tail_lines,
)
from isobench.workloads.compress import TIMER_RESOLUTION_S, TIMER_SHARE, TIMER_SHARE_PCT

__all__ = ["BUILTIN", "KEEP_CHARS", "SYSTEM_PATH", "Command", "CommandParams", "failure"]


class Command(Workload):
    name: ClassVar[str] = "command"
    Params: ClassVar[type[WorkloadParams]] = CommandParams
    packages: ClassVar[tuple[str, ...]] = ("time",)
    claimed_by_field: ClassVar[str] = "command"
    duration_known: ClassVar[bool] = False  # nobody knows a command's time before it runs
    duet: ClassVar[bool] = True  # as its table's duet_mode decides
    params: CommandParams

    def __init__(self, params: WorkloadParams, host) -> None:
        super().__init__(params, host)
        self._entries: list[cf.Entry] | None = None
        self._program: dict[str, dict] = {}  # environment -> its executable and digests

    # -- what it emits --------------------------------------------------------
    def metrics(self, case: str) -> list[Metric]:
        rules = self.params.metrics
        own_primary = any(r.primary for r in rules.values())
        return [
            Metric("wall_s", "s", False, "wall-clock time of the timed runs", role=DURATION, primary=not own_primary),
            Metric("user_s", "s", False, "CPU time in user mode (GNU time)", role=DURATION),
            Metric("sys_s", "s", False, "CPU time in the kernel (GNU time)", role=DURATION),
            Metric("peak_rss_mib", "MiB", False, "largest resident set of one run (GNU time)"),
            *(
                Metric(
                    name,
                    r.unit,
                    r.higher_is_better,
                    r.description
                    or f"read from the {r.stream} by " + ("a regex" if r.regex is not None else f"json {r.json_}"),
                    primary=r.primary,
                )
                for name, r in rules.items()
            ),
        ]

    def units(self, case: str, m: Measurement) -> list:
        rule, runs = self.params.units, float(self.params.repeat)
        if rule is None:
            return ["run", runs]
        # an output metric is the runs' mean (parse_runs): times the runs, the sample's count
        per_run = rule.count if rule.count is not None else m.values.get(rule.metric or "", 0.0)
        return [rule.name, per_run * runs]

    def planted(self, pct: float) -> Command:
        """More runs of the command per sample: whole runs, so the size as
        built must be within a tenth of ``pct`` (repeat = 19 plants 5% exactly, 18 plants 5.3%)."""
        p = self.params
        if any(r.primary for r in p.metrics.values()):
            raise CannotPlant("command: its primary metric is read from the output, the runs' mean: more runs leave it")

        def close(repeat: int) -> bool:
            return abs(slowdown_of(repeat, planted_amount(repeat, pct)) - pct) <= pct / 10

        runs = planted_amount(p.repeat, pct)
        built = slowdown_of(p.repeat, runs)
        if not close(p.repeat):
            need = next((r for r in range(p.repeat, 10_001) if close(r)), 10_000)
            raise CannotPlant(
                f"command: repeat = {p.repeat} cannot carry a planted {pct:g}% in whole runs "
                f"({runs} runs would plant {built:.1f}%); give repeat = {need}"
            )
        copy = type(self)(p.model_copy(update={"repeat": runs}), self.host)
        copy.plant_pct = built
        return copy

    # -- where it runs --------------------------------------------------------
    def scratch(self, paths: Paths) -> str:
        """The scratch directory: named by the parameters' digest, so two
        tables never share one and nothing needs the table's name."""
        tag = hashlib.sha256(self.params.model_dump_json().encode()).hexdigest()[:12]
        return posixpath.join(paths.data, f"command-{tag}")

    def cwd(self, case: str, paths: Paths) -> str:
        return posixpath.join(self.scratch(paths), self.params.workdir) if self.params.workdir else self.scratch(paths)

    def wrapped(self, argv: list[str], paths: Paths) -> list[str]:
        """argv under the study's environment variables and the system PATH."""
        env = {"PATH": SYSTEM_PATH, "ISOBENCH_SCRATCH": self.scratch(paths), **self.params.env}
        return ["/usr/bin/env", *(f"{k}={v}" for k, v in env.items()), *argv]

    def argv(self, case: str, paths: Paths) -> list[str]:
        return self.wrapped(["/usr/bin/time", "-v", "--", *self.params.command], paths)

    def footprint(self) -> list[Footprint]:
        # the archive and what it unpacks to: WorkloadError names a bad entry
        return [Footprint("files", "disk", 2 * sum(e.size for e in self.entries()))]

    def entries(self) -> list[cf.Entry]:
        if self._entries is None:
            self._entries = cf.manifest(self.params.files, self.params._base)
        return self._entries

    # -- preparing an environment ---------------------------------------------
    def prepare(self, env: Environment) -> None:
        scratch, cwd = self.scratch(env.paths), self.cwd("default", env.paths)
        check(env.exec(["rm", "-rf", scratch], timeout=120))
        # an absolute workdir is the user's to provide; one inside the scratch directory is made
        check(env.exec(["mkdir", "-p", scratch, *([cwd] if cwd.startswith(scratch) else [])], timeout=60))
        entries = self.entries()
        if entries:
            tar = posixpath.join(env.paths.data, f"{posixpath.basename(scratch)}.tar")
            env.write_file(tar, cf.archive(entries))
            check(env.exec(["tar", "-xf", tar, "-C", scratch, "--no-same-owner"], timeout=600))
            check(env.exec(["rm", "-f", tar], timeout=60))
            copied = check(
                env.exec(["find", ".", "-type", "f", "-exec", "sha256sum", "{}", "+"], timeout=600, cwd=scratch)
            )
            cf.check_copied(entries, copied.stdout, env.name)
        packages = list(self.params.packages)
        self._program[env.name] = {
            **self.resolve(env),
            **({"files": cf.digests(entries)} if entries else {}),
            **({"packages": env.package_versions(packages)} if packages else {}),
        }

    def resolve(self, env: Environment) -> dict:
        """The executable the environment runs for ``command[0]`` (as execvp
        finds it, with the study's PATH) and its SHA-256, and those of the
        shared libraries ldd lists for it, by soname (where a library lives
        may differ between environments; results.programs notes where its
        bytes do)."""
        find = (
            'case $1 in */*) p=$1 ;; *) p=$(which -- "$1") || { echo "not found on $PATH" >&2; exit 127; } ;; '
            'esac; p=$(readlink -f -- "$p") && sha256sum -- "$p" && { '
            # the Debian package that holds it, and its version: a refusal names versions, not only digests
            'o=$(dpkg-query -S -- "$p" 2>/dev/null | head -n 1) && o=${o%%:*} && '
            'echo "isobench-owner $o $(dpkg-query -W -f \'${Version}\' -- "$o" 2>/dev/null)"; '
            'ldd -- "$p" 2>/dev/null || true; }'
        )
        r = env.exec(
            self.wrapped(["sh", "-c", find, "sh", self.params.command[0]], env.paths),
            timeout=120,
            cwd=self.cwd("default", env.paths),
        )
        if not r.ok:
            raise WorkloadError(
                f"command: {self.params.command[0]} cannot be run in {env.name} (exit {r.returncode})"
                + (f": {tail_lines(r.stderr, 2)}" if tail_lines(r.stderr, 2) else ""),
                r,
            )
        first, _, listed = r.stdout.strip().partition("\n")
        digest, _, path = first.partition("  ")
        owner = next((ln.split(" ", 1)[1] for ln in listed.splitlines() if ln.startswith("isobench-owner ")), "")
        libraries = cf.ldd_libraries(listed)
        found = [p for p in libraries.values() if p.startswith("/")]
        if found:
            # one digest per line, in the order given (sha256sum < FILE follows links)
            hashed = env.exec(
                ["sh", "-c", 'for f do d=$(sha256sum < "$f") || d=unreadable; echo "${d%% *}"; done', "sh", *found],
                timeout=120,
            )
            digests = iter(hashed.stdout.split() if hashed.ok else [])
            libraries = {n: next(digests, "unreadable") if p.startswith("/") else p for n, p in libraries.items()}
        return {
            "executable": path,
            "sha256": digest,
            **({"owner": owner.strip()} if owner.strip() else {}),
            **({"libraries": libraries} if libraries else {}),
        }

    def duet_mode(self) -> str | None:
        d = self.params.duet
        return d if isinstance(d, str) else ("true" if d else "false")

    def usage(self, values: dict, extra: dict) -> tuple[float, float, float] | None:
        try:
            io = float(extra["block_io_bytes"])
            return float(values["user_s"]) + float(values["sys_s"]), float(values["wall_s"]), io
        except (KeyError, TypeError, ValueError):
            return None

    def program(self, env: str) -> dict | None:
        return self._program.get(env)

    def added_packages(self) -> tuple[str, ...]:
        return self.params.packages  # images.study_packages leaves out isobench's own

    @property
    def same_program(self) -> bool:
        return self.params.same_program

    # -- one sample -------------------------------------------------------------
    def run(self, case: str, env: Environment) -> Measurement:
        deadline = time.monotonic() + self.params.timeout_s
        cwd = self.cwd(case, env.paths)

        def step(what: str, shown: tuple[str, ...], argv: list[str]) -> ExecResult:
            left = deadline - time.monotonic()
            if left <= 1:
                raise WorkloadError(f"{what}: timeout_s ({self.params.timeout_s:g} s) spent before it started")
            r = env.exec(argv, timeout=left, cwd=cwd)
            if not r.ok:
                raise WorkloadError(failure(what, shown, r), r)
            return r

        p = self.params
        if p.setup:
            step("setup", p.setup, self.wrapped(list(p.setup), env.paths))
        runs = [step("command", p.command, self.argv(case, env.paths)) for _ in range(p.repeat)]
        if p.cleanup:
            step("cleanup", p.cleanup, self.wrapped(list(p.cleanup), env.paths))
        m = self.parse_runs([(r.stdout, r.stderr) for r in runs])
        if env.name in self._program:
            m.extra["program"] = self._program[env.name]
        return m

    # -- reading the output -----------------------------------------------------
    def parse(self, case: str, result: ExecResult) -> Measurement:
        return self.parse_runs([(result.stdout, result.stderr)])

    def parse_runs(self, runs: list[tuple[str, str]]) -> Measurement:
        """Pure: each run's GNU time block and output metrics; the timed part
        is every run's wall time summed (CPU too), the peak the largest, an
        output metric the runs' mean."""
        if not runs:
            raise ParseError("no run to read")
        per_run, io = [], []
        for stdout, stderr in runs:
            own_err, block = split_time(stderr)
            values = parse_time_block(block)
            io.append(block_io_bytes(block))
            for name, rule in self.params.metrics.items():
                text = stdout if rule.stream == "stdout" else own_err
                if rule.regex is not None:
                    values[name] = read_regex(text, rule_regex(rule.regex), name)
                elif rule.json_ is not None:
                    values[name] = read_json(first_json(text), json_path(rule.json_), rule.json_, name)
            per_run.append(values)
        out = {k: sum(v[k] for v in per_run) for k in ("wall_s", "user_s", "sys_s")}
        out["peak_rss_mib"] = max(v["peak_rss_mib"] for v in per_run)
        for name in self.params.metrics:
            out[name] = sum(v[name] for v in per_run) / len(per_run)
        raw = json.dumps({"runs": [{"stdout": o[-KEEP_CHARS:], "stderr": e[-KEEP_CHARS:]} for o, e in runs]})
        extra: dict[str, Any] = {"runs": len(runs)}
        if all(b is not None for b in io):
            extra["block_io_bytes"] = sum(b for b in io if b is not None)
        return Measurement(values=out, extra=extra, raw=raw)

    def reparse(self, case: str, raw: str, extra: dict) -> Measurement:
        try:
            runs = [(r["stdout"], r["stderr"]) for r in json.loads(raw)["runs"]]
        except (ValueError, KeyError, TypeError):
            raise ParseError("the stored output is not this workload's record of its runs") from None
        return self.parse_runs(runs)

    def validity(self, case: str, m: Measurement) -> dict[str, str]:
        wall = m.values.get("wall_s", 0.0)
        if wall * TIMER_SHARE >= TIMER_RESOLUTION_S:
            return {}
        return {
            "wall_s": f"a {wall:.2f} s timed part is within {TIMER_SHARE_PCT:g}% of GNU time's "
            f"{TIMER_RESOLUTION_S * 1000:.0f} ms resolution: raise repeat"
        }

    def cleanup(self, env: Environment) -> None:
        env.exec(["rm", "-rf", self.scratch(env.paths)], timeout=120)


def failure(what: str, argv: tuple[str, ...], r: ExecResult) -> str:
    """One line: which step, how it ended, the command and its last stderr lines."""
    try:
        own = split_time(r.stderr)[0] if what == "command" else r.stderr
    except ParseError:
        own = r.stderr
    how = f"timed out after {r.wall_s:.0f} s" if r.timed_out else r.killed or f"exit {r.returncode}"
    tail = tail_lines(own) or tail_lines(r.stdout, 2)
    return f"{what} {how}: {shlex.join(argv)[:200]}" + (f": {tail}" if tail else "")
