"""The interface every workload implements.

A workload knows its tool: how argv is built from its parameters, how the
tool's real output is parsed, and which metrics come out (with unit and
direction). It knows nothing about where it runs beyond the Environment
interface.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import ClassVar

from pydantic import Field, field_validator

from isobench.core.ids import shown
from isobench.core.metric import Metric, value_problem
from isobench.core.plants import CannotPlant
from isobench.core.proc import ExecResult
from isobench.core.strictmodel import StrictModel
from isobench.envs.base import Environment, Paths
from isobench.envs.kinds import Footprint  # one for a workload's copy and for a kind's own (a guest's RAM)
from isobench.host.hostinfo import HostInfo
from isobench.workloads.duetcall import DuetCall, decide


class ParseError(ValueError):
    """The tool's output did not have the expected shape."""

    result: ExecResult  # set by checked(): the raw output kept with the failed sample


def checked(m: Measurement) -> Measurement:
    """M, or ParseError (carrying the raw output, kept with the failed
    sample) when a parser gave a value no measurement has: NaN, infinity, a
    subnormal (core.metric.value_problem). Run and reparse both pass here."""
    for name, v in m.values.items():
        why = value_problem(v) if v is not None else ""
        if why:
            err = ParseError(f"the parser read {name} = {v!r}: {why}")
            err.result = ExecResult([], 1, m.raw, "", 0.0)
            raise err
    return m


class WorkloadError(RuntimeError):
    """A workload step failed; carries the failing command's output, and the
    parameter at fault where one is (``files[2]``), the message's first word then."""

    def __init__(self, message: str, result: ExecResult | None = None, field: str | None = None):
        super().__init__(message)
        self.result = result
        self.field = field


@dataclass
class Measurement:
    values: dict[str, float]
    # JSON-serialisable detail kept beside the values, e.g. a latency histogram.
    extra: dict = field(default_factory=dict)
    raw: str = ""  # the tool's output, kept so a sample can be re-parsed


class WorkloadParams(StrictModel):
    # Seconds a single run may take before it is killed and recorded as failed.
    timeout_s: float = Field(600, gt=0, le=86_400)
    # The study's primaries for this workload table (docs/statistics.md,
    # families): METRIC in every case that emits it, or CASE:METRIC in that
    # case only ("clients=16:rps"). Names only metrics: a case that emits none
    # of them keeps the workload's own. Names a case: the cases it names none
    # in are descriptive (a level the study runs but does not ask about). The
    # study checks every name against the table's cases and metrics before
    # anything starts. Empty: the workload's own.
    primary: tuple[str, ...] = ()
    # Under schedule = "duet": false runs this table's cells one sample at a
    # time (a study can compare both schedules on the same work); true asks
    # for a duet the workload must be able to run. None: the workload's own.
    duet: bool | None = None

    @field_validator("primary")
    @classmethod
    def _primary(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if not v:
            raise ValueError("name at least one metric; leave primary out for the workload's own primaries")
        if len(set(v)) != len(v):
            raise ValueError("names a metric twice")
        return v


def listed(names: list[str]) -> str:
    """Names for a one-line message: the first 12, and how many more."""
    return ", ".join(names[:12]) + (f", ... {len(names) - 12} more" if len(names) > 12 else "")


def split_primary(name: str) -> tuple[str, str]:
    """A ``primary`` entry as (case, metric): ("clients=16", "rps") for
    "clients=16:rps", ("", "rps") for "rps" (every case's)."""
    case, _, metric = name.rpartition(":")
    return case, metric


def distinct_counts(field: str, top: int, *, what: str = "counts", allow_empty: bool = False, sort: bool = True):
    """The field validator of a swept tuple of whole numbers (threads,
    clients, instances, rates), assigned in a params model's body as
    ``_threads = distinct_counts("threads", 4096, sort=False)``: every value
    from 1 to ``top``, none twice, at least one unless ``allow_empty``.
    The tuple comes back sorted ascending, or as given with ``sort=False``
    (the cases then run in the study's order). The error names the field
    and the bound: "threads must be distinct counts between 1 and 4096"."""

    def check(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if (not v and not allow_empty) or any(n < 1 or n > top for n in v) or len(set(v)) != len(v):
            raise ValueError(f"{field} must be distinct {what} between 1 and {top}")
        return tuple(sorted(v)) if sort else v

    return field_validator(field)(classmethod(check))


# A host for asking a workload what it emits: cases() and metrics() answer
# from the parameters alone, never from the host (Workload.metric_names).
NO_HOST = HostInfo(cores=1, mem_bytes=0, disk_free_bytes=0)


class Workload(abc.ABC):
    name: ClassVar[str]
    Params: ClassVar[type[WorkloadParams]] = WorkloadParams
    # Debian packages the workload runs: installed on the host and in the
    # image (isobench/packages.py reads this literal tuple from the source),
    # their versions recorded with results.
    packages: ClassVar[tuple[str, ...]] = ()
    # Libraries those tools load whose versions matter too: recorded with
    # results, never installed by name (apt picks them as dependencies).
    libraries: ClassVar[tuple[str, ...]] = ()
    # Raised by one whenever parse() would read other values from the same
    # raw output (a fixed quantile, a new unit): each sample records the
    # version that made its values, so a series that mixes two parsers is
    # told apart, and `isobench reparse` recomputes the old samples
    # (isobench/reparse.py; docs/reliability.md).
    parser_version: ClassVar[int] = 1
    # Its time is mostly waiting for the disk: what a study can resolve for it
    # is predicted from the host-noise pilot's I/O figure, not the CPU one
    # (isobench.checks.resolution). Undeclared work counts as CPU-bound.
    io_bound: ClassVar[bool] = False
    # Can a sample run at the same time as the baseline's, each on its own
    # host CPUs (schedule = "duet", run/duet.py)? True for work that stays on
    # the CPUs it is given and shares nothing else the two sides would fight
    # over (a disk, a client host on the same CPUs); such a workload's
    # host.cores is one side's CPUs, and cpus_needed() must fit them.
    duet: ClassVar[bool] = False
    # A study table holding this field is this workload's whatever the
    # table's name ([workloads.mybuild] with command = [...]): the name is
    # then the user's. "" for workloads a table names (registry.table_kind).
    claimed_by_field: ClassVar[str] = ""
    # False where expected_s() is only a guess made before anything ran (a
    # user's own command): a time budget is then not refused on it
    # (checks.preflight.budget_problem); the run's own pace decides instead.
    duration_known: ClassVar[bool] = True
    # The slowdown a planted copy (planted()) carries, percent, as built
    # (whole runs or bytes); 0 for the workload's own.
    plant_pct: float = 0.0

    def __init__(self, params: WorkloadParams, host: HostInfo):
        self.params = params
        self.host = host

    @classmethod
    def versioned_packages(cls) -> tuple[str, ...]:
        """The packages whose versions each environment records for this workload."""
        return cls.packages + cls.libraries

    def cases(self) -> list[str]:
        """Sub-benchmarks; each is its own cell in the study matrix. From the
        parameters alone (never the host)."""
        return ["default"]

    @abc.abstractmethod
    def metrics(self, case: str) -> list[Metric]:
        """What one run of ``case`` measures, each with its role and, for
        the metric(s) that answer the case's question (its throughput, or
        the latency or time that defines the workload), ``primary=True``.
        From the parameters alone (never the host), so that a study's names
        can be checked before the run."""

    def primaries(self, case: str) -> tuple[str, ...]:
        """The names of the case's primary metrics: the study's ``primary``
        list where the case emits any of them (METRIC, or CASE:METRIC for
        this case); else none when the list names cases (this one is
        descriptive), else those the workload declares (``Metric.primary``)."""
        emitted = self.metrics(case)
        names = {m.name for m in emitted}
        asked = [split_primary(n) for n in self.params.primary]
        chosen = tuple(dict.fromkeys(m for c, m in asked if c in ("", case) and m in names))
        if chosen or any(c for c, _ in asked):
            return chosen
        return tuple(m.name for m in emitted if m.primary)

    def primary_problem(self) -> str:
        """What is wrong with the study's ``primary`` list for this table, in
        words and with the names that would do ("" when nothing): a name must
        be a metric some case emits (METRIC) or one of a case this table runs
        (CASE:METRIC), from the parameters alone."""
        emitted = {case: [m.name for m in self.metrics(case)] for case in self.cases()}
        for name in self.params.primary:
            case, metric = split_primary(name)
            if ":" in name and case not in emitted:
                return (
                    f"{shown(name)}: {shown(case)} is not a case this table runs; its cases: {listed(list(emitted))} "
                    "(write CASE:METRIC, or METRIC for every case)"
                )
            names = emitted[case] if case else list(dict.fromkeys(n for ns in emitted.values() for n in ns))
            if metric not in names:
                what = (
                    f"{shown(name)}: {shown(metric)} is not a metric of its case"
                    if case
                    else f"{shown(metric)} is not a metric of {self.name} with these parameters"
                )
                return f"{what}; its metrics: {listed(names)}"
        return ""

    def defined_metrics(self, case: str) -> list[Metric]:
        """The case's metrics as the run stores them: ``metrics(case)`` with
        each one's primary flag settled by ``primaries(case)``."""
        chosen = set(self.primaries(case))
        return [replace(m, primary=m.name in chosen) for m in self.metrics(case)]

    @classmethod
    def metric_names(cls, params: WorkloadParams) -> list[str]:
        """Every metric name the workload emits with these parameters, over
        all its cases, in order: known before the run (primary_problem checks
        a study's ``primary`` list against each case's)."""
        workload = cls(params, NO_HOST)
        return list(dict.fromkeys(m.name for case in workload.cases() for m in workload.metrics(case)))

    @property
    def duets(self) -> bool:
        """Do this table's cells run as duets under schedule = "duet"? A table
        decided from a sample alone (duet_mode) runs one at a time until then."""
        if self.duet_mode() is not None:
            return self.duet_call is not None and self.duet_call.duet
        return type(self).duet if self.params.duet is None else (self.params.duet and type(self).duet)

    def duet_mode(self) -> str | None:
        """ "auto", "true" or "false" for a table whose schedule is decided from
        one sample run alone (a user's command: nobody knows its CPUs and disk
        before it runs; workloads/duetcall.py); None where the workload's class
        and the table's ``duet`` decide (the built-ins)."""
        return None

    def may_duet(self) -> bool:
        """Is this table counted as a duet under schedule = "duet" before the
        run has decided it (its rounds, its noise figure, its pace)? A table
        decided from a sample alone counts as the duet it mostly becomes."""
        mode = self.duet_mode()
        return self.duets if mode is None else mode != "false"

    def usage(self, values: dict, extra: dict) -> tuple[float, float, float] | None:
        """(CPU seconds, wall seconds, block I/O bytes) of one stored sample,
        for the duet call of a table with a duet_mode; None: not known."""
        return None

    def duet_decision(
        self, mode: str, side_cpus: int, sample: Callable[[], tuple[dict, dict] | None], env: str
    ) -> DuetCall:
        """The call for a table with a duet_mode on sides of ``side_cpus``,
        from ``sample()``: (values, extra) of the case's sample alone, taken
        when first asked for (None: none succeeded)."""
        found = sample() if mode != "false" else None
        used = self.usage(*found) if found is not None else None
        cpu_s, wall_s, io = used if used is not None else (None, None, None)
        return decide(mode, side_cpus, cpu_s, wall_s, io, env)

    def settle_duet(self, call: DuetCall, case: str = "") -> None:
        """The runner's call for a table with a duet_mode (kept with the run):
        one for the table, whichever ``case`` its sample came from."""
        self.duet_call = call

    def duet_decided(self, case: str = "") -> bool:
        """Has the runner made the call ``case`` runs under?"""
        return self.duet_call is not None

    duet_call: DuetCall | None = None

    def planted(self, pct: float) -> Workload:
        """A copy doing pct / (100 - pct) more of the same work in each
        sample while its figures count only the base work, so its rate falls
        by ``pct`` percent on any host (core.plants): what `isobench
        calibrate` plants (docs/calibrate.md). Its ``plant_pct`` is the size
        as built. Raises CannotPlant (one line) where there is no such work."""
        raise CannotPlant(f"{self.name} cannot plant work: it has no amount of work a sample could do more of")

    def cpus_needed(self) -> int:
        """Host CPUs one sample keeps busy (threads, processes): a duet side
        must have as many."""
        return 1

    def footprint(self) -> list[Footprint]:
        """Memory and disk one environment's copy needs (preflight checks them)."""
        return []

    def expected_s(self, case: str) -> float:
        """Roughly how long one sample of `case` takes (seconds), for the
        study's estimated wall time before it starts. Default: a short tool
        run; workloads that run for a set time say so."""
        return 5.0

    def prepare(self, env: Environment) -> None:  # noqa: B027 - optional: most workloads need no inputs
        """Once per environment before any run (inputs, corpus); not timed."""

    def program(self, env: str) -> dict | None:
        """What this workload runs in the environment named ``env``, as its
        prepare() found it there: {"executable", "sha256", "files": {name:
        digest}, "packages": {name: version}}, each part optional. The runner
        keeps it in the environment's facts and, before measuring, compares
        it with the baseline's (results/programs.py). None: nothing of its
        own to compare (a built-in runs the image's packages, whose versions
        every environment records)."""
        return None

    def added_packages(self) -> tuple[str, ...]:
        """Debian packages this workload runs beyond isobench's own lists (a
        command workload's ``packages``): the study's image is built with
        them, a native environment installs them (Environment.provide_packages)."""
        return ()

    @property
    def same_program(self) -> bool:
        """Must every environment run the same bytes? False: the study
        allows them to differ (same_program = false), and every output says
        they do."""
        return True

    @abc.abstractmethod
    def argv(self, case: str, paths: Paths) -> list[str]: ...

    def cwd(self, case: str, paths: Paths) -> str | None:
        return None

    @abc.abstractmethod
    def parse(self, case: str, result: ExecResult) -> Measurement:
        """Pure: turn the tool's output into metric values, or raise ParseError."""

    def cannot_reparse(self, case: str) -> str:
        """Why a stored sample of `case` cannot be recomputed from what the
        store kept of it ("" when it can): values measured outside any
        tool output, or from outputs that were not kept."""
        return ""

    def reparse(self, case: str, raw: str, extra: dict) -> Measurement:
        """Pure: what parse() reads from a stored sample's raw output
        (Measurement.raw) and its stored extra. The default holds for tools
        whose raw output is their stdout; raises ParseError as parse() does."""
        return self.parse(case, ExecResult([], 0, raw, "", 0.0))

    def run(self, case: str, env: Environment) -> Measurement:
        """One measured run. Override when the tool writes its result to a file."""
        result = env.exec(self.argv(case, env.paths), timeout=self.params.timeout_s, cwd=self.cwd(case, env.paths))
        if not result.ok:
            raise WorkloadError(result.describe(), result)
        return self.parse(case, result)

    def units(self, case: str, m: Measurement) -> list:
        """The units of work one run did, from its own values: [name, count]
        (e.g. ["round trip", 48210]); every counter delta divided by the
        count is a per-unit cost (docs/attribution.md). Default: the run."""
        return ["run", 1.0]

    def cleanup(self, env: Environment) -> None:  # noqa: B027 - optional: nothing to remove by default
        """Remove what prepare() wrote; the environment's stop() is the backstop."""

    def secrets(self) -> tuple[str, ...]:
        """Texts never to print or store (a server's per-run password):
        failed samples carry the command line and its output."""
        return ()

    def hide(self, text: str) -> str:
        for secret in self.secrets():
            if secret:
                text = text.replace(secret, "***")
        return text

    def validity(self, case: str, m: Measurement) -> dict[str, str]:
        """What this sample's figures do not mean although their names say so
        (STREAM arrays that fit in the cache, a run too short for its timer):
        metric name -> one short line; the reports print it next to that
        metric's cell. Pure."""
        return {}


def check(result: ExecResult) -> ExecResult:
    """Raise WorkloadError unless the command succeeded."""
    if not result.ok:
        raise WorkloadError(result.describe(), result)
    return result
