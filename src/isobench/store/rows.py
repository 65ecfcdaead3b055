"""The rows the store writes and lists: a measured sample, a reparse's
rewrite of one, a run as `isobench runs` lists it (re-exported by db)."""

from __future__ import annotations

from dataclasses import dataclass, field

# The round of a table's duet probe (run/duetcalls.py): with warmup = 0 the
# baseline's sample alone is kept as a warm-up before round 0. The only
# round below 0 isobench stores, and only as a warm-up.
PROBE_ROUND = -1


@dataclass(frozen=True)
class Sample:
    """One measured run of a cell (workload case x environment x round)."""

    run_id: str
    env: str
    workload: str
    case: str
    round: int
    warmup: bool
    status: str  # ok | failed | timeout
    started_at: str
    wall_s: float
    values: dict = field(default_factory=dict)  # metric -> value
    extra: dict = field(default_factory=dict)  # detail: latency histograms, noise facts ...
    raw: str = ""  # the tool's output, so the sample can be re-parsed
    error: str | None = None  # one line, for failed samples
    parser_version: int | None = None  # Workload.parser_version that made `values`


@dataclass(frozen=True)
class Rewrite:
    """New values for one stored sample (isobench reparse)."""

    id: int  # samples.id
    values: dict
    extra: dict
    parser_version: int


@dataclass
class RunRow:
    run_id: str
    study_name: str
    started_at: str
    finished_at: str | None
    status: str
    environments: list[str]
    samples_ok: int  # measured, warm-ups left out
    samples_failed: int
    warmups: int = 0  # ok warm-up samples, left out of samples_ok and of every statistic
