"""The IBM paper's "Table I", as plain data every renderer shares.

One row per metric (study order), one column per environment with the
baseline first. Each cell carries its Summary, its Comparison with the
baseline and the text the paper would print: ``value (−x.x%) [sd]``.
Computing texts here, once, keeps terminal, Markdown and HTML identical.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass

from isobench.report.model import MetricKey, RunData
from isobench.stats import ALPHA, VERDICT_SMALL_N, Comparison, Summary, compare, summarize

MINUS = "\u2212"  # typographic minus, as in the paper
DASH = "\u2014"
SIGNIFICANT = "*"
UNTESTED = "\u00b0"  # degree sign
SOME_FAILED = "!"
EMULATED = "\u2020"  # dagger
EMULATED_NOTE = "emulated (TCG), not comparable to KVM"
HIGHER = "\u2191"
LOWER = "\u2193"

OK, FAILED, MISSING = "ok", "failed", "missing"


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
    status: str  # ok | failed | missing
    summary: Summary | None
    comparison: Comparison | None  # None for the baseline and when either side is empty
    text: str
    failures: int = 0  # failed repetitions of this workload case in this environment


@dataclass(frozen=True)
class Row:
    key: MetricKey
    label: str  # "case: metric (unit) ↑", workload shown by the renderer's grouping
    cells: tuple[Cell, ...]  # in column order


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
    failures: tuple[Failure, ...]

    def groups(self) -> list[tuple[str, list[Row]]]:
        """Rows grouped by workload, workloads in order of first appearance."""
        out: dict[str, list[Row]] = {}
        for row in self.rows:
            out.setdefault(row.key.workload, []).append(row)
        return list(out.items())


# -- number formatting ---------------------------------------------------------

def fmt_num(x: float, sig: int = 4) -> str:
    """``sig`` significant figures, but never scientific notation for large
    numbers: 110234 req/s stays 110234, 31.457 s is 31.46, 0.012634 is 0.01263."""
    if x is None or math.isnan(x):
        return DASH
    if math.isinf(x):
        return "\u221e" if x > 0 else MINUS + "\u221e"
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (sig - 1):
        text = f"{x:.0f}"
    else:
        text = f"{x:.{sig}g}"
    return text.replace("-", MINUS)


def fmt_pct(pct: float) -> str:
    """Signed change: one decimal below 100%, whole percent above."""
    if math.isnan(pct):
        return DASH
    text = f"{abs(pct):.1f}" if abs(pct) < 100 else f"{abs(pct):.0f}"
    if float(text) == 0:
        return "\u00b1" + text + "%"
    return ("+" if pct > 0 else MINUS) + text + "%"


def cell_text(summary: Summary, comparison: Comparison | None, show_n: bool,
              failures: int = 0) -> str:
    """``1043 (−0.9%) [16] *`` — mean, change vs baseline, sd, markers."""
    parts = [fmt_num(summary.mean)]
    if comparison is not None:
        parts.append(f"({fmt_pct(comparison.pct)})")
    parts.append(f"[{fmt_num(summary.sd, 2)}]")
    if show_n:
        parts.append(f"n={summary.n}")
    markers = ""
    if comparison is not None and comparison.significant:
        markers += SIGNIFICANT
    if comparison is not None and comparison.verdict == VERDICT_SMALL_N:
        markers += UNTESTED
    if failures:
        markers += SOME_FAILED
    if markers:
        parts.append(markers)
    return " ".join(parts)


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


def build_cell(run: RunData, key: MetricKey, env: str, show_n: bool) -> Cell:
    vals = _values(run, key, env)
    failed = _failure_count(run, key, env)
    if not vals:
        if failed:
            return Cell(env, FAILED, None, None, f"failed ({failed})", failed)
        return Cell(env, MISSING, None, None, DASH)
    summary = summarize(vals)
    base = _values(run, key, run.baseline)
    comparison = None
    if env != run.baseline and base:
        comparison = compare(vals, base, key.higher_is_better)
    return Cell(env, OK, summary, comparison,
                cell_text(summary, comparison, show_n, failed), failed)


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


def build_legend(run: RunData, rows: tuple[Row, ...], columns: tuple[Column, ...]) -> tuple[str, ...]:
    cells = [c for r in rows for c in r.cells]
    legend = [
        f"Cell: mean (change of the mean vs {run.baseline}) [sample standard deviation].",
        f"{HIGHER} higher is better, {LOWER} lower is better: for {HIGHER} a {MINUS}% is worse, "
        f"for {LOWER} a +% is worse.",
        f"{SIGNIFICANT} significantly different from {run.baseline}: Welch's t-test, two-sided, "
        f"p < {ALPHA:g}. Without {SIGNIFICANT}: no significant difference "
        f"(the runs cannot tell the two apart, whatever the % says).",
    ]
    per_cell_n = any(cell.status == OK and col.n is None
                     for r in rows for col, cell in zip(columns, r.cells))
    if per_cell_n:
        legend.append("n=k: repetitions of that cell (not the same for every cell of its column).")
    if any(c.comparison and c.comparison.verdict == VERDICT_SMALL_N for c in cells):
        legend.append(f"{UNTESTED} not tested: fewer than 2 repetitions on one side.")
    if any(c.status == OK and c.failures for c in cells):
        legend.append(f"{SOME_FAILED} some repetitions failed (see failures); the figures use the others.")
    if any(c.status == FAILED for c in cells):
        legend.append("failed (k): all k repetitions failed (see failures).")
    if any(c.status == MISSING for c in cells):
        legend.append(f"{DASH}: not measured.")
    return tuple(legend)


def build_table(run: RunData) -> Table:
    columns = build_columns(run)
    rows = []
    for key in run.metrics:
        cells = tuple(build_cell(run, key, col.env, show_n=col.n is None) for col in columns)
        rows.append(Row(key, row_label(key), cells))
    rows_t = tuple(rows)
    footnotes = tuple(f"{EMULATED} {c.env}: {EMULATED_NOTE}." for c in columns if c.emulated)
    return Table(title=f"{run.study_name}: run {run.run_id}", baseline=run.baseline,
                 columns=columns, rows=rows_t, legend=build_legend(run, rows_t, columns),
                 footnotes=footnotes, failures=build_failures(run))


# -- facts shared by the renderers ---------------------------------------------------

HOST_KEYS = (("cpu_model", "CPU"), ("cores", "Cores"), ("mem_bytes", "Memory"),
             ("kernel", "Kernel"), ("thp", "THP"), ("governor", "Governor"),
             ("docker_version", "Docker"))


def fmt_bytes(n) -> str:
    try:
        n = float(n)
    except (TypeError, ValueError):
        return str(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # unreachable


def fmt_fact(value) -> str:
    """Scalars as they are; lists and dicts as compact JSON."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    if value is None:
        return DASH
    return str(value)


def host_facts(run: RunData) -> list[tuple[str, str]]:
    """(label, text) pairs: the well-known facts first, then whatever else is there."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    known = dict(HOST_KEYS)
    out = []
    for key, label in HOST_KEYS:
        if key in facts:
            v = facts[key]
            out.append((label, fmt_bytes(v) if key == "mem_bytes" else fmt_fact(v)))
    out += [(k, fmt_fact(v)) for k, v in facts.items() if k not in known and k != "doctor"]
    return out


def doctor_warnings(run: RunData) -> list[str]:
    """`isobench doctor` findings stored with the run that may bias it."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    return [f"{f['check']}: {f['value']}" + (f" ({f['fix']})" if f.get("fix") else "")
            for f in facts.get("doctor", []) if f.get("status") == "warn"]


def run_facts(run: RunData) -> list[tuple[str, str]]:
    return [
        ("Study", run.study_name),
        ("Study hash", run.study_hash[:12] if run.study_hash else DASH),
        ("Run", run.run_id),
        ("Status", run.status),
        ("Started", run.started_at or DASH),
        ("Finished", run.finished_at or DASH),
        ("Baseline", run.baseline),
    ]
