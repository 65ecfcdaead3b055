"""`isobench reparse`: a stored run's values recomputed from the raw outputs
its samples kept, with the current parsers, so that a series measured
before a parser changed (the web-app runs' quantiles read before
drivers/loghist.py interpolated) compares with one measured after.

Per ok sample (warm-up included): the workload, rebuilt from the run's
stored study, reads the sample's raw output again (``Workload.reparse``);
the values it gives replace the stored ones, the parser's detail in
``extra`` and the units of work follow them, and the sample records the
current parser version. Values the parser does not give (CPU cost without
a stored CPU window) and everything the runner added (counters, noise,
validity notes) are kept as measured. A raw output the parser cannot read
keeps its stored values and version and is reported in one line; a
workload (or case) that keeps too little to recompute says why once and is
left alone. A run is rewritten in one transaction, or not at all
(``write=False``: the dry run).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field

from isobench.host import counters
from isobench.host.hostinfo import HostInfo
from isobench.host.noise import unstep_case
from isobench.store.db import Rewrite, StoreError
from isobench.store.parser_versions import read_version, shown
from isobench.study import StudyError, parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import Measurement, Workload, checked


@dataclass
class MetricChange:
    """What reparse did to one metric of one workload, over the run."""

    workload: str
    metric: str
    compared: int = 0  # values stored before and given by the parser now
    changed: int = 0
    added: int = 0  # values the parser gives that the sample lacked
    largest: tuple[float, float] | None = None  # (stored, new) of the largest change

    def note(self, old, new: float) -> None:
        if old is None:
            self.added += 1
            return
        self.compared += 1
        if _same(old, new):
            return
        self.changed += 1
        if self.largest is None or _size(old, new) > _size(*self.largest):
            self.largest = (old, new)


def _same(old, new) -> bool:
    try:
        old, new = float(old), float(new)
    except (TypeError, ValueError):
        return old == new
    return old == new or (math.isnan(old) and math.isnan(new))


def _size(old, new) -> float:
    """How large a change is: relative where the stored value is not 0."""
    try:
        old, new = float(old), float(new)
    except (TypeError, ValueError):
        return math.inf
    if math.isnan(old) or math.isnan(new):
        return math.inf
    return abs(new - old) / abs(old) if old else abs(new - old)


@dataclass(frozen=True)
class Unreadable:
    """A sample whose raw output the current parser cannot read: kept as stored."""

    run_id: str
    env: str
    workload: str
    case: str
    round: int
    why: str

    def line(self) -> str:
        return (
            f"unreadable: run {self.run_id}, environment {self.env}, workload {self.workload}, "
            f"case {self.case}, round {self.round}: stored values kept ({self.why})"
        )


@dataclass
class RunReparse:
    run_id: str
    study_name: str = ""
    skipped: str = ""  # why the whole run was left alone ("" when it was not)
    reparsed: int = 0  # ok samples recomputed
    rewrites: list[Rewrite] = field(default_factory=list)
    new_metrics: list = field(default_factory=list)  # (workload, case, Metric) a newer parser adds
    changes: dict[tuple[str, str], MetricChange] = field(default_factory=dict)
    before: dict[str, dict] = field(default_factory=dict)  # workload -> {version before: samples reparsed}
    after: dict[str, int] = field(default_factory=dict)  # workload -> the current parser's version
    left_alone: dict[tuple[str, str], str] = field(default_factory=dict)  # (workload, case or "") -> why
    left_samples: int = 0
    unreadable: list[Unreadable] = field(default_factory=list)
    kept: int = 0  # stored values no parser gives (kept as measured)
    detail_changed: int = 0  # samples whose extra (the parser's detail, units) changes
    written: bool = False

    @property
    def identical(self) -> int:
        return sum(c.compared - c.changed for c in self.changes.values())

    @property
    def changed(self) -> int:
        return sum(c.changed for c in self.changes.values())

    def versions(self, workload: str) -> str:
        """ "1 → 2", "unknown → 2", "1, unknown → 2" for a workload's reparsed samples."""
        before = sorted(self.before.get(workload, {}), key=lambda v: (v is None, v or 0))
        return f"{', '.join(shown(v) for v in before)} \u2192 {self.after[workload]}"

    def lines(self) -> list[str]:
        """What reparse did (or, not written, would do) to the run, one line each."""
        head = f"run {self.run_id}" + (f" (study {self.study_name})" if self.study_name else "")
        if self.skipped:
            return [f"{head}: left alone: {self.skipped}"]
        out = [
            f"{head}: {self.reparsed} sample(s) recomputed from their raw output, "
            f"{len(self.unreadable)} unreadable, {self.left_samples} left alone"
        ]
        for w in sorted(self.after):
            n = sum(self.before[w].values())
            out.append(f"  {w}: parser version {self.versions(w)} ({n} sample(s))")
        for (w, case), why in sorted(self.left_alone.items()):
            out.append(f"  {w}" + (f" case {case}" if case not in ("", "default") else "") + f": left alone: {why}")
        for c in sorted(self.changes.values(), key=lambda c: (c.workload, c.metric)):
            if c.changed and c.largest is not None:
                old, new = c.largest
                out.append(
                    f"  changed {c.workload} {c.metric}: {c.changed} of {c.compared} value(s), largest "
                    f"{_change(old, new)}: {self._why(c.workload)}"
                )
            if c.added:
                out.append(
                    f"  added {c.workload} {c.metric}: {c.added} value(s) the parser gives now and the "
                    f"samples lacked: {self._why(c.workload)}"
                )
        if self.detail_changed:
            out.append(
                f"  the parser's detail beside the values (extra: histograms, units) changes in "
                f"{self.detail_changed} sample(s)"
            )
        out += ["  " + u.line() for u in self.unreadable]
        total = sum(c.compared for c in self.changes.values())
        other = "every other value" if self.changed else "every value"
        out.append(
            f"  {other} is identical ({self.identical} of {total} recomputed)"
            + (f"; {self.kept} stored value(s) the parsers do not give kept as measured" if self.kept else "")
        )
        return out

    def _why(self, workload: str) -> str:
        before = set(self.before.get(workload, {}))
        if before == {self.after[workload]}:
            return (
                f"parser version {self.after[workload]} both times: the stored values are not what it "
                "reads from the raw output"
            )
        return f"parser version {self.versions(workload)}"


def _change(old, new) -> str:
    try:
        old, new = float(old), float(new)
    except (TypeError, ValueError):
        return f"{old!r} \u2192 {new!r}"
    rel = f"{(new - old) / abs(old) * 100:+.2f}% " if old and math.isfinite(old) and math.isfinite(new) else ""
    return f"{rel}({old:.6g} \u2192 {new:.6g})"


def _host(facts: dict) -> HostInfo:
    """The run's host as far as a workload's constructor needs it (no
    parser reads it: they read the raw output)."""

    def whole(key: str) -> int:
        value = facts.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    return HostInfo(cores=whole("cores") or 1, mem_bytes=whole("mem_bytes"), disk_free_bytes=0)


def _workloads(store, run_id: str) -> dict[str, Workload]:
    """The run's workloads, rebuilt from its stored study (StudyError when
    today's study model refuses it)."""
    _path, text = store.study_of(run_id)
    study = parse_study(text, f"{run_id} (stored study)")
    host = _host(store.run_facts(run_id))
    return {e.key: WORKLOADS[e.workload](e.params, host) for e in study.workloads}


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return text if isinstance(exc, ValueError) and text else f"{type(exc).__name__}: {text}"


def reparse_run(store, run_id: str, write: bool = True, live_runs: Collection[str] = ()) -> RunReparse:
    """Recompute RUN_ID's values with the current parsers (write=False: only
    say what would change). LIVE_RUNS: the runs a study is measuring now
    (lock.live_run_ids()), left alone."""
    out = RunReparse(run_id)
    rows = {r.run_id: r for r in store.list_runs()}
    if run_id not in rows:
        raise StoreError(f"{store.path}: no run {run_id!r}; `isobench runs` lists them")
    out.study_name = rows[run_id].study_name
    if rows[run_id].status == "running" and run_id in live_runs:
        out.skipped = "a study is measuring it now; reparse it once the run has ended"
        return out
    try:
        workloads = _workloads(store, run_id)
    except StudyError as exc:
        out.skipped = f"its stored study does not read with this isobench ({_one_line(exc)})"
        return out
    defined = store.defined_metrics(run_id)
    for s in store.samples(run_id):
        if s["status"] == "ok":
            _sample(out, workloads, defined, s)
    if write and out.rewrites:
        store.rewrite_samples(run_id, out.rewrites, out.new_metrics)
        out.written = True
    return out


def _sample(out: RunReparse, workloads: dict[str, Workload], defined: set, s: dict) -> None:
    key, stored_case = s["workload"], s["ccase"]
    workload = workloads.get(key)
    case = unstep_case(stored_case)
    if workload is None:
        out.left_alone.setdefault((key, ""), "the run's stored study has no such workload")
        out.left_samples += 1
        return
    why = workload.cannot_reparse(case)
    if why:
        out.left_alone.setdefault((key, case), why)
        out.left_samples += 1
        return
    try:
        old_values, old_extra = json.loads(s["vals"] or "{}"), json.loads(s["extra"] or "{}")
        if not isinstance(old_values, dict) or not isinstance(old_extra, dict):
            raise ValueError("its stored values or detail are not JSON objects")
        if not s["raw"]:
            raise ValueError("no raw output was stored with it")
        m = checked(workload.reparse(case, s["raw"], old_extra))
    except Exception as exc:  # noqa: BLE001 - any parser failure keeps the sample as stored, said once
        out.unreadable.append(Unreadable(out.run_id, s["env"], key, stored_case, s["round"], _one_line(exc)))
        return
    values = {**old_values, **m.values}
    extra = {**old_extra, **m.extra}
    if "units" in old_extra:  # they count from the values (fio's I/Os from its IOPS)
        extra["units"] = counters.units_of(lambda: workload.units(case, Measurement(values, extra)))
    for metric, new in m.values.items():
        change = out.changes.setdefault((key, metric), MetricChange(key, metric))
        change.note(old_values.get(metric), new)
        if (key, stored_case, metric) not in defined:
            known = {d.name: d for d in workload.metrics(case)}
            if metric in known:
                defined.add((key, stored_case, metric))
                out.new_metrics.append((key, stored_case, known[metric]))
    out.kept += len(set(old_values) - set(m.values))
    out.detail_changed += extra != old_extra
    before = read_version(s.get("parser_version"), workload.name)
    counts = out.before.setdefault(key, {})
    counts[before] = counts.get(before, 0) + 1
    out.after[key] = workload.parser_version
    out.reparsed += 1
    out.rewrites.append(Rewrite(s["id"], values, extra, workload.parser_version))
