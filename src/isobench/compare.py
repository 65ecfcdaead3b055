"""Two runs side by side: did anything change, significantly, beyond a tolerance?

Every cell (workload, case, metric, environment) present in both runs is
compared with ``stats.compare``, run A as the baseline: ratio B/A with its
95% CI and Welch's t-test. A cell is *flagged* when it changed by more than
the tolerance AND significantly; a *regression* (for CI gating) is a
significant change for the worse by more than a given percent, "worse"
following the metric's direction. The A/A check: comparing two runs of the
same study, about 5% of cells differ significantly by chance at p < 0.05.

Pure data: the renderers (terminal, Markdown, HTML) are in report/.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from isobench.report.model import MetricKey, RunData
from isobench.report.table import HIGHER, LOWER, fmt_fact, is_emulated
from isobench.stats import ALPHA, VERDICT_WORSE, Comparison, compare

DEFAULT_TOLERANCE_PCT = 2.0

__all__ = ["CellDiff", "RunComparison", "compare_runs"]


@dataclass(frozen=True)
class CellDiff:
    key: MetricKey  # as in run B
    env: str
    comparison: Comparison  # B (candidate) vs A (baseline)
    flagged: bool  # |change| > tolerance and significant
    emulated: bool  # emulated (TCG) in either run

    @property
    def name(self) -> str:
        case = "" if self.key.case in ("", "default") else f"/{self.key.case}"
        return f"{self.key.workload}{case} {self.key.metric} on {self.env}"

    @property
    def worse_pct(self) -> float:
        """How much worse B is than A in percent of A (negative: better)."""
        return self.comparison.overhead_pct

    def is_regression(self, pct: float) -> bool:
        c = self.comparison
        return c.significant and c.verdict == VERDICT_WORSE and self.worse_pct > pct


@dataclass
class RunComparison:
    run_a: RunData
    run_b: RunData
    tolerance_pct: float
    cells: list[CellDiff]
    only_in_a: list[str] = field(default_factory=list)  # cells measured in one run only
    only_in_b: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # same metric, different unit or direction
    facts_diff: list[tuple[str, str, str]] = field(default_factory=list)  # (fact, A, B)
    alpha: float = ALPHA

    @property
    def significant(self) -> list[CellDiff]:
        return [c for c in self.cells if c.comparison.significant]

    @property
    def flagged(self) -> list[CellDiff]:
        return [c for c in self.cells if c.flagged]

    def regressions(self, pct: float) -> list[CellDiff]:
        return [c for c in self.cells if c.is_regression(pct)]

    def summary_line(self) -> str:
        n, k = len(self.cells), len(self.significant)
        expected = n * self.alpha
        return (f"{k} of {n} cells differ significantly (Welch, p < {self.alpha:g}; about "
                f"{expected:.1f} expected by chance if nothing changed); {len(self.flagged)} flagged: "
                f"changed by more than {self.tolerance_pct:g}% and significantly")


def _cell_name(key: MetricKey, env: str) -> str:
    case = "" if key.case in ("", "default") else f"/{key.case}"
    return f"{key.workload}{case} {key.metric} on {env}"


def _facts_diff(a: RunData, b: RunData) -> list[tuple[str, str, str]]:
    """Host and environment facts that differ: what the two runs compare."""
    out = []
    if a.study_hash != b.study_hash:
        out.append(("study hash", a.study_hash, b.study_hash))
    ha, hb = a.host_facts or {}, b.host_facts or {}
    for k in sorted(set(ha) | set(hb)):
        if ha.get(k) != hb.get(k):
            out.append((f"host {k}", fmt_fact(ha.get(k)), fmt_fact(hb.get(k))))
    for env in [e for e in b.environments if e in a.environments]:
        fa, fb = a.env_facts.get(env) or {}, b.env_facts.get(env) or {}
        for k in sorted(set(fa) | set(fb)):
            if k in ("container",):  # per-run names, always different
                continue
            if fa.get(k) != fb.get(k):
                out.append((f"{env} {k}", fmt_fact(fa.get(k)), fmt_fact(fb.get(k))))
    return out


def _measured(run: RunData) -> dict[tuple[str, str, str, str], tuple[MetricKey, list[float]]]:
    """(workload, case, metric, env) -> (key, values), cells with values only, in study order."""
    out = {}
    for k in run.metrics:
        for env in run.environments:
            vals = run.values.get((k, env))
            if vals:
                out[(k.workload, k.case, k.metric, env)] = (k, vals)
    return out


def compare_runs(a: RunData, b: RunData, tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
                 alpha: float = ALPHA) -> RunComparison:
    ma, mb = _measured(a), _measured(b)
    cells, mismatched = [], []
    for ident, (kb, vb) in mb.items():  # B's order: the newer study's
        if ident not in ma:
            continue
        ka, va = ma[ident]
        env = ident[3]
        if ka.unit != kb.unit or ka.higher_is_better != kb.higher_is_better:
            mismatched.append(f"{_cell_name(kb, env)}: {ka.unit} {_arrow(ka)} vs {kb.unit} {_arrow(kb)}")
            continue
        c = compare(vb, va, kb.higher_is_better, alpha)
        flagged = c.significant and _finite(c.pct) and abs(c.pct) > tolerance_pct
        cells.append(CellDiff(kb, env, c, flagged, is_emulated(a, env) or is_emulated(b, env)))
    only_a = [_cell_name(k, i[3]) for i, (k, _) in ma.items() if i not in mb]
    only_b = [_cell_name(k, i[3]) for i, (k, _) in mb.items() if i not in ma]
    return RunComparison(a, b, tolerance_pct, cells, only_a, only_b, mismatched, _facts_diff(a, b), alpha)


def _arrow(k: MetricKey) -> str:
    return HIGHER if k.higher_is_better else LOWER


def _finite(x: float) -> bool:
    return x is not None and math.isfinite(x)
