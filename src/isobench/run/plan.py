"""A study's run, laid out before anything starts: its cells (one per
workload case, and per noise step under a [noise] table), in the order the
runner measures them, and the run's id. Pure but for the workloads'
constructors; the runner (run/runner.py) measures what this lays out."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from isobench.envs.kinds import kind_of
from isobench.envs.pinning import side_host
from isobench.host.noise import step_case
from isobench.study import Study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import Workload


@dataclass(frozen=True)
class Cell:
    key: str  # the study's workload name
    case: str  # as stored: the workload's case, plus ",noise=W" under a noise step
    workload: Workload
    run_case: str = ""  # the workload's own case (what run() is given)
    noise_step: int | None = None
    planted: tuple[tuple[str, Workload], ...] = ()  # (environment, the workload's planted copy there)

    @property
    def workload_case(self) -> str:
        return self.run_case or self.case

    def workload_in(self, env: str) -> Workload:
        """What runs in ``env``: the workload, or its planted copy there."""
        return next((w for name, w in self.planted if name == env), self.workload)


def new_run_id(study: Study) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{study.meta.name}-{secrets.token_hex(2)}"


def plan(study: Study, host) -> list[Cell]:
    """Every cell of the study; with a [noise] table, every cell once per
    step, steps in order (the runner measures one step's cells together)."""
    cells: list[Cell] = []
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        if study.meta.schedule == "duet" and workload.duets:  # "all cores" is one side's
            workload = WORKLOADS[entry.workload](entry.params, side_host(host))
        # the study checked that every workload plants (study._check_plants)
        planted = tuple((env, workload.planted(pct)) for env, pct in study.meta.plants.items())
        cells.extend(Cell(entry.key, case, workload, planted=planted) for case in workload.cases())
    if study.noise is None:
        return cells
    return [
        Cell(c.key, step_case(c.case, w), c.workload, c.case, w, c.planted) for w in study.noise.steps for c in cells
    ]


def planted_of(cells: list[Cell]) -> dict[tuple[str, str], Workload]:
    """(workload key, environment) -> the planted copy that runs there."""
    return {(c.key, env): w for c in cells for env, w in c.planted}


def by_step(cells: list[Cell]) -> list[tuple[int | None, list[Cell]]]:
    """Cells grouped by noise step, in plan order."""
    groups: dict[int | None, list[Cell]] = {}
    for c in cells:
        groups.setdefault(c.noise_step, []).append(c)
    return list(groups.items())


def needs_image(study: Study) -> bool:
    return any(kind_of(spec.kind).needs_image for spec in study.environments.values())
