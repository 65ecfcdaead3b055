"""How far a cell moves from one run to the next on an unchanged host: the
between-run spread a compare of two runs must allow for, of a cell's raw
value (the raw compare) or of its ratio to the baseline (``--overhead``).

Within a run, rounds are interleaved and the host's drift is in every
round's noise; between two runs the host can shift as a whole (a disk's
write-back state, a neighbour that came or went: fio randwrite moved by 20%
in one environment between two half-hour runs on the development VM, and
with it that environment's ratio to native). A compare with one run a side
reads such a shift as a change. When the store holds enough runs of the
reference run's configuration for a cell, the variance of such shifts of a
run's mean (or of its ratio to the baseline) is estimated from them and
added for both runs (``tworuns.add_between_runs``); with fewer, the compare
says it could not.

A run counts for a cell when it is of the same study on the same host class
(results/fingerprint.py), finished as history uses runs, not the candidate
(B), and its study file gives the cell's workload and environment the same
settings as the reference run's (another ``size_mb`` or ``cpus`` measures
something else). The estimate is DerSimonian and Laird's method of moments
over groups, the one history's change points use
(``changepoints.dersimonian_laird``): each environment a group of runs
about its own mean, pooled, with sum(runs - 1) degrees of freedom (at
least MIN_DF). Pure.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from isobench.analysis import changepoints as cp
from isobench.core import tomlbound
from isobench.results.analysis import pairs
from isobench.results.fingerprint import host_class
from isobench.results.history import USABLE_STATUSES
from isobench.results.model import RunData

# Pooled degrees of freedom of a spread worth using: at 2, the A/A rate of
# the overhead gate was 6.3% [4.1, 9.7] on a host whose runs shift by 10%
# (benchmarks/between_calibration.py, an unweighted estimate then); from 4,
# at most 2.7%.
MIN_DF = 4


@dataclass(frozen=True)
class Spread:
    tau2: float  # variance between runs of a run's mean log value (or mean log ratio)
    runs: int  # runs of A's configuration it rests on, per environment (the fewest)
    df: int  # pooled over the metric's environments: sum of (runs - 1)

    @property
    def pct(self) -> float:
        """The spread as ± percent of the value (one SD)."""
        return math.expm1(math.sqrt(self.tau2)) * 100


def _tables(run: RunData) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        doc = tomlbound.loads(run.study_text or "")
    except (tomllib.TOMLDecodeError, tomlbound.TomlBoundError):
        return {}, {}
    w, e = doc.get("workloads", {}), doc.get("environments", {})
    return (w if isinstance(w, dict) else {}), (e if isinstance(e, dict) else {})


def cell_config(
    run: RunData, workload: str, env: str, tables: tuple[dict[str, Any], dict[str, Any]] | None = None
) -> str | None:
    """The settings the run's study file gives a cell's workload and
    environment, as one comparable text; None when the study file has no
    such workload or environment. ``tables``: the run's, parsed already."""
    w, e = tables if tables is not None else _tables(run)
    if workload not in w or env not in e:
        return None
    return json.dumps([w[workload], e[env]], sort_keys=True, default=str)


def run_mean(values: Iterable[float]) -> tuple[float, float] | None:
    """(mean log value, its squared standard error), None below 2 usable values."""
    x = np.asarray([v for v in values if math.isfinite(v) and v > 0], dtype=float)
    if x.size < 2:
        return None
    lx = np.log(x)
    return float(lx.mean()), float(lx.var(ddof=1) / x.size)


def ratio_mean(paired: Iterable[tuple[float, float]]) -> tuple[float, float] | None:
    """(mean per-round log ratio, its squared standard error) of (env,
    baseline) pairs, as Table I's paired test; None below 2 usable pairs."""
    d = np.asarray(
        [math.log(x) - math.log(y) for x, y in paired if math.isfinite(x) and math.isfinite(y) and x > 0 and y > 0],
        dtype=float,
    )
    if d.size < 2:
        return None
    return float(d.mean()), float(d.var(ddof=1) / d.size)


def spreads(
    stored: Iterable[RunData], a: RunData, b: RunData, overhead: bool = False
) -> dict[tuple[str, str, str, str], Spread]:
    """(workload, case, metric, env) -> the between-run spread of that cell of
    run A, pooled over the environments of the metric (the host's shifts are
    the workload's on this host, whichever environment they hit: pooling
    buys degrees of freedom a handful of runs cannot give one cell). An
    environment counts with at least 2 runs of A's configuration among
    ``stored`` (A included, B never); a metric needs MIN_DF pooled.

    ``overhead``: the spread of each environment's paired log ratio to the
    baseline (what ``compare --overhead`` compares) instead of its raw mean;
    the baseline's configuration must match too, and the runs must share A's
    baseline."""
    cls = host_class(a)
    peers = [
        r
        for r in stored
        if r.run_id != b.run_id
        and r.study_name == a.study_name
        and r.status in USABLE_STATUSES
        and host_class(r).same(cls)
        and (not overhead or r.baseline == a.baseline)
    ]
    if a.run_id not in {r.run_id for r in peers}:
        peers.append(a)
    envs = [e for e in a.environments if not overhead or e != a.baseline]
    tables = {r.run_id: _tables(r) for r in peers}

    def config(r: RunData, workload: str, env: str) -> str | None:
        mine = cell_config(r, workload, env, tables[r.run_id])
        if not overhead or mine is None:
            return mine
        base = cell_config(r, workload, r.baseline, tables[r.run_id])
        return None if base is None else mine + base

    def estimate(r: RunData, ident: tuple[str, str, str], unit: str, env: str) -> tuple[float, float] | None:
        k = next((k for k in r.metrics if (k.workload, k.case, k.metric) == ident and k.unit == unit), None)
        if k is None:
            return None
        if overhead:
            return ratio_mean(pairs(r, k, env, r.baseline) or [])
        return run_mean(r.values.get((k, env)) or [])

    out = {}
    for k in a.metrics:
        ident = (k.workload, k.case, k.metric)
        per_env = {}
        for env in envs:
            mine = config(a, k.workload, env) if a.values.get((k, env)) else None
            if mine is None:
                continue
            means = [
                m
                for r in peers
                if config(r, k.workload, env) == mine and (m := estimate(r, ident, k.unit, env)) is not None
            ]
            if len(means) >= 2:
                per_env[env] = means
        df = sum(len(m) - 1 for m in per_env.values())
        if df < MIN_DF:
            continue
        # each environment a group with its own mean, as history's segments
        ys = np.array([y for m in per_env.values() for y, _ in m])
        v = np.maximum([s for m in per_env.values() for _, s in m], cp.MIN_VARIANCE)
        edges = np.cumsum([0] + [len(m) for m in per_env.values()]).tolist()
        tau2 = cp.dersimonian_laird(ys, v, edges)
        runs = min(len(m) for m in per_env.values())
        for env in per_env:
            out[(*ident, env)] = Spread(tau2, runs, df)
    return out
