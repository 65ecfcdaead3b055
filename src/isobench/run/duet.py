"""A duet: two samples of one cell at the same time, each environment on its
own host CPUs (Bulej, Horký, Tůma, Farquet and Prokopec, "Duet
Benchmarking", ICPE 2020).

Both sides are placed, then each side's timed command is started and held at
a gate inside its environment, and one release opens both (core/gate.py):
the work starts at the same instant on both sides, whatever each kind's
launch costs; a kind that cannot hold a command starts it at the release
(the record says so). While both samples
run, the sides swap CPUs every ROTATE_S seconds (longer where a move is
slow: swap_period), so each spends about half
its sample on each CPU set: on a shared host the two vCPUs are not equally
fast (one may share a physical core with a busy neighbour, or be descheduled by
the hypervisor), and swapping only between rounds leaves that difference in
every ratio (docs/statistics.md#duet). The side that finishes
first keeps the same work running, uncounted, in short chunks until the other
finishes, so that neither ever runs alone; a chunk is cut at a tenth of the
sample's length so the other side waits little for it. Each sample keeps its
duet's record: the partner, its CPUs, the work's signed start skew and the
share of its time the other side was busy (the overlap), from the work's own
instants; a duet that did not run as planned (too few swaps: the harness was
stopped; a partner that failed) says so, and the runner measures it again."""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from isobench.core.gate import FILLER_GRACE_S, Gate, Inside, SideGate, fresh_argv
from isobench.envs.base import Environment
from isobench.host import counters
from isobench.run.measure import Taken, take
from isobench.workloads.base import Workload

# Measured here (A/A xz, 10 pairs each): paired SD 7.3% swapping every 0.5 s,
# 2.8% every 0.1 s, 1.1% every 0.02 s; A/A and placebo compression at 16 MB,
# 20 pairs, runs interleaved: 1.05-1.16% every 0.1 s, 0.49-0.52% every
# 0.025 s (docs/statistics.md#duet). A move is one cpuset write on each side
# (a container's cgroup, a native command's own: host/samplecgroup.py)
ROTATE_S = 0.025
# a swap whose moves take longer (a VM's threads moved one by one, a
# container by `docker update`) stretches the period, so that moving takes
# at most this share of the sides' time
MOVE_SHARE = 0.1
SWAPS_SEEN = 5  # the last swaps whose median sets the period
MAX_PERIOD_S = 0.5  # sides fixed for longer left 7.3% paired SD (above)
# a duet whose sides stood still longer than this at a stretch (and longer
# than STILL_PERIODS of its period) did not run as planned: a harness stopped
# for 10 s swapped 8 times of about 46, and its sample ran 15% long. Not a
# count of swaps against the planned: a harness woken late on a busy or
# emulated host swaps less often, but evenly (a TCG guest's duets swapped 15
# times of about 39 planned at 0.025 s, 2026-11-29, and were measured again)
STILL_S = 1.0
STILL_PERIODS = 10
# nor one whose home share strays this far
HOME_SHARE_SPAN = (0.25, 0.75)
# nor one whose partner was busy less than this share of its time: the
# partner died mid-duet (its container killed) or its fillers stopped, and it
# ran alone for the rest (a gate's fillers start within a millisecond: 0.99 and more)
PLANNED_OVERLAP = 0.9
FILLER_SHARE = 0.1  # a filler chunk's length, as a share of the finished sample
FILLER_MIN_S, FILLER_MAX_S = 0.3, 5.0
BARRIER_TIMEOUT_S = 60.0


@dataclass
class Side:
    env: Environment
    cpus: tuple[int, ...]
    gate: SideGate
    taken: Taken | None = None
    busy: list[tuple[float, float]] = field(default_factory=list)  # epoch intervals: sample, then fillers
    fillers: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    moves: list[float] = field(default_factory=list)  # epoch instants it changed CPU sets
    moved_by: dict[str, int] = field(default_factory=dict)  # how it was moved (a cgroup write, docker update): times
    periods: list[float] = field(default_factory=list)  # the swap period after each swap (swap_period)
    harness_cpu_s: float = 0.0  # this side's harness thread: its exec, reading, the gate's release


def home_share(mine: tuple[float, float], moves: list[float]) -> float:
    """The share of interval `mine` spent on the side's first CPU set, when
    each of `moves` (in order) flips it to the other set. Pure."""
    start, end = mine
    if end <= start:
        return 1.0
    home, at, on_home = 0.0, start, True
    for m in moves:
        if m <= start:
            on_home = not on_home
            continue
        if m >= end:
            break
        if on_home:
            home += m - at
        at, on_home = m, not on_home
    if on_home:
        home += end - at
    return home / (end - start)


def swap_period(swaps_s: list[float]) -> float:
    """The wait before the next swap, from how long the last swaps took
    (their median: one swap stalled by the host does not stop the rotation):
    ROTATE_S, or longer where moving would take more than MOVE_SHARE of it,
    at most MAX_PERIOD_S. Pure."""
    took = statistics.median(swaps_s[-SWAPS_SEEN:]) if swaps_s else 0.0
    return min(MAX_PERIOD_S, max(ROTATE_S, took / MOVE_SHARE))


def longest_still(mine: tuple[float, float], moves: list[float]) -> float:
    """The longest stretch of interval `mine` in which no move came. Pure."""
    start, end = mine
    edges = [start, *(m for m in moves if start < m < end), end]
    return max(b - a for a, b in zip(edges, edges[1:]))


def _rotate(sides: list[Side], barrier: threading.Barrier, both: threading.Event, errors: list[str]) -> None:
    """Swap the sides' CPU sets every swap_period until both samples are
    done; who moves first alternates, so neither always has the moment when
    both share a set."""
    try:
        barrier.wait(BARRIER_TIMEOUT_S)
    except threading.BrokenBarrierError:
        return
    k, period, took = 0, ROTATE_S, []
    while not both.wait(period):
        k += 1
        t0 = time.perf_counter()
        try:
            for i in (0, 1) if k % 2 else (1, 0):
                how = sides[i].env.move(sides[(i + k) % 2].cpus) or "unsaid"
                sides[i].moves.append(time.time())
                sides[i].moved_by[how] = sides[i].moved_by.get(how, 0) + 1
        except Exception as exc:  # noqa: BLE001 - the samples go on where they are; the record says so
            errors.append(str(exc))
            return
        took.append(time.perf_counter() - t0)
        period = swap_period(took)
        for side in sides:
            side.periods.append(period)


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
    """The sample's own command, cut after `seconds` (its output is dropped),
    with FILLER_GRACE_S to end after its SIGTERM: mpirun takes about 1 s to
    stop its ranks and remove its session directory, and at 1 s it was
    SIGKILLed first, leaving that directory behind."""
    return ["timeout", "-k", f"{FILLER_GRACE_S:g}", f"{seconds:.2f}", *workload.argv(case, env.paths)]


def _side(
    workload: Workload,
    case: str,
    me: Side,
    other: Side,
    barrier: threading.Barrier,
    both: threading.Event,
    noise_facts: dict | None,
) -> None:
    try:
        barrier.wait(BARRIER_TIMEOUT_S)
    except threading.BrokenBarrierError:
        me.gate.abandon()
        me.done.set()
        return
    # a side that falls back must not hold its command: nothing would release it
    me.env.gate = None if me.gate.fallback else me.gate
    cpu0 = time.thread_time()
    try:
        if me.gate.fallback:  # no gate here: started when the other side is released
            me.gate.arrive(None)
        me.taken = take(workload, case, me.env, noise_facts)
        me.busy.append(_window(me.gate.inside, me.taken.epoch, me.taken.wall_s))
    finally:
        me.harness_cpu_s = time.thread_time() - cpu0
        me.env.gate = None
        me.gate.abandon()
        me.done.set()
        if other.done.is_set():  # each side sets, then looks: at least one sees both
            both.set()
    if me.gate.filling:  # its gate runs the fillers: stopped once the other side is done
        other.done.wait()
        me.gate.stop_filling()
        me.fillers = me.gate.fillers
        me.busy.append((me.busy[0][1], me.gate.filled_until or me.busy[0][1]))  # the fillers' real end
    elif me.taken.measurement is not None:  # a side that failed (its container killed) does not fill
        _fill(workload, case, me, other)


def _window(inside: Inside | None, epoch: float, wall_s: float) -> tuple[float, float]:
    """The work's own instants where the gate gave them, else the harness's."""
    return (inside.start, inside.end) if inside is not None else (epoch, epoch + wall_s)


def _fill(workload: Workload, case: str, me: Side, other: Side) -> None:
    """A kind without a gate: the same work, uncounted, exec'd in chunks
    until the other side is done, each in a fresh directory of its own; the
    first that fails is the last."""
    assert me.taken is not None
    chunk = filler_s(me.taken.wall_s)
    cwd = workload.cwd(case, me.env.paths)
    argv = fresh_argv(filler_argv(workload, case, me.env, chunk), cwd, me.env.paths.tmp)
    while not other.done.is_set():
        t0 = time.time()
        try:
            r = me.env.exec(argv, timeout=chunk + 30, cwd=cwd)
        except Exception:  # noqa: BLE001 - an uncounted filler; the other side's sample says what failed
            break
        if r.returncode not in (0, 124):  # failing (an exec into a dead container), it kept nothing busy
            break
        me.busy.append((t0, time.time()))
        me.fillers += 1


def run_duet(
    workload: Workload | tuple[Workload, Workload],
    case: str,
    pair: tuple[Environment, Environment],
    cpus: tuple[tuple[int, ...], tuple[int, ...]],
    noise_facts: dict | None = None,
) -> list[Taken]:
    """Both samples, taken at once; each Taken carries its duet record in
    extra["duet"]. ``workload`` is both sides', or one per side (a planted
    copy on one). Placement failures raise (EnvironmentError_): the caller
    records both samples as failed."""
    works = workload if isinstance(workload, tuple) else (workload, workload)
    gate = Gate()
    sides = [
        Side(env, c, gate.side(i, work.argv(case, env.paths)))
        for i, (env, c, work) in enumerate(zip(pair, cpus, works))
    ]
    for s in sides:
        s.gate.scratch = s.env.paths.tmp  # a work without a directory of its own: its fillers' fresh ones
        s.env.place(s.cpus)
        s.gate.fallback = s.env.gate_problem()
    barrier, both = threading.Barrier(3), threading.Event()
    errors: list[str] = []
    threads = [
        threading.Thread(
            target=_side,
            args=(work, case, me, other, barrier, both, noise_facts),
            name=f"duet-{me.env.name}",
            daemon=True,
        )
        for work, (me, other) in zip(works, (sides, sides[::-1]))
    ]
    threads.append(
        threading.Thread(target=_rotate, args=(sides, barrier, both, errors), name="duet-rotate", daemon=True)
    )
    harness0, daemons0 = time.process_time(), counters.daemons_cpu()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    spent = {"harness_cpu_s": time.process_time() - harness0, "daemons_cpu_s": counters.daemons_cpu() - daemons0}
    out = []
    for me, other in (sides, sides[::-1]):
        taken = me.taken or Taken("", time.perf_counter(), 0.0, time.time(), None, "failed", "the duet's barrier broke")
        taken.extra["duet"] = duet_record(me, other, errors)
        taken.extra["duet"]["cpu"] = {
            "side_s": round(me.harness_cpu_s, 4),
            **{k: round(v, 3) for k, v in spent.items()},
        }
        out.append(taken)
    return out


def duet_record(me: Side, other: Side, errors: list[str]) -> dict[str, Any]:
    """What a sample keeps of its duet: partner, CPUs, the gate, the work's
    signed start skew (positive: this side started later), overlap, swaps,
    home share, and why it did not run as planned where it did not."""
    record: dict[str, Any] = {"partner": other.env.name, "cpus": ",".join(map(str, me.cpus))}
    record["gate"] = "held" if me.gate.held and me.gate.inside else (me.gate.fallback or "not reached")
    if me.gate.standing:
        record["standing"] = me.gate.standing
    if me.moved_by:  # the mechanism of its moves, each with its count
        record["moved_by"] = "; ".join(f"{how}: {n}" for how, n in sorted(me.moved_by.items()))
    if me.taken is not None and other.taken is not None and me.busy and other.busy:
        mine, theirs = me.busy[0], other.busy[0]
        both_inside = me.gate.inside is not None and other.gate.inside is not None
        record.update(
            {
                "started": round(mine[0], 3),
                "skew_s": round(mine[0] - theirs[0], 6),
                "clock": "work" if both_inside else "harness",
                "overlap": round(overlap(mine, other.busy), 4),
                "fillers": me.fillers,
                "swaps": sum(1 for m in me.moves if mine[0] <= m <= mine[1]),  # while its work ran
                "home_share": round(home_share(mine, me.moves), 4),
                "rotate_s": round(statistics.median(me.periods), 4) if me.periods else ROTATE_S,
                "still_s": round(longest_still(mine, me.moves), 3),
            }
        )
        if me.gate.inside is not None:
            record["stack_bytes"] = me.gate.inside.stack_bytes
    if errors:
        record["rotate_error"] = errors[0][:200]
    why = not_as_planned(record, me.busy[0] if me.busy else None, other.taken)
    if why:
        record["not_as_planned"] = why
    return record


def not_as_planned(record: dict[str, Any], mine: tuple[float, float] | None, partner: Taken | None) -> str:
    """Why a duet's sample did not run beside its partner as planned ("" when
    it did): its partner failed or never ran, a move failed, its partner was
    not busy all along (it died, or its fillers stopped), the sides stood
    still (the harness stopped), or one spent most of its time on one set. Pure."""
    if mine is None:
        return ""
    if partner is None or partner.measurement is None:
        return "its partner failed, so it ran alone in part"
    if record.get("rotate_error"):
        return f"a swap failed: {record['rotate_error']}"
    if record.get("overlap", 1.0) < PLANNED_OVERLAP:
        return f"its partner was busy {record['overlap']:.0%} of its time (it died, or its fillers stopped)"
    period = record.get("rotate_s") or ROTATE_S  # the median period its moves allowed
    still, share = record.get("still_s", 0.0), record.get("home_share", 0.5)
    if still > max(STILL_S, STILL_PERIODS * period):
        return f"its sides stood still for {still:.1f} s at a stretch (was the harness stopped?)"
    if (mine[1] - mine[0]) / period >= 10 and not HOME_SHARE_SPAN[0] <= share <= HOME_SHARE_SPAN[1]:
        return f"spent {share:.0%} of its time on its first CPUs, not about half"
    return ""
