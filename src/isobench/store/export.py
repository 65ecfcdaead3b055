"""A run as plain tables for other tools (pandas, R, spreadsheets).

Two tables, their columns documented in docs/export.md and kept stable
(tests pin them): every raw sample × metric, and the summarised cells of
Table I with their verdict against the baseline (the same tests, correction
and intervals as the table: docs/statistics.md). CSV writes two files into a
directory; JSON writes one document holding the run's metadata as well.
New columns may be appended at the end; existing ones are never renamed,
reordered or removed.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from isobench.core import sink
from isobench.results.attribution import derived
from isobench.results.model import RunData
from isobench.results.numbers import beyond_cap, capped
from isobench.results.programs import summary as program_summary
from isobench.results.suggestion import budget_fields
from isobench.results.table import FAILED, OK, build_table

# 2: cells carry the log-scale, BH-corrected verdicts; ``verdict`` is
# changed | equivalent | inconclusive | baseline | failed (was worse/better/...)
FORMAT_VERSION = 2

SAMPLE_COLUMNS = (
    "run_id",
    "env",
    "env_kind",
    "workload",
    "case",
    "metric",
    "unit",
    "higher_is_better",
    "round",
    "warmup",
    "status",
    "value",
    "started_at",
    "wall_s",
)
CELL_COLUMNS = (
    "run_id",
    "workload",
    "case",
    "metric",
    "unit",
    "higher_is_better",
    "env",
    "n",
    "mean",
    "median",
    "sd",
    "cv",
    "ci95_low",
    "ci95_high",
    "ratio_vs_baseline",
    "pct_vs_baseline",
    "pct_ci95_low",
    "pct_ci95_high",
    "p_value",
    "significant",
    "verdict",
    # since version 2
    "min",
    "max",
    "test",
    "p_adjusted",
    "interval_level",
    "direction",
    "rounds_needed",
    "warnings",
    # appended since primaries
    "family",
    # appended since centres: pct_vs_baseline = centre / baseline_centre - 1
    "centre",
    "baseline_centre",
    # appended since rounds_needed is null beyond the cap (was cap + 1)
    "rounds_needed_beyond_cap",
    # appended since suggestions name a budgeted run at its looks' level (results/suggestion.py)
    "budget_rounds_needed",
    "budget_look",
    "budget",
    "budget_max_repetitions",
)

# Per-sample counters (docs/attribution.md): one row per measured sample and
# counter, its delta over the sample and the delta per unit of work.
COUNTER_COLUMNS = (
    "run_id",
    "env",
    "workload",
    "case",
    "round",
    "warmup",
    "counter",
    "delta",
    "unit_name",
    "units",
    "per_unit",
)

VERDICT_BASELINE = "baseline"
VERDICT_FAILED = "failed"


def _num(x) -> float | None:
    """Finite numbers as they are; nan and inf become empty (CSV) / null (JSON)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def sample_rows(run: RunData, samples: list[dict]) -> list[dict]:
    """One row per stored sample and metric, warm-ups and failures included
    (flagged by ``warmup`` and ``status``); a sample without values (failed)
    gives one row per metric of its cell with an empty value."""
    defs: dict[tuple[str, str], list] = {}
    for k in run.metrics:
        defs.setdefault((k.workload, k.case), []).append(k)
    rows = []
    for s in samples:
        env, workload, case = s["env"], s["workload"], s["ccase"]
        vals = json.loads(s["vals"]) if s.get("vals") else {}
        kind = (run.env_facts.get(env) or {}).get("kind")
        for k in defs.get((workload, case), []):
            if k.metric not in vals and s["status"] == "ok":
                continue  # the tool gave no value for this metric in this sample
            rows.append(
                {
                    "run_id": run.run_id,
                    "env": env,
                    "env_kind": kind,
                    "workload": workload,
                    "case": case,
                    "metric": k.metric,
                    "unit": k.unit,
                    "higher_is_better": k.higher_is_better,
                    "round": s["round"],
                    "warmup": bool(s["warmup"]),
                    "status": s["status"],
                    "value": _num(vals.get(k.metric)),
                    "started_at": s["started_at"],
                    "wall_s": _num(s["wall_s"]),
                }
            )
    return rows


def cell_rows(run: RunData) -> list[dict]:
    """Table I's cells: one row per metric and environment that has values
    or failed entirely (n = 0, verdict ``failed``); never-measured cells are
    left out."""
    table = build_table(run)
    rows = []
    for row in table.rows:
        k = row.key
        base = next((c.centre for c in row.cells if c.env == run.baseline), math.nan)
        for cell in row.cells:
            if cell.status not in (OK, FAILED):
                continue
            s, v = cell.summary, cell.verdict
            verdict: str | None
            if cell.status == FAILED:
                verdict = VERDICT_FAILED
            elif cell.env == run.baseline:
                verdict = VERDICT_BASELINE
            else:
                verdict = v.verdict if v is not None else None
            e = v.effect if v is not None else None
            rows.append(
                {
                    "run_id": run.run_id,
                    "workload": k.workload,
                    "case": k.case,
                    "metric": k.metric,
                    "unit": k.unit,
                    "higher_is_better": k.higher_is_better,
                    "env": cell.env,
                    "n": s.n if s else 0,
                    "mean": _num(s.mean) if s else None,
                    "median": _num(s.median) if s else None,
                    "sd": _num(s.sd) if s else None,
                    "cv": _num(s.cv) if s else None,
                    "ci95_low": _num(s.ci95_low) if s else None,
                    "ci95_high": _num(s.ci95_high) if s else None,
                    "ratio_vs_baseline": _num(e.ratio) if e else None,
                    "pct_vs_baseline": _num(e.pct) if e else None,
                    # the corrected interval (level in interval_level), despite the historical name
                    "pct_ci95_low": _num(v.pct_low) if v else None,
                    "pct_ci95_high": _num(v.pct_high) if v else None,
                    "p_value": _num(e.p) if e else None,
                    "significant": v.changed if v else None,
                    "verdict": verdict,
                    "min": _num(s.min) if s else None,
                    "max": _num(s.max) if s else None,
                    "test": e.test if e else None,
                    "p_adjusted": _num(v.p_adjusted) if v else None,
                    "interval_level": _num(v.level) if v else None,
                    "direction": (v.direction or None) if v else None,
                    "rounds_needed": capped(v.rounds_needed) if v else None,
                    "warnings": "; ".join(cell.warnings) or None,
                    "family": row.family or None,
                    "centre": _num(cell.centre) if s else None,
                    "baseline_centre": _num(cell.reference if cell.reference is not None else base) if e else None,
                    "rounds_needed_beyond_cap": beyond_cap(v.rounds_needed) if v else None,
                    **budget_fields(v, run),
                }
            )
    return rows


def counter_rows(run: RunData, samples: list[dict]) -> list[dict]:
    """One row per successful sample (warm-ups included, flagged) and counter
    in its extra["counters"] (derived ones such as cpu.sut_s included);
    per_unit = delta / units, empty when the sample did no units."""
    rows = []
    for s in samples:
        if s["status"] != "ok" or not s.get("extra"):
            continue
        extra = json.loads(s["extra"])
        deltas = extra.get("counters")
        if not isinstance(deltas, dict):
            continue
        unit_name, units = (extra.get("units") or ["run", 1.0])[:2]
        units = _num(units)
        for name, raw in sorted(derived(deltas).items()):
            value = _num(raw)
            rows.append(
                {
                    "run_id": run.run_id,
                    "env": s["env"],
                    "workload": s["workload"],
                    "case": s["ccase"],
                    "round": s["round"],
                    "warmup": bool(s["warmup"]),
                    "counter": name,
                    "delta": value,
                    "unit_name": unit_name,
                    "units": units,
                    "per_unit": value / units if value is not None and units else None,
                }
            )
    return rows


def _csv_value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest text that reads back to the same float
    if isinstance(v, str):
        return sink.csv_cell(sink.terminal(v))
    return str(v)


def write_csv(path: Path, columns: tuple[str, ...], rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([_csv_value(r[c]) for c in columns])


def export_csv(run: RunData, samples: list[dict], directory: str | Path) -> list[Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / "samples.csv", d / "cells.csv", d / "counters.csv"]
    write_csv(paths[0], SAMPLE_COLUMNS, sample_rows(run, samples))
    write_csv(paths[1], CELL_COLUMNS, cell_rows(run))
    write_csv(paths[2], COUNTER_COLUMNS, counter_rows(run, samples))
    return paths


def run_fields(run: RunData) -> dict:
    """What a run is, as every JSON document names it."""
    return {
        "run_id": run.run_id,
        "study_name": run.study_name,
        "status": run.status,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "baseline": run.baseline,
        "environments": run.environments,
        "study_hash": run.study_hash,
        # per workload that records it: the same bytes everywhere, or which differ
        **({"programs": programs} if (programs := program_summary(run)) else {}),
    }


def export_document(run: RunData, samples: list[dict]) -> dict:
    return {
        "schema": "isobench.export",  # the name every document has (docs/output.md)
        "format": "isobench-export",  # its older name, kept for readers that check it
        "version": FORMAT_VERSION,
        "run": {**run_fields(run), "study_text": run.study_text},
        "host_facts": run.host_facts,
        "env_facts": run.env_facts,
        "sample_columns": list(SAMPLE_COLUMNS),
        "cell_columns": list(CELL_COLUMNS),
        "samples": sample_rows(run, samples),
        "cells": cell_rows(run),
        "counter_columns": list(COUNTER_COLUMNS),
        "counters": counter_rows(run, samples),
    }


def export_json(run: RunData, samples: list[dict], path: str | Path) -> Path:
    p = Path(path)
    if p.parent != Path("."):
        p.parent.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: a nan that slipped through must fail here, not in a reader
    p.write_text(json.dumps(export_document(run, samples), indent=1, allow_nan=False, default=str) + "\n")
    return p
