"""What runs next, and which samples run together.

A schedule turns one round of one cell into slots: a slot is one sample run
alone, or two samples run at the same time, each on its own host CPUs.

- sequential: every environment alone, in the order of a Williams square's
  row for the round (over every square each environment is in each position
  once and follows each other one once), so that drift in the machine shows
  up as spread, not as overhead (a fixed run makes whole squares where that
  costs at most half again: StudyMeta.rounds_for); "blocked" keeps the
  study's order.
- duet: the baseline's sample and each other environment's sample at the same
  time, each on half the host's CPUs, so whatever the host's neighbours do
  hits both (Bulej et al., ICPE 2020). The duets of a round run in a Williams
  row's order over the other environments; every environment changes CPU
  set each round, so over two rounds each sits on each set once. A workload that cannot duet
  (Workload.duet) runs sequentially in the same study; a table decided from a
  sample alone (Workload.duet_mode: a user's command) runs one at a time until
  the runner has decided it (run/duetcalls.py).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import ClassVar

from isobench.analysis.order import rotation_period
from isobench.envs.base import Environment
from isobench.envs.pinning import duet_sides, usable_cpus
from isobench.run.duet import MOVE_SHARE, ROTATE_S
from isobench.workloads.base import Workload

SCHEDULES = ("sequential", "duet")


@dataclass(frozen=True)
class Slot:
    """Samples that run together: one environment alone, or (baseline,
    other) at the same time, each on its `cpus` (one tuple per environment)."""

    envs: tuple[Environment, ...]
    cpus: tuple[tuple[int, ...], ...] = ()

    @property
    def together(self) -> bool:
        return len(self.envs) > 1


def williams_row(n: int, row: int) -> list[int]:
    """Row ``row`` of a Williams square over n items: the first row is
    0, 1, n-1, 2, n-2, ...; row i adds i (mod n). For odd n the rows after
    the first n are the first n reversed, so 2n rows balance who follows whom
    (analysis.order.rotation_period)."""
    if n <= 0:
        return []
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    r = row % rotation_period(n)
    out = [(x + r % n) % n for x in first]
    return out[::-1] if r >= n else out


def round_order(envs: list[Environment], measured_round: int, order: str) -> list[Environment]:
    """The environments in the order ``measured_round`` runs them (0 is the
    first measured round; warm-up rounds are negative)."""
    if order == "blocked":
        return envs
    return [envs[i] for i in williams_row(len(envs), measured_round)]


class Schedule(abc.ABC):
    """What every schedule answers: the slots of one round of one cell."""

    name: ClassVar[str]

    def __init__(self, baseline: str, order: str):
        self.baseline = baseline
        self.order = order

    @abc.abstractmethod
    def slots(self, workload: Workload, envs: list[Environment], measured_round: int) -> list[Slot]:
        """The round's slots for this workload's cell, in the order they run."""

    @abc.abstractmethod
    def used_for(self, workload: Workload, case: str = "") -> str:
        """The schedule this workload's ``case`` actually runs under (recorded
        with the run, said by the report)."""

    def samples_per_round(self, workload: Workload, envs: int) -> int:
        """Samples one round of a cell stores over `envs` environments."""
        return envs

    def facts(self) -> dict:
        """What the run's facts keep of the schedule beyond its name."""
        return {}

    def side_cpus(self) -> int:
        """Host CPUs on each side of a duet (0: this schedule runs none)."""
        return 0

    def decides(self, workload: Workload, case: str = "") -> bool:
        """Must this workload's ``case`` be decided from a sample alone before
        its measured rounds (Workload.duet_mode, run/duetcalls.py)?"""
        return False


class Sequential(Schedule):
    name = "sequential"

    def slots(self, workload: Workload, envs: list[Environment], measured_round: int) -> list[Slot]:
        return [Slot((env,)) for env in round_order(envs, measured_round, self.order)]

    def used_for(self, workload: Workload, case: str = "") -> str:
        return self.name


class Duet(Schedule):
    name = "duet"

    def __init__(self, baseline: str, order: str, cpus: list[int] | None = None):
        super().__init__(baseline, order)
        self.sides = duet_sides(usable_cpus() if cpus is None else cpus)
        self._sequential = Sequential(baseline, order)

    def used_for(self, workload: Workload, case: str = "") -> str:
        if self.decides(workload, case) and workload.may_duet():
            return "auto"  # until its sample alone decides it
        return self.name if workload.duets else self._sequential.name

    def facts(self) -> dict:
        return {"sides": [list(s) for s in self.sides], "rotate_s": ROTATE_S, "move_share": MOVE_SHARE}

    def side_cpus(self) -> int:
        return len(self.sides[0])

    def decides(self, workload: Workload, case: str = "") -> bool:
        return workload.duet_mode() is not None and not workload.duet_decided(case)

    def samples_per_round(self, workload: Workload, envs: int) -> int:
        # the baseline runs once beside each other environment
        return 2 * (envs - 1) if workload.duets and envs > 1 else envs

    def slots(self, workload: Workload, envs: list[Environment], measured_round: int) -> list[Slot]:
        base = next((e for e in envs if e.name == self.baseline), None)
        others = [e for e in envs if e is not base]
        if not workload.duets or base is None or not others:
            return self._sequential.slots(workload, envs, measured_round)
        a, b = self.sides
        out = []
        for other in round_order(others, measured_round, self.order):
            # each environment changes sides every round, and within a round
            # the baseline takes each side as often as it can
            swap = (measured_round + others.index(other)) % 2 == 1
            out.append(Slot((base, other), (b, a) if swap else (a, b)))
        return out


def make_schedule(name: str, baseline: str, order: str) -> Schedule:
    return {"sequential": Sequential, "duet": Duet}[name](baseline, order)
