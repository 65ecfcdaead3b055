"""One sample: taken (the workload run in the environment, counters around
it), then recorded. The two are apart so that a duet can take two samples
at once on two threads and record both from the thread that owns the store."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from isobench.envs.base import Environment
from isobench.host import counters
from isobench.store.db import Sample, Store, now_iso
from isobench.workloads.base import Measurement, ParseError, Workload, WorkloadError, checked


@dataclass
class Taken:
    """What one sample gave: its measurement, or why it failed."""

    started_at: str
    t0: float  # perf_counter at its start (a duet's skew and overlap)
    wall_s: float
    epoch: float = 0.0  # time.time() at its start: started_at to the millisecond
    measurement: Measurement | None = None
    status: str = "ok"  # ok | failed | timeout
    error: str = ""
    raw: str = ""
    extra: dict = field(default_factory=dict)  # beside the measurement's own (a duet's record)


def take(workload: Workload, case: str, env: Environment, noise_facts: dict | None = None) -> Taken:
    """Run one sample; never raises for a failing workload."""
    started_at, epoch, t0 = now_iso(), time.time(), time.perf_counter()
    try:
        env.timed = _timed(workload, case, env)  # what it leaves is ended with it (Environment.timed)
        try:
            with counters.around(env.counters) as box:  # host + environment deltas -> extra["counters"]
                m = checked(workload.run(case, env))
                box["extra"] = m.extra
        finally:
            env.timed = None
        m.extra["units"] = counters.units_of(lambda: workload.units(case, m))
        if noise_facts is not None:
            m.extra["noise"] = noise_facts
        notes = workload.validity(case, m)
        if notes:
            m.extra["validity"] = notes
    except Exception as exc:  # noqa: BLE001 - recorded as a failed sample; the study goes on
        result = getattr(exc, "result", None)
        hide = workload.hide  # the command line and output may carry a server's password
        raw = hide(result.stdout + result.stderr) if result is not None else ""
        status = "timeout" if (result is not None and result.timed_out) else "failed"
        reason = hide(str(exc) if isinstance(exc, (WorkloadError, ParseError)) else f"{type(exc).__name__}: {exc}")
        return Taken(
            started_at,
            t0,
            time.perf_counter() - t0,
            epoch,
            None,
            status,
            reason,
            raw,
            {"noise": noise_facts} if noise_facts else {},
        )
    return Taken(started_at, t0, time.perf_counter() - t0, epoch, m)


def _timed(workload: Workload, case: str, env: Environment) -> list[str] | None:
    """The command a sample of this workload times (None: it times none in
    the environment, a server's load runs on the client host)."""
    try:
        return list(workload.argv(case, env.paths))
    except Exception:  # noqa: BLE001 - no command of its own: its run() says what fails
        return None


def discarded(taken: Taken, why: str) -> Taken:
    """A taken sample kept as failed: its values stay in extra["discarded"]
    (nothing measured is lost), `why` is its error."""
    extra = dict(taken.extra)
    if taken.measurement is not None:
        extra["discarded"] = taken.measurement.values
    raw = taken.measurement.raw if taken.measurement is not None else taken.raw
    return Taken(taken.started_at, taken.t0, taken.wall_s, taken.epoch, None, "failed", why, raw, extra)


def record(
    store: Store,
    run_id: str,
    key: str,
    case: str,
    workload: Workload,
    env: Environment,
    round_: int,
    warmup: bool,
    taken: Taken,
) -> str | None:
    """Store a taken sample; returns why it failed (None: ok)."""
    if taken.measurement is None:
        store.add_sample(
            Sample(
                run_id,
                env.name,
                key,
                case,
                round_,
                warmup,
                taken.status,
                taken.started_at,
                taken.wall_s,
                extra=taken.extra,
                raw=taken.raw,
                error=taken.error[:500],
                parser_version=workload.parser_version,
            )
        )
        return taken.error
    m = taken.measurement
    # the parser's version goes with its values: a later parser change is told
    # apart, and `isobench reparse` recomputes them from m.raw
    store.add_sample(
        Sample(
            run_id,
            env.name,
            key,
            case,
            round_,
            warmup,
            "ok",
            taken.started_at,
            taken.wall_s,
            m.values,
            {**m.extra, **taken.extra},
            m.raw,
            parser_version=workload.parser_version,
        )
    )
    return None


def record_failure(
    store: Store, run_id: str, key: str, case: str, env: Environment, round_: int, warmup: bool, reason: str
) -> None:
    store.add_sample(Sample(run_id, env.name, key, case, round_, warmup, "failed", now_iso(), 0.0, error=reason))
