"""A duet: two samples of one cell at the same time, each environment on its
own host CPUs (Bulej, Horký, Tůma, Farquet and Prokopec, "Duet
Benchmarking", ICPE 2020).

Both sides are placed, then released by one barrier. The side that finishes
first keeps the same work running, uncounted, in short chunks until the other
finishes, so that neither ever runs alone; a chunk is cut at a tenth of the
sample's length so the other side waits little for it. Each sample keeps its
duet's record: the partner, its CPUs, the start skew and the share of its
time the other side was busy (the overlap)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from isobench.envs.base import Environment
from isobench.run.measure import Taken, take
from isobench.workloads.base import Workload

FILLER_SHARE = 0.1  # a filler chunk's length, as a share of the finished sample
FILLER_MIN_S, FILLER_MAX_S = 0.3, 5.0
BARRIER_TIMEOUT_S = 60.0


@dataclass
class Side:
    env: Environment
    cpus: tuple[int, ...]
    taken: Taken | None = None
    busy: list[tuple[float, float]] = field(default_factory=list)  # perf_counter intervals: sample, then fillers
    fillers: int = 0
    done: threading.Event = field(default_factory=threading.Event)


def overlap(mine: tuple[float, float], theirs: list[tuple[float, float]]) -> float:
    """The share of interval `mine` covered by the other side's busy
    intervals (disjoint, in order). Pure."""
    start, end = mine
    if end <= start:
        return 1.0
    covered = sum(max(0.0, min(end, b) - max(start, a)) for a, b in theirs)
    return min(1.0, covered / (end - start))


def filler_s(sample_s: float) -> float:
    return min(FILLER_MAX_S, max(FILLER_MIN_S, FILLER_SHARE * sample_s))


def filler_argv(workload: Workload, case: str, env: Environment, seconds: float) -> list[str]:
    """The sample's own command, cut after `seconds` (its output is dropped)."""
    return ["timeout", "-k", "1", f"{seconds:.2f}", *workload.argv(case, env.paths)]


def _side(
    workload: Workload, case: str, me: Side, other: Side, barrier: threading.Barrier, noise_facts: dict | None
) -> None:
    try:
        barrier.wait(BARRIER_TIMEOUT_S)
    except threading.BrokenBarrierError:
        me.done.set()
        return
    try:
        me.taken = take(workload, case, me.env, noise_facts)
        me.busy.append((me.taken.t0, me.taken.t0 + me.taken.wall_s))
    finally:
        me.done.set()
    chunk = filler_s(me.taken.wall_s)
    while not other.done.is_set():
        t0 = time.perf_counter()
        try:
            me.env.exec(
                filler_argv(workload, case, me.env, chunk), timeout=chunk + 30, cwd=workload.cwd(case, me.env.paths)
            )
        except Exception:  # noqa: BLE001 - an uncounted filler; the other side's sample says what failed
            break
        me.busy.append((t0, time.perf_counter()))
        me.fillers += 1


def run_duet(
    workload: Workload,
    case: str,
    pair: tuple[Environment, Environment],
    cpus: tuple[tuple[int, ...], tuple[int, ...]],
    noise_facts: dict | None = None,
) -> list[Taken]:
    """Both samples, taken at once; each Taken carries its duet record in
    extra["duet"]. Placement failures raise (EnvironmentError_): the caller
    records both samples as failed."""
    sides = [Side(env, c) for env, c in zip(pair, cpus)]
    for s in sides:
        s.env.place(s.cpus)
    barrier = threading.Barrier(2)
    threads = [
        threading.Thread(
            target=_side,
            args=(workload, case, me, other, barrier, noise_facts),
            name=f"duet-{me.env.name}",
            daemon=True,
        )
        for me, other in (sides, sides[::-1])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = []
    for me, other in (sides, sides[::-1]):
        taken = me.taken or Taken("", time.perf_counter(), 0.0, time.time(), None, "failed", "the duet's barrier broke")
        record: dict[str, Any] = {"partner": other.env.name, "cpus": ",".join(map(str, me.cpus))}
        if me.taken is not None and other.taken is not None:
            record.update(
                {
                    "started": round(me.taken.epoch, 3),
                    "skew_s": round(abs(me.taken.t0 - other.taken.t0), 6),
                    "overlap": round(overlap(me.busy[0], other.busy), 4),
                    "fillers": me.fillers,
                }
            )
        taken.extra["duet"] = record
        out.append(taken)
    return out
