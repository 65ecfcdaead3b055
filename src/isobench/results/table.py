"""The IBM paper's "Table I", as plain data every renderer shares.

One row per metric (study order), one column per environment with the
baseline first. Each cell carries its Summary, its final Verdict against
the baseline (results/analysis.py: paired per-round or Welch test on logs,
Benjamini-Hochberg over the whole table, or, for a run that stores its
primaries, over the primary cells and, separately, over the descriptive
ones; changed / equivalent / inconclusive) and the text the paper would print,
``mean (change [interval]) [sd] marker``, plus warnings about its samples.
Computing texts here, once, keeps terminal, Markdown and HTML identical.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from isobench.analysis.stats import TEST_CROSSOVER, TEST_PAIRED, TEST_WELCH_LOG, Summary, centre_of, summarize
from isobench.analysis.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE, Verdict, fmt_level
from isobench.core.metric import DURATION, LATENCY, STARTUP, is_time_unit
from isobench.results.analysis import (
    DESCRIPTIVE,
    PRIMARY,
    Question,
    Settings,
    interval_text,
    judge_families,
    settings_of,
    tested_pairs,
)
from isobench.results.cellwarnings import cell_warnings
from isobench.results.model import MetricKey, RunData
from isobench.results.numbers import DASH, MINUS, fmt_num, fmt_pct
from isobench.results.primary import primary_keys, stores_primaries
from isobench.results.programs import footnotes as program_footnotes
from isobench.results.roles import role_of
from isobench.results.stopping import adaptive_lines, budget_lines
from isobench.results.versions import footnotes as version_footnotes

__all__ = ["DASH", "MINUS", "fmt_num", "fmt_pct"]  # re-exported: renderers format through the table

MARKS = {CHANGED: "*", EQUIVALENT: "\u2248", INCONCLUSIVE: "?"}  # *, ≈, ?
SIGNIFICANT = MARKS[CHANGED]
UNTESTED = "\u00b0"  # degree sign
SOME_FAILED = "!"
WARNED = "\u26a0"  # warning sign: see the cell's warnings below the table
EMULATED = "\u2020"  # dagger
EMULATED_NOTE = "emulated (TCG), not comparable to KVM"
HIGHER = "\u2191"
# after the label of a descriptive row (a run that stores primaries): not one
# of its case's primaries, judged in the descriptive family
DESCRIPTIVE_MARK = "(d)"
LOWER = "\u2193"
# Metrics whose spread is shown as median and min..max beside the mean: times,
# known by their role or, for metrics declared without one (fio's
# read_clat_*_us, api's latency_s, webstore's *_ms ...), by their unit.
SPREAD_ROLES = (LATENCY, DURATION, STARTUP)

OK, FAILED, MISSING, UNSUPPORTED = "ok", "failed", "missing", "unsupported"
# what the first number of a cell is, in every format's legend
CENTRE_KEY = (
    "Centre: the geometric mean of the samples the change rests on (the rounds paired with {baseline}); "
    "the change is its ratio to {baseline}'s centre over the same samples: {baseline}'s column, or the "
    "figure after 'vs' where those were other samples (a duet's beside this environment, or fewer rounds)."
)


@dataclass(frozen=True)
class Column:
    env: str
    header: str  # env name plus markers and n, ready to print
    is_baseline: bool
    emulated: bool
    n: int | None  # repetitions when uniform over the column's cells, else None


@dataclass(frozen=True)
class Cell:
    env: str
    status: str  # ok | failed | missing | unsupported
    summary: Summary | None
    verdict: Verdict | None  # None for the baseline and when either side is empty
    text: str
    failures: int = 0  # failed repetitions of this workload case in this environment
    warnings: tuple[str, ...] = ()  # anomalies in its samples, the workload's validity notes
    # the geometric mean of the values the change rests on (stats.centre_of,
    # Effect.centre_c): change = centre / the baseline's centre over the same
    # rounds, which is ``reference`` where that is not the baseline column's
    centre: float = float("nan")
    reference: float | None = None

    @property
    def mean(self) -> float:
        """The mean of a cell measured ok (such a cell always has its summary)."""
        assert self.summary is not None, f"{self.env}: a {self.status} cell has no mean"
        return self.summary.mean


@dataclass(frozen=True)
class Row:
    key: MetricKey
    label: str  # "case: metric (unit) ↑" (+ " (d)" when descriptive), workload shown by the renderer's grouping
    cells: tuple[Cell, ...]  # in column order
    # the verdict family: "primary" | "descriptive" for a run that stores its
    # primaries, "" for one stored before (one family over every row)
    family: str = ""


@dataclass(frozen=True)
class Failure:
    workload: str
    case: str
    env: str
    count: int
    reasons: tuple[tuple[str, int], ...]  # distinct reason, how many times


@dataclass(frozen=True)
class Table:
    title: str
    baseline: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    legend: tuple[str, ...]
    footnotes: tuple[str, ...]  # per-column notes (emulated environments)
    failures: tuple[Failure, ...]  # each cell's warnings are its own (Cell.warnings)

    def groups(self) -> list[tuple[str, list[Row]]]:
        """Rows grouped by workload, workloads in order of first appearance."""
        out: dict[str, list[Row]] = {}
        for row in self.rows:
            out.setdefault(row.key.workload, []).append(row)
        return list(out.items())


# -- cells ---------------------------------------------------------------------


def is_time(key: MetricKey) -> bool:
    """A time (latency, duration): its role says so, or its unit is one of time."""
    return role_of(key) in SPREAD_ROLES or is_time_unit(key.unit)


def centre_text(centre: float, reference: float | None) -> str:
    """``2.993`` or, paired with other baseline samples than its column's
    (a duet's), ``2.993 vs 2.974``: the two numbers the change is the ratio of."""
    return fmt_num(centre) + ("" if reference is None else f" vs {fmt_num(reference)}")


def cell_text(
    summary: Summary,
    verdict: Verdict | None,
    show_n: bool,
    failures: int = 0,
    spread: bool = False,
    warned: bool = False,
    centre: float | None = None,
    reference: float | None = None,
) -> str:
    """``1043 (−0.9% [−3.1%, +1.4%]) [16] ≈``: centre (``vs`` the baseline's
    when not its column's), change vs baseline with its interval, sd, markers;
    for times also ``median 1040 (1020..1070)``."""
    parts = [centre_text(summary.mean if centre is None else centre, reference)]
    if verdict is not None:
        parts.append(f"({interval_text(verdict)})")
    parts.append(f"[{fmt_num(summary.sd, 2)}]")
    if show_n:
        parts.append(f"n={summary.n}")
    markers = cell_marks(verdict, failures, warned)
    if markers:
        parts.append(markers)
    text = " ".join(parts)
    if spread and summary.n > 1:
        text += f"; median {fmt_num(summary.median)} ({fmt_num(summary.min)}..{fmt_num(summary.max)})"
    return text


def cell_marks(verdict: Verdict | None, failures: int = 0, warned: bool = False) -> str:
    """The verdict's mark, then ! for failed repetitions and the warning sign."""
    marks = ""
    if verdict is not None:
        marks += MARKS[verdict.verdict] if verdict.effect.tested else UNTESTED
    if failures:
        marks += SOME_FAILED
    if warned:
        marks += WARNED
    return marks


# -- building --------------------------------------------------------------------


def is_emulated(run: RunData, env: str) -> bool:
    facts = run.env_facts.get(env)
    return isinstance(facts, dict) and facts.get("emulated") in (True, "true")


def column_order(run: RunData) -> list[str]:
    """Baseline first, the others in study order."""
    return [run.baseline] + [e for e in run.environments if e != run.baseline]


def row_label(key: MetricKey) -> str:
    arrow = HIGHER if key.higher_is_better else LOWER
    name = key.metric if key.case in ("", "default") else f"{key.case}: {key.metric}"
    unit = f" ({key.unit})" if key.unit else ""
    return f"{name}{unit} {arrow}"


def _values(run: RunData, key: MetricKey, env: str) -> list[float]:
    return list(run.values.get((key, env), []))


def _failure_count(run: RunData, key: MetricKey, env: str) -> int:
    return len(run.failures.get((key.workload, key.case, env), []))


def _uniform_n(run: RunData, env: str) -> int | None:
    ns = {len(v) for k in run.metrics if (v := _values(run, k, env))}
    return ns.pop() if len(ns) == 1 else None


def _questions(run: RunData, columns: tuple[Column, ...]) -> dict[tuple[MetricKey, str], Question]:
    """Every non-baseline cell with values on both sides, paired by round."""
    out = {}
    for key in run.metrics:
        base = _values(run, key, run.baseline)
        for col in columns:
            vals = _values(run, key, col.env)
            if col.is_baseline or not vals or not base:
                continue
            out[(key, col.env)] = Question(key, vals, base, *tested_pairs(run, key, col.env, run.baseline), env=col.env)
    return out


def tone(cell: Cell) -> str:
    """What a renderer may colour: failed, missing, worse or better (a
    changed cell), or "" (colour only repeats what the markers say)."""
    if cell.status in (FAILED, MISSING):
        return cell.status
    if cell.status == UNSUPPORTED:
        return MISSING
    v = cell.verdict
    return v.direction if v is not None and v.changed else ""


def centres(vals: list[float], verdict: Verdict | None, base_centre: float) -> tuple[float, float | None]:
    """The cell's centre and, when it differs in print from ``base_centre``
    (the baseline column's), the baseline centre its change was taken
    against: a duet's baseline samples beside this environment, or the
    rounds both measured."""
    e = verdict.effect if verdict is not None else None
    if e is None or not (math.isfinite(e.centre_c) and math.isfinite(e.centre_b)):
        return centre_of(vals), None
    return e.centre_c, None if fmt_num(e.centre_b) == fmt_num(base_centre) else e.centre_b


def build_cell(
    run: RunData,
    key: MetricKey,
    env: str,
    show_n: bool,
    verdict: Verdict | None,
    settings: Settings,
    base_centre: float = math.nan,
) -> Cell:
    vals = _values(run, key, env)
    failed = _failure_count(run, key, env)
    if not vals:
        if failed:
            return Cell(env, FAILED, None, None, f"failed ({failed})", failed)
        if unsupported_reason(run, key.workload, env):
            return Cell(env, UNSUPPORTED, None, None, "not supported")
        return Cell(env, MISSING, None, None, DASH)
    summary = summarize(vals)
    warnings = cell_warnings(run, key, env, settings.target_ci_pct, verdict)
    centre, reference = centres(vals, verdict, base_centre)
    text = cell_text(summary, verdict, show_n, failed, is_time(key), bool(warnings), centre, reference)
    return Cell(env, OK, summary, verdict, text, failed, warnings, centre, reference)


def unsupported_reason(run: RunData, workload: str, env: str) -> str | None:
    """Why the environment never ran the workload (EnvKind.unsupported, kept
    in its facts by the runner), or None."""
    facts = run.env_facts.get(env)
    table = facts.get("unsupported") if isinstance(facts, dict) else None
    return table.get(workload) if isinstance(table, dict) else None


def build_columns(run: RunData) -> tuple[Column, ...]:
    cols = []
    for env in column_order(run):
        n = _uniform_n(run, env)
        emulated = is_emulated(run, env)
        header = env
        if env == run.baseline:
            header += " (baseline)"
        if emulated:
            header += f" {EMULATED}"
        if n is not None:
            header += f", n={n}"
        cols.append(Column(env, header, env == run.baseline, emulated, n))
    return tuple(cols)


def build_failures(run: RunData) -> tuple[Failure, ...]:
    out = []
    for (workload, case, env), reasons in run.failures.items():
        if reasons:
            counted = tuple(Counter(reasons).most_common())
            out.append(Failure(workload, case, env, len(reasons), counted))
    return tuple(out)


def build_legend(
    run: RunData, rows: tuple[Row, ...], columns: tuple[Column, ...], settings: Settings
) -> tuple[str, ...]:
    cells = [c for r in rows for c in r.cells]
    judged = [c.verdict for c in cells if c.verdict is not None and c.verdict.effect.tested]
    tests = Counter(v.effect.test for v in judged)
    legend = [
        f"Cell: centre (change vs {run.baseline} [interval]) [sample standard deviation] verdict; "
        f"for times also the median (min..max). {CENTRE_KEY.format(baseline=run.baseline)}",
        f"{HIGHER} higher is better, {LOWER} lower is better: for {HIGHER} a {MINUS}% is worse, "
        f"for {LOWER} a +% is worse.",
    ]
    split = any(r.family for r in rows)
    if judged:
        how = {
            TEST_PAIRED: "paired t-test on the per-round log ratios (same round, interleaved; rounds \u2212 1 df)",
            TEST_CROSSOVER: "paired crossover t-test on the per-round log ratios blocked by the duet's CPU side "
            "(the mean of the two sides' means; rounds \u2212 2 df)",
            TEST_WELCH_LOG: "Welch's t-test on log values (rounds could not be paired)",
        }
        used = "; ".join(f"{how.get(t, t)}: {k} cell{'s' if k > 1 else ''}" for t, k in tests.most_common())
        rest = (
            f"and beyond the metric's noise floor. {MARKS[EQUIVALENT]} equivalent: "
            f"the interval lies within \u00b1{settings.tolerance_pct:g}% (or the metric's noise floor). "
            f"{MARKS[INCONCLUSIVE]} "
            f"inconclusive: these runs cannot tell; see 'Inconclusive' for the rounds that would."
        )
        if not split:
            legend += [
                f"Change: ratio of geometric means, with its {fmt_level(judged[0].level)} interval (corrected for the "
                f"{judged[0].m} cells compared; it excludes 0% exactly for the BH-significant cells). "
                f"Tests: {used}.",
                f"{MARKS[CHANGED]} changed: significant after Benjamini-Hochberg correction over the table "
                f"(false discoveries <= 5%) {rest}",
            ]
        else:
            legend += family_lines(rows, used) + [
                f"{MARKS[CHANGED]} changed: significant after Benjamini-Hochberg correction within its family "
                f"(false discoveries <= 5% among the primary cells, and among the descriptive ones) {rest}",
            ]
    legend += adaptive_lines(run, settings, split) + budget_lines(run)
    per_cell_n = any(cell.status == OK and col.n is None for r in rows for col, cell in zip(columns, r.cells))
    if per_cell_n:
        legend.append("n=k: repetitions of that cell (not the same for every cell of its column).")
    if any(c.verdict is not None and not c.verdict.effect.tested for c in cells):
        legend.append(f"{UNTESTED} not tested (fewer than 2 repetitions on a side, or values <= 0).")
    if any(c.status == OK and c.failures for c in cells):
        legend.append(f"{SOME_FAILED} some repetitions failed (see failures); the figures use the others.")
    if any(c.warnings for c in cells):
        legend.append(
            f"{WARNED} see the warnings below the table (outliers, slow first round, drift, "
            f"validity); no value was dropped."
        )
    if any(c.status == FAILED for c in cells):
        legend.append("failed (k): all k repetitions failed (see failures).")
    if any(c.status == MISSING for c in cells):
        legend.append(f"{DASH}: not measured.")
    if any(c.status == UNSUPPORTED for c in cells):
        legend.append("not supported: the environment cannot run this workload (why: in the notes below).")
    return tuple(legend)


def family_lines(rows: tuple[Row, ...], tests: str) -> list[str]:
    """The legend of a run judged as two families: which they are, the level
    and m of each one's intervals, and the ``tests`` used."""
    parts = []
    for family, what in ((PRIMARY, "primary cells"), (DESCRIPTIVE, f"descriptive cells marked {DESCRIPTIVE_MARK}")):
        judged = [
            c.verdict
            for r in rows
            if r.family == family
            for c in r.cells
            if c.verdict is not None and c.verdict.effect.tested
        ]
        if judged:
            parts.append(f"at {fmt_level(judged[0].level)} for the {judged[0].m} {what}")
    change = (
        "Change: ratio of geometric means, with its interval corrected within its family"
        + (f": {', '.join(parts)}" if parts else "")
        + f"; each excludes 0% exactly for the BH-significant cells of its family. Tests: {tests}."
    )
    return [
        "Primary metrics answer each workload case's question (its throughput, or the latency or time that "
        "defines it; the study's primary list where it sets one) and are corrected among themselves. "
        f"{DESCRIPTIVE_MARK} descriptive: every other metric, corrected in a family of its own, so that it neither "
        "widens the primaries' intervals nor counts among their discoveries.",
        change,
    ]


def row_families(run: RunData) -> dict[MetricKey, str]:
    """Each metric's verdict family: "primary" or "descriptive" when the run
    stores its primaries (results/primary.py), "" for every metric of a run
    stored before (one family, as then)."""
    if not stores_primaries(run):
        return {key: "" for key in run.metrics}
    primaries = set(primary_keys(run))
    return {key: PRIMARY if key in primaries else DESCRIPTIVE for key in run.metrics}


def build_table(run: RunData) -> Table:
    settings = settings_of(run)
    columns = build_columns(run)
    questions = _questions(run, columns)
    family = row_families(run)
    asked = list(questions.values())
    verdicts = dict(zip(questions, judge_families(asked, settings, [family[q.key] for q in asked])))
    rows = []
    for key in run.metrics:
        # the adaptive rule waited for the primaries only, when the run has them
        watched = settings if family[key] != DESCRIPTIVE else replace(settings, target_ci_pct=None)
        base = centre_of(_values(run, key, run.baseline))
        cells = tuple(
            build_cell(run, key, col.env, col.n is None, verdicts.get((key, col.env)), watched, base) for col in columns
        )
        label = row_label(key) + (f" {DESCRIPTIVE_MARK}" if family[key] == DESCRIPTIVE else "")
        rows.append(Row(key, label, cells, family[key]))
    rows_t = tuple(rows)
    footnotes = tuple(f"{EMULATED} {c.env}: {EMULATED_NOTE}." for c in columns if c.emulated)
    footnotes += (*program_footnotes(run), *version_footnotes(run))
    footnotes += tuple(
        f"{c.env}: {workload} not run: {reason}."
        for c in columns
        for workload in dict.fromkeys(k.workload for k in run.metrics)
        if (reason := unsupported_reason(run, workload, c.env))
    )
    return Table(
        title=f"{run.study_name}: run {run.run_id}",
        baseline=run.baseline,
        columns=columns,
        rows=rows_t,
        legend=build_legend(run, rows_t, columns, settings),
        footnotes=footnotes,
        failures=build_failures(run),
    )
