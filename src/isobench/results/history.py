"""Each environment's overhead across runs: series, change points and what
changed at each (`isobench history`, docs/history.md).

Runs of one study are grouped by host class (results/fingerprint.py); within
a group, every primary cell (workload case metric x environment, against the
run's baseline) is a *series*: that cell's change vs the baseline in each
run, exactly as the run's Table I gives it (estimate, standard error,
interval). isobench.analysis.changepoints finds the steps of every series, judged
together; each confirmed step comes with the runs on either side and the
facts that differ between the last run before it and the first run after.
An edit of the study file (a new study hash) stays in its series: it is a
fact, shown where it happened. Pure data: the renderers are in report/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from isobench.analysis import changepoints as cp
from isobench.analysis.stats import ALPHA
from isobench.analysis.verdicts import Verdict, fmt_level
from isobench.results.analysis import interval_text
from isobench.results.fingerprint import HostClass, facts_diff, group_runs, host_name
from isobench.results.gate import why_blind
from isobench.results.model import MetricKey, RunData
from isobench.results.numbers import fmt_pct
from isobench.results.primary import primary_keys
from isobench.results.table import HIGHER, LOWER, build_table

# Runs whose cells were all attempted; a running, interrupted or failed run
# has some cells measured under conditions the others did not see.
USABLE_STATUSES = ("complete", "incomplete")


@dataclass(frozen=True)
class CellId:
    workload: str
    case: str
    metric: str
    unit: str
    higher_is_better: bool
    env: str
    baseline: str

    @property
    def name(self) -> str:
        case = "" if self.case in ("", "default") else f"/{self.case}"
        return f"{self.workload}{case} {self.metric} on {self.env}"

    @property
    def metric_label(self) -> str:
        case = "" if self.case in ("", "default") else f"{self.case}: "
        unit = f" ({self.unit})" if self.unit else ""
        return f"{case}{self.metric}{unit} {HIGHER if self.higher_is_better else LOWER}"


@dataclass(frozen=True)
class Point:
    """One run's value of a series: its Table I verdict against the baseline."""

    run_id: str
    started_at: str
    verdict: Verdict

    @property
    def y(self) -> float:  # log ratio of the environment to the baseline
        return self.verdict.effect.log_ratio

    @property
    def se(self) -> float:
        return self.verdict.effect.se

    @property
    def pct(self) -> float:
        return self.verdict.pct

    @property
    def text(self) -> str:
        return interval_text(self.verdict)


def _pct(log_ratio: float) -> float:
    return (math.exp(log_ratio) - 1) * 100


@dataclass(frozen=True)
class Change:
    """A confirmed step of a series."""

    cell: CellId
    judged: cp.Judged
    before: tuple[Point, ...]
    after: tuple[Point, ...]
    facts: tuple[tuple[str, str, str], ...]  # (fact, last run before, first run after)

    @property
    def step_pct(self) -> float:
        """How the environment's value relative to the baseline moved, in %."""
        return _pct(self.judged.step.shift)

    @property
    def low_pct(self) -> float:
        return _pct(self.judged.low)

    @property
    def high_pct(self) -> float:
        return _pct(self.judged.high)

    @property
    def worse_pct(self) -> float:
        """The step signed by the metric's direction: > 0 is worse (as
        stats.Effect.overhead_pct)."""
        return -self.step_pct if self.cell.higher_is_better else self.step_pct

    @property
    def direction(self) -> str:
        return "worse" if self.worse_pct > 0 else "better"

    @property
    def level_before_pct(self) -> float:
        return _pct(self.judged.step.mean_before)

    @property
    def level_after_pct(self) -> float:
        return _pct(self.judged.step.mean_after)

    @property
    def where(self) -> str:
        a, b = self.before[-1], self.after[0]
        return f"between run {a.run_id} ({a.started_at[:10]}) and run {b.run_id} ({b.started_at[:10]})"

    def fact_lines(self) -> list[str]:
        return [f"{k} {a} -> {b}" for k, a, b in self.facts] or ["no recorded fact differs across it"]

    @property
    def summary(self) -> str:
        j = self.judged
        return (
            f"{self.direction} step {_fmt(self.step_pct)} [{_fmt(self.low_pct)}, {_fmt(self.high_pct)}] at "
            f"{fmt_level(j.level)} {self.where}: {_fmt(self.level_before_pct)} over {len(self.before)} "
            f"run(s) before, {_fmt(self.level_after_pct)} over {len(self.after)} after (vs {self.cell.baseline}; "
            f"BH p = {j.p_adjusted:.2g})"
        )


def _fmt(pct: float) -> str:
    return fmt_pct(pct)


@dataclass
class Series:
    cell: CellId
    points: list[Point] = field(default_factory=list)
    candidates: list[cp.Step] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def too_short(self) -> bool:
        return len(self.points) < cp.MIN_RUNS

    @property
    def shortfall(self) -> str:
        return (
            f"{len(self.points)} comparable run(s); a step needs at least {cp.MIN_RUNS} ({cp.MIN_SEGMENT} on each side)"
        )


@dataclass
class Group:
    host: HostClass
    runs: list[RunData]  # oldest first
    series: list[Series]
    edits: list[tuple[str, str, str]]  # (first run with the new study file, old hash, new hash)


@dataclass
class History:
    study: str
    groups: list[Group]
    left_out: list[str]  # one line per run (or run and cell) left out, with why
    m: int = 0  # candidate steps judged together
    level: float = 1 - ALPHA  # of the steps' intervals

    @property
    def newest(self) -> RunData | None:
        runs = [r for g in self.groups for r in g.runs]
        return max(runs, key=run_order) if runs else None

    def changes(self) -> list[Change]:
        return [c for g in self.groups for s in g.series for c in s.changes]

    def series(self) -> list[Series]:
        return [s for g in self.groups for s in g.series]

    def newest_series(self) -> list[Series]:
        """The series the newest run is the last point of: what a CI gate judges."""
        newest = self.newest
        return [s for s in self.series() if newest is not None and s.points and s.points[-1].run_id == newest.run_id]

    def blind(self, pct: float) -> list[tuple[Series, str]]:
        """The newest run's series the gate could not see a step of PCT
        percent in, with why: too few runs for a step, or the newest run's
        interval wider than ±PCT (Verdict.resolves)."""
        out = []
        for s in self.newest_series():
            v = s.points[-1].verdict
            if s.too_short:
                out.append((s, s.shortfall))
            elif not v.resolves(pct):
                out.append((s, f"the newest run: {why_blind(v, self.newest)}"))
        return out

    def gate(self, pct: float) -> list[Change]:
        """Cells whose newest run sits after a step for the worse by more
        than PCT percent (the series' last step)."""
        out = []
        for s in self.newest_series():
            if s.changes and s.changes[-1].worse_pct > pct:
                out.append(s.changes[-1])
        return out


# -- choosing runs ---------------------------------------------------------------------


def parse_started(text: str) -> datetime | None:
    """A stored start time (store.now_iso), or None when unreadable."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")
    except (TypeError, ValueError):
        return None


def when(run: RunData) -> datetime | None:
    return parse_started(run.started_at)


def run_order(run: RunData) -> tuple[bool, str, str]:
    """Oldest first, by the instant each run started (imported runs keep
    theirs); runs without a readable time last, by id."""
    t = when(run)
    return (t is None, t.astimezone(UTC).isoformat() if t else "", run.run_id)


def select(
    runs: list[RunData], since: date | None = None, until: date | None = None, host: str | None = None
) -> tuple[list[RunData], list[str]]:
    """The runs history may use, oldest first, and a line for each run left
    out (statuses; the filters are counted, not listed)."""
    kept, out = [], []
    outside = 0
    for run in sorted(runs, key=run_order):
        day = run.started_at[:10]
        if (
            (since is not None and day < since.isoformat())
            or (until is not None and day > until.isoformat())
            or (host is not None and host_name(run) != host)
        ):
            outside += 1
            continue
        if run.status not in USABLE_STATUSES:
            out.append(f"run {run.run_id}: {run.status}: not every cell was measured under the same conditions")
            continue
        kept.append(run)
    if outside:
        out.append(f"{outside} run(s) outside --since/--until/--host")
    return kept, out


# -- series ---------------------------------------------------------------------------------


def _arrow(k: MetricKey) -> str:
    return HIGHER if k.higher_is_better else LOWER


def _reference_primaries(runs: list[RunData]) -> dict[tuple[str, str], tuple[str, dict[str, MetricKey]]]:
    """(workload, case) -> (run id, primary metric keys by name) of the
    newest run holding the case: the series follow what it measures."""
    out: dict[tuple[str, str], tuple[str, dict[str, MetricKey]]] = {}
    for run in reversed(runs):
        for k in primary_keys(run):
            ref_id, keys = out.setdefault((k.workload, k.case), (run.run_id, {}))
            if ref_id == run.run_id:
                keys[k.metric] = k
    return out


def _verdicts(run: RunData) -> dict[tuple[str, str, str, str], Verdict]:
    table = build_table(run)
    return {
        (row.key.workload, row.key.case, row.key.metric, cell.env): cell.verdict
        for row in table.rows
        for cell in row.cells
        if cell.verdict is not None
    }


def _group_series(
    runs: list[RunData], envs: set[str] | None, workloads: set[str] | None, left_out: list[str]
) -> list[Series]:
    refs = _reference_primaries(runs)
    series: dict[CellId, Series] = {}
    for run in runs:
        verdicts = _verdicts(run)
        keys = {(k.workload, k.case, k.metric): k for k in run.metrics}
        for (w, c), (ref_id, ref_keys) in refs.items():
            if workloads is not None and w not in workloads:
                continue
            if not any((w, c) == (k.workload, k.case) for k in run.metrics):
                continue  # the case is not in this run: its series is shorter, nothing to say
            for metric, ref in ref_keys.items():
                mine = keys.get((w, c, metric))
                case = "" if c in ("", "default") else f"/{c}"
                if mine is None:
                    left_out.append(
                        f"run {run.run_id}: {w}{case} has no {metric} (the primary metric of run "
                        f"{ref_id}): left out of its series"
                    )
                    continue
                if (mine.unit, mine.higher_is_better) != (ref.unit, ref.higher_is_better):
                    left_out.append(
                        f"run {run.run_id}: {w}{case} {metric} is {mine.unit} {_arrow(mine)} there but "
                        f"{ref.unit} {_arrow(ref)} in run {ref_id}: primary metrics differ, not "
                        "comparable; left out of its series"
                    )
                    continue
                for env in run.environments:
                    if env == run.baseline or (envs is not None and env not in envs):
                        continue
                    v = verdicts.get((w, c, metric, env))
                    if v is None:
                        continue  # not measured (failed, not supported): Table I says so
                    cell = CellId(w, c, metric, ref.unit, ref.higher_is_better, env, run.baseline)
                    if not v.effect.tested or not math.isfinite(v.effect.se):
                        left_out.append(f"run {run.run_id}: {cell.name}: untested ({v.effect.reason})")
                        continue
                    series.setdefault(cell, Series(cell)).points.append(Point(run.run_id, run.started_at, v))
    return list(series.values())


def _edits(runs: list[RunData]) -> list[tuple[str, str, str]]:
    return [
        (b.run_id, a.study_hash[:12], b.study_hash[:12]) for a, b in zip(runs, runs[1:]) if a.study_hash != b.study_hash
    ]


def build_history(
    study: str,
    runs: list[RunData],
    *,
    by_host: bool = False,
    envs: set[str] | None = None,
    workloads: set[str] | None = None,
    left_out: list[str] | None = None,
    alpha: float = ALPHA,
) -> History:
    """History of RUNS (one study's, as chosen by ``select``): groups by
    host class, series per primary cell, steps judged over every series."""
    left = list(left_out or [])
    groups = []
    for cls, members in group_runs(sorted(runs, key=run_order), by_host):
        groups.append(Group(cls, members, _group_series(members, envs, workloads, left), _edits(members)))
    all_series = [s for g in groups for s in g.series]
    for s in all_series:
        s.candidates = cp.find_steps([p.y for p in s.points], [p.se for p in s.points])
    judged = cp.judge([s.candidates for s in all_series], alpha)
    by_id = {r.run_id: r for r in runs}
    m = sum(len(j) for j in judged)
    level = next((x.level for j in judged for x in j), 1 - alpha)
    for s, js in zip(all_series, judged):
        for j in js:
            if not j.confirmed:
                continue
            a, b = j.step.before, j.step.after
            before, after = tuple(s.points[a[0] : a[1]]), tuple(s.points[b[0] : b[1]])
            facts = facts_diff(by_id[before[-1].run_id], by_id[after[0].run_id], [s.cell.env, s.cell.baseline])
            s.changes.append(Change(s.cell, j, before, after, tuple(facts)))
    return History(study, groups, left, m, level)
