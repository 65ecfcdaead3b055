"""What a Table I cell's samples warn of: outliers, a slow first round,
drift, CPU sides that were not alike, what the workload said of its figure,
an adaptive run's cell that did not converge. Never a changed value."""

from __future__ import annotations

from isobench.analysis.anomalies import (
    Drift,
    Outliers,
    SideAsymmetry,
    SlowFirstRound,
    drift,
    outliers,
    side_asymmetry,
    slow_first_round,
)
from isobench.analysis.repetitions import converged
from isobench.results.analysis import pairs_and_sides
from isobench.results.model import ALL_METRICS, MetricKey, RunData


def cell_warnings(run: RunData, key: MetricKey, env: str, target_ci_pct: float | None = None) -> tuple[str, ...]:
    """Outliers, a slow first round and drift in the cell's samples, what the
    workload said about the validity of its figure, and for an adaptive run a
    cell that did not converge (never a changed value)."""
    vals = list(run.values.get((key, env), []))
    by_round = [v for _, v in sorted(zip(run.rounds.get((key, env), range(len(vals))), vals))]
    found: list[Outliers | SlowFirstRound | Drift | SideAsymmetry] = [
        outliers(vals),
        slow_first_round(by_round, key.higher_is_better),
        drift(by_round),
    ]
    if env != run.baseline:
        pairs, sides = pairs_and_sides(run, key, env, run.baseline)
        if pairs is not None and sides is not None:
            found.append(side_asymmetry(pairs, sides))
    texts = [f.text for f in found if f.flagged]
    if target_ci_pct is not None and not converged(vals, target_ci_pct):
        texts.append(f"not converged: the 95% CI is wider than \u00b1{target_ci_pct:g}% after {len(vals)} rounds")
    where = (key.workload, key.case, env)
    return (
        tuple(texts)
        + tuple(run.validity.get((*where, key.metric), ()))
        + tuple(run.validity.get((*where, ALL_METRICS), ()))
    )
