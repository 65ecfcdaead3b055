"""Before the first sample: each workload prepared once in every
environment, what it found there recorded (Workload.program: the digest of
the executable each environment resolved, of every copied file, its
packages' versions) and, where the study asks for the same program
everywhere, a run whose environment runs other bytes than the baseline
refused before anything is measured (results/programs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from isobench.core.errors import IsobenchError
from isobench.envs.base import Environment
from isobench.results.programs import PROGRAMS, differences, refusal
from isobench.workloads.base import Workload


class Notes(Protocol):
    def note(self, message: str) -> None: ...


class ProgramsDiffer(IsobenchError):
    """An environment runs other bytes than the baseline and the study did not allow it."""


def prepare(
    workloads: dict[str, Workload],
    envs: list[Environment],
    progress: Notes,
    planted: Mapping[tuple[str, str], Workload] | None = None,
) -> dict[tuple[str, str], str]:
    """Prepare each workload (the study's name -> it) once per environment
    (its planted copy where ``planted`` holds one for (name, environment)).
    A failure fails that workload's cells in that environment only; returns
    why, per (workload, env)."""
    failures = {}
    planted = planted or {}
    for key, base in workloads.items():
        for env in envs:
            progress.note(f"preparing {key} in {env.name}")
            workload = planted.get((key, env.name), base)
            try:
                workload.prepare(env)
            except Exception as exc:  # noqa: BLE001 - any failure fails this workload here, not the study
                failures[(key, env.name)] = workload.hide(f"prepare failed: {exc}")[:500]
                progress.note(f"prepare {key} in {env.name} failed: {workload.hide(str(exc))}")
    return failures


def programs(
    workloads: dict[str, Workload],
    envs: list[Environment],
    skip: dict[tuple[str, str], str],
    planted: Mapping[tuple[str, str], Workload] | None = None,
) -> dict[str, dict[str, dict]]:
    """Environment -> {workload: what it runs there}, for the workloads
    that record one (an environment whose preparation failed has none, nor
    one that never runs the workload: ``skip``'s (environment, workload))."""
    out: dict[str, dict[str, dict]] = {}
    planted = planted or {}
    for env in envs:
        found = {
            key: record
            for key, w in workloads.items()
            if (env.name, key) not in skip and (record := planted.get((key, env.name), w).program(env.name)) is not None
        }
        if found:
            out[env.name] = found
    return out


def with_programs(facts: dict, found: dict[str, dict]) -> dict:
    """An environment's facts with its workloads' programs."""
    return {**facts, PROGRAMS: found} if found else facts


def check_same(
    workloads: dict[str, Workload], found: dict[str, dict[str, dict]], baseline: str, progress: Notes
) -> None:
    """Raise ProgramsDiffer (one line: the workload, the environment, the
    file or executable and both digests) for the first workload whose
    environments run other bytes than the baseline unless its study allows
    it; a note for each one allowed."""
    for key, workload in workloads.items():
        records = {env: table[key] for env, table in found.items() if key in table}
        diff = differences(records, baseline)
        if not diff:
            continue
        if workload.same_program:
            raise ProgramsDiffer(refusal(key, diff, baseline))
        for d in diff:
            progress.note(f"{key}: {d.text(baseline)} (same_program = false: measured anyway, and said)")
