"""Which parser made a run's values, per workload, and whether a series of
runs mixes parsers.

Every sample records the ``Workload.parser_version`` that read its values
from the tool's raw output (store.py, ``samples.parser_version``, written
by the runner and by ``isobench reparse``). A sample stored before versions
were recorded says nothing; it reads as version 1 when the workload's
parser has never changed (its current version is 1), and as unknown (None)
when it has: the store cannot tell whether such a sample was measured
before or after the change (docs/reliability.md).

``series_versions`` is what other commands ask (the history command: does
a series of runs mix parsers for a workload?).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field

from isobench.core import tomlbound
from isobench.workloads import WORKLOADS

UNKNOWN = None  # the version of a sample the store does not say, of a workload whose parser changed


def workload_kinds(study_text: str) -> dict[str, str]:
    """The study's workload names -> their workload (a key of WORKLOADS),
    from the TOML alone: a stored study that today's study model refuses
    (a field added or bounded since) still names its workloads."""
    try:
        raw = tomlbound.loads(study_text)
    except (tomllib.TOMLDecodeError, tomlbound.TomlBoundError):
        return {}
    tables = raw.get("workloads")
    if not isinstance(tables, dict):
        return {}
    out = {}
    for key, body in tables.items():
        kind = body.get("workload", key) if isinstance(body, dict) else None
        if isinstance(kind, str):
            out[key] = kind
    return out


def current_version(kind: str) -> int | None:
    """The current parser version of a workload, None for a workload this
    isobench does not know."""
    cls = WORKLOADS.get(kind)
    return cls.parser_version if cls is not None else None


def read_version(stored: int | None, kind: str) -> int | None:
    """A sample's parser version: as recorded, or where the store does not
    say, 1 for a workload whose parser never changed, else UNKNOWN."""
    if stored is not None:
        return int(stored)
    return 1 if current_version(kind) == 1 else UNKNOWN


def shown(version: int | None) -> str:
    return "unknown" if version is None else str(version)


def _order(version: int | None) -> tuple[int, int]:
    return (1, 0) if version is None else (0, version)


def run_versions(
    store, run_id: str, workload: str | None = None, kinds: dict[str, str] | None = None
) -> dict[tuple[str, str], dict]:
    """{(workload, case): {version or UNKNOWN: measured samples}} of one
    run, each stored version read as read_version does (KINDS: the run's
    workload_kinds, when the caller has them)."""
    if kinds is None:
        kinds = workload_kinds(store.study_of(run_id)[1])
    out: dict[tuple[str, str], dict] = {}
    for (w, c), counts in store.parser_versions(run_id, workload).items():
        cell = out.setdefault((w, c), {})
        for stored, n in counts.items():
            version = read_version(stored, kinds.get(w, ""))
            cell[version] = cell.get(version, 0) + n
    return out


@dataclass(frozen=True)
class VersionMix:
    """The parser versions of one workload (optionally one case) over runs."""

    workload: str  # the studies' name for it, as stored (samples.workload)
    case: str | None  # None: every case
    current: int | None  # the current parser's version; None when no run names a known workload
    by_run: dict[str, dict] = field(default_factory=dict)  # run id -> {version or UNKNOWN: samples}

    @property
    def versions(self) -> list[int | None]:
        """Every version the runs' measured samples carry, UNKNOWN last."""
        return sorted({v for counts in self.by_run.values() for v in counts}, key=_order)

    @property
    def mixed(self) -> bool:
        """Two known parser versions made the series' values."""
        return len([v for v in self.versions if v is not None]) > 1

    @property
    def unknown_runs(self) -> list[str]:
        """Runs with samples whose parser version cannot be told."""
        return [r for r, counts in self.by_run.items() if UNKNOWN in counts]

    @property
    def comparable(self) -> bool:
        """One known parser made every value of the series."""
        return not self.mixed and not self.unknown_runs

    @property
    def stale_runs(self) -> list[str]:
        """Runs with samples not made by the current parser: `isobench reparse` candidates."""
        return [r for r, counts in self.by_run.items() if any(v != self.current for v in counts)]

    def describe(self) -> str:
        """One line: the versions and, when they differ, the fix."""
        what = self.workload + (f" ({self.case})" if self.case else "")
        if not any(self.by_run.values()):
            return f"{what}: no measured sample in these runs"
        if self.comparable:
            return f"{what}: parser version {shown(self.versions[0])} in every run"
        parts = []
        for v in self.versions:
            runs = [r for r, counts in self.by_run.items() if v in counts]
            parts.append(f"{shown(v)} ({', '.join(runs)})")
        fix = (
            f"; `isobench reparse RUN` recomputes {', '.join(self.stale_runs)} with version {shown(self.current)}"
            if self.stale_runs and self.current is not None
            else ""
        )
        state = "mixes parser versions" if self.mixed else "may mix parser versions"
        return f"{what}: the series {state}: " + "; ".join(parts) + fix


def series_versions(store, run_ids: Iterable[str], workload: str, case: str | None = None) -> VersionMix:
    """Whether the runs' measured samples of WORKLOAD (the studies' name for
    it; optionally one stored CASE) were parsed by one parser version.
    Raises StoreError for a run the store does not hold."""
    by_run: dict[str, dict] = {}
    current = None
    for run_id in run_ids:
        kinds = workload_kinds(store.study_of(run_id)[1])
        if workload in kinds and current is None:
            current = current_version(kinds[workload])
        counts: dict = {}
        for (_w, c), cell in run_versions(store, run_id, workload, kinds).items():
            if case is None or c == case:
                for v, n in cell.items():
                    counts[v] = counts.get(v, 0) + n
        by_run[run_id] = counts
    return VersionMix(workload, case, current, by_run)
