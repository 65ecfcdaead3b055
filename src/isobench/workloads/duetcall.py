"""Whether a table whose work nobody knows before it runs (a user's command)
runs as a duet: decided from one sample run alone, its warm-up (or, with
``warmup = 0``, a first sample of the baseline taken alone and kept as a
warm-up). Two figures decide, both from the sample's own rusage (GNU time):

- CPU seconds per wall second: a duet side has ``side_cpus`` host CPUs, and
  work that keeps more busy would be squeezed onto them (a program that sizes
  itself from the CPUs it sees runs at a side's size in a duet);
- block I/O per wall second (the filesystem inputs and outputs GNU time
  counts, 512-byte blocks): the two sides would share the device, so a duet
  would not cancel what it does.

A server workload (workloads/server.py) is decided the same way, case by
case: a side must hold the server and its load generator, each on its own
CPU at least (a round trip on one CPU would measure a context switch, not
the network), so a side needs the server's CPUs plus its client's, from
what each used in the case's sample alone (the server's /proc/PID/stat,
the client's rusage: ``decide_server``); on a side of one CPU that is
known before any sample.

Pure: the runner (run/runner.py) takes the sample, asks the workload, and
keeps the call with the run's facts; the report says it (results/schedule.py)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# Above this a command keeps more than its side busy: 10% over a side's
# CPUs (a one-thread program reads 0.97 to 1.02 here, GNU time counting its
# helper processes too).
CPU_MARGIN = 1.1
# Above this much block I/O per wall second the two sides would contend for
# the disk (this host's shared virtual disk moves 7-20% per sample alone).
# Not lower: a CPU-bound program's own reads and writes read 0.5 to 1.2 MB/s
# here from one run to the next (own-programs' tar of 1.1 MB through xz,
# cold or warm page cache), fio's uncached random reads 57 MB/s.
IO_LIMIT_MB_S = 10.0
MODES = ("auto", "true", "false")


@dataclass(frozen=True)
class DuetCall:
    """One table's schedule under schedule = "duet", and what decided it."""

    duet: bool
    mode: str  # "auto", "true" or "false": what the table asked for
    side_cpus: int
    cpus: float | None = None  # CPU seconds per wall second of the deciding sample
    io_mb_s: float | None = None  # its block I/O, MB per wall second
    env: str = ""  # whose sample decided
    saturated: bool = False  # duet = true on work that needed more than a side
    # a server and its load generator (decide_server): ``cpus`` the server's,
    # this the client's CPU seconds per wall second
    client_cpus: float | None = None
    server: bool = False

    def text(self) -> str:
        """What the answer says of it, e.g. "ran as a duet: 0.98 CPU per wall
        second, 0.1 MB/s of disk; measured on 1 CPU per side"."""
        side = f"measured on {self.side_cpus} CPU{'s' if self.side_cpus != 1 else ''} per side"
        if self.mode == "false":
            return "one at a time: the study says duet = false"
        if self.server:
            return self._server_text()
        if self.cpus is None or self.io_mb_s is None:
            if self.duet:
                return f"ran as a duet (duet = true; no sample alone said what it used); {side}"
            return "one at a time: no sample alone said what it used (its warm-up failed)"
        used = f"{_cpus(self.cpus)} per wall second, {self.io_mb_s:.1f} MB/s of disk"
        if self.duet and self.saturated:
            return (
                f"ran as a duet as the study asks (duet = true), but alone it used {_cpus(self.cpus)}, more "
                f"than a side's {self.side_cpus}: its side was saturated; {side}"
            )
        if self.duet:
            return f"ran as a duet: {used}; {side}"
        if self.io_mb_s > IO_LIMIT_MB_S:
            return f"one at a time: {self.io_mb_s:.1f} MB/s of disk I/O: the two sides would share the device"
        return f"one at a time: {_cpus(self.cpus)}, more than a side's {self.side_cpus}"

    def _server_text(self) -> str:
        side = f"a side has {self.side_cpus}"
        if self.cpus is None or self.client_cpus is None:
            if self.side_cpus < SERVER_PAIR_CPUS:
                return f"one at a time: the server and its client need {SERVER_PAIR_CPUS} CPUs, {side}"
            return (
                "one at a time: no sample alone said what the server and its client used "
                "(its warm-up failed, or it did not read the server's CPU time)"
            )
        need = server_pair_cpus(self.cpus, self.client_cpus)
        used = f"the server and its client used {self.cpus:.2f} + {self.client_cpus:.2f} CPUs"
        if need > self.side_cpus:
            return f"one at a time: {used}, so they need {need} CPUs, {side}"
        return (
            f"one at a time: {used}, within a side's {self.side_cpus}, but isobench does not yet run "
            "a server and its client as a duet"
        )

    def record(self) -> dict:
        return {**asdict(self), "text": self.text()}


def _cpus(x: float) -> str:
    return f"{x:.2f} CPU" if x < 1.005 else f"{x:.2f} CPUs"


# a server and its load generator: each on a CPU of its own at least
SERVER_PAIR_CPUS = 2


def server_pair_cpus(server: float, client: float) -> int:
    """Whole CPUs a server and its client need beside each other: each one's
    CPU seconds per wall second rounded up (within CPU_MARGIN of a whole CPU
    counts as it), one at least each."""
    return sum(max(1, math.ceil(x / CPU_MARGIN)) for x in (server, client))


def decide_server(
    mode: str,
    side_cpus: int,
    server_cpu_s: float | None = None,
    client_cpu_s: float | None = None,
    wall_s: float | None = None,
    env: str = "",
) -> DuetCall:
    """The call for a server workload's case on sides of ``side_cpus``, from
    what its server and its client used in the case's sample alone (None:
    no sample, or none needed: a side under SERVER_PAIR_CPUS). Never a duet
    yet: what a server duet needs beyond the call (each side's server on
    its own port, its client held at the gate and moved with its side) is
    not built; the call says whether one would fit. Pure."""
    if mode not in MODES:
        raise ValueError(f"duet mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "false" or side_cpus < SERVER_PAIR_CPUS or server_cpu_s is None or client_cpu_s is None:
        return DuetCall(False, mode, side_cpus, env=env, server=True)
    if not wall_s or wall_s <= 0:
        return DuetCall(False, mode, side_cpus, env=env, server=True)
    return DuetCall(
        False, mode, side_cpus, server_cpu_s / wall_s, None, env, client_cpus=client_cpu_s / wall_s, server=True
    )


def decide(
    mode: str, side_cpus: int, cpu_s: float | None, wall_s: float | None, io_bytes: float | None, env: str = ""
) -> DuetCall:
    """The call for a table asking ``mode``, from its sample alone: CPU
    seconds (user + system), wall seconds and block I/O bytes; None where
    no sample alone succeeded. Pure."""
    if mode not in MODES:
        raise ValueError(f"duet mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "false":
        return DuetCall(False, mode, side_cpus)
    if cpu_s is None or not wall_s or wall_s <= 0 or io_bytes is None:
        return DuetCall(mode == "true", mode, side_cpus, env=env)
    cpus, io = cpu_s / wall_s, io_bytes / wall_s / 1e6
    over = cpus > side_cpus * CPU_MARGIN
    if mode == "true":
        return DuetCall(True, mode, side_cpus, cpus, io, env, saturated=over)
    return DuetCall(not over and io <= IO_LIMIT_MB_S, mode, side_cpus, cpus, io, env)


def from_record(record: object) -> DuetCall | None:
    """A call kept with a run's facts, back (None: not one)."""
    if not isinstance(record, dict):
        return None
    fields = {k: record.get(k) for k in DuetCall.__dataclass_fields__}
    if not isinstance(fields["duet"], bool) or fields["mode"] not in MODES or not isinstance(fields["side_cpus"], int):
        return None
    try:
        return DuetCall(**{k: v for k, v in fields.items() if v is not None})
    except TypeError:
        return None
