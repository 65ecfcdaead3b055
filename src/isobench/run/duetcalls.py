"""A table's duet call, made during the run (workloads/duetcall.py says what
decides it): a user's command runs its warm-up one sample at a time, and
before its first measured round the runner reads what the baseline's sample
alone used and decides. With ``warmup = 0`` the baseline runs one sample
alone first, kept in the store as a warm-up sample (round -1), and stops
the run as a failed warm-up does when it fails. The call is
kept with the run's facts (schedule.calls), so --resume and the report read
the same call."""

from __future__ import annotations

from typing import Protocol

from isobench.envs.base import Environment
from isobench.run.measure import record, take
from isobench.run.plan import Cell
from isobench.run.schedule import Schedule
from isobench.run.warmup import warmup_failed
from isobench.store.db import Store
from isobench.store.rows import PROBE_ROUND  # the sample alone of a study without warm-up rounds
from isobench.study import StudyMeta
from isobench.workloads.duetcall import DuetCall, from_record


class Told(Protocol):
    """What of the runner's progress a call uses (runner.Progress has it)."""

    def note(self, message: str) -> None: ...
    def extend(self, more: int) -> None: ...


def cell_name(cell: Cell) -> str:
    return f"{cell.key}/{cell.case}"


def restore(store: Store, run_id: str, cells: list[Cell]) -> None:
    """A resumed run's calls, as it made them."""
    calls = (store.run_facts(run_id).get("schedule") or {}).get("calls") or {}
    for cell in cells:
        call = from_record(calls.get(cell_name(cell)))
        if call is not None and cell.workload.duet_mode() is not None:
            cell.workload.settle_duet(call, cell.case)


def settle(
    store: Store,
    run_id: str,
    schedule: Schedule,
    cell: Cell,
    runs: list[Environment],
    meta: StudyMeta,
    progress: Told,
    rounds_left: int,
    noise_facts: dict | None = None,
) -> DuetCall:
    """Decide the cell's table from one sample alone of the baseline (or,
    where the baseline does not run it, the first of ``runs``, the
    environments that do), taking one first when the study has no warm-up
    round; keep and say the call, and grow the progress bar by the samples
    its duets add over ``rounds_left``."""
    w, mode = cell.workload, cell.workload.duet_mode() or "false"
    decider = next((e for e in runs if e.name == meta.baseline), runs[0] if runs else None)
    alone = schedule.samples_per_round(w, len(runs))

    def sample() -> tuple[dict, dict] | None:
        """The decider's sample alone, taken now when the study has no warm-up."""
        if decider is None:
            return None
        found = store.first_alone(run_id, decider.name, cell.key, cell.case)
        if found is None and meta.warmup == 0:
            taken = take(w, cell.workload_case, decider, noise_facts)
            error = record(store, run_id, cell.key, cell.case, w, decider, PROBE_ROUND, True, taken)
            if error is not None:  # a warm-up of its own: it stops the run as one does
                raise warmup_failed(decider.name, cell_name(cell), error)
            found = store.first_alone(run_id, decider.name, cell.key, cell.case)
        return found

    call = w.duet_decision(mode, schedule.side_cpus(), sample, decider.name if decider else "")
    w.settle_duet(call, cell.case)
    facts = store.run_facts(run_id)
    record_ = facts.setdefault("schedule", {})
    record_.setdefault("calls", {})[cell_name(cell)] = call.record()
    record_.setdefault("cells", {})[cell_name(cell)] = schedule.used_for(w, cell.case)
    store.set_run_facts(run_id, facts)
    progress.note(f"{cell_name(cell)}: {call.text()}")
    more = (schedule.samples_per_round(w, len(runs)) - alone) * rounds_left
    if more > 0:
        progress.extend(more)
    return call
