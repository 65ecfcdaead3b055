"""Two runs side by side: did anything change, by how much, and can we tell?

Every cell (workload, case, metric, environment) present in both runs is
compared with the same statistics as Table I (results/analysis.py), run A as
the reference: the ratio of B's geometric mean to A's from Welch's t-test on
log values (two runs cannot be paired round by round), Benjamini-Hochberg
over all compared cells, and one of three verdicts per cell: changed,
equivalent within ±tolerance, or inconclusive at this n. A *regression*
(the CI gate) is a cell *changed* for the worse by more than a given
percent. The A/A check: two runs of an unchanged study exit 0 from
``--fail-on-regression`` in at least 95% of cases (docs/statistics.md).

Pure data: the renderers (terminal, Markdown, HTML) are in report/.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from isobench.results.analysis import Question, judge_cells, settings_of
from isobench.results.model import MetricKey, RunData
from isobench.results.table import HIGHER, LOWER, fmt_fact, is_emulated
from isobench.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE, Verdict, regressions

__all__ = ["CellDiff", "RunComparison", "compare_runs"]


@dataclass(frozen=True)
class CellDiff:
    key: MetricKey  # as in run B
    env: str
    verdict: Verdict  # B (candidate) vs A (reference)
    emulated: bool  # emulated (TCG) in either run

    @property
    def name(self) -> str:
        case = "" if self.key.case in ("", "default") else f"/{self.key.case}"
        return f"{self.key.workload}{case} {self.key.metric} on {self.env}"

    @property
    def flagged(self) -> bool:
        """Changed, significantly after correction (and beyond any noise floor)."""
        return self.verdict.changed

    @property
    def worse_pct(self) -> float:
        """How much worse B is than A in percent of A (negative: better)."""
        return self.verdict.overhead_pct


@dataclass
class RunComparison:
    run_a: RunData
    run_b: RunData
    tolerance_pct: float  # equivalence margin
    cells: list[CellDiff]
    only_in_a: list[str] = field(default_factory=list)  # cells measured in one run only
    only_in_b: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)  # same metric, different unit or direction
    facts_diff: list[tuple[str, str, str]] = field(default_factory=list)  # (fact, A, B)

    def count(self, verdict: str) -> int:
        return sum(1 for c in self.cells if c.verdict.verdict == verdict)

    @property
    def flagged(self) -> list[CellDiff]:
        return [c for c in self.cells if c.flagged]

    def regressions(self, pct: float) -> list[CellDiff]:
        """The gate: cells changed for the worse by more than ``pct`` percent."""
        worse = {id(v) for v in regressions([c.verdict for c in self.cells], pct)}
        return [c for c in self.cells if id(c.verdict) in worse]

    def summary_line(self) -> str:
        n = len(self.cells)
        level = next((c.verdict.level for c in self.cells if c.verdict.effect.tested), float("nan"))
        return (f"{self.count(CHANGED)} of {n} cells changed (significant after Benjamini-Hochberg "
                f"correction: false discoveries <= 5%; intervals at {level * 100:.4g}%), "
                f"{self.count(EQUIVALENT)} equivalent within \u00b1{self.tolerance_pct:g}% "
                f"(or the metric's noise floor), "
                f"{self.count(INCONCLUSIVE)} inconclusive at this n")


def _cell_name(key: MetricKey, env: str) -> str:
    case = "" if key.case in ("", "default") else f"/{key.case}"
    return f"{key.workload}{case} {key.metric} on {env}"


def _facts_diff(a: RunData, b: RunData) -> list[tuple[str, str, str]]:
    """Host and environment facts that differ: what the two runs compare."""
    out = []
    if a.study_hash != b.study_hash:
        out.append(("study hash", a.study_hash, b.study_hash))
    ha, hb = _by_check(a.host_facts or {}), _by_check(b.host_facts or {})
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


def _by_check(facts: dict) -> dict:
    """Host facts with the doctor's findings one per check ("doctor load":
    "ok: load average 0.5"), so a diff names the finding that changed
    instead of printing the whole list; the noise pilot by its figures."""
    out = {k: v for k, v in facts.items() if k != "doctor"}
    noise = facts.get("host_noise")
    if isinstance(noise, dict) and isinstance(noise.get("summary"), str):  # the figures, not every sample
        out["host_noise"] = noise["summary"]
    for f in facts.get("doctor") or []:
        if isinstance(f, dict) and "check" in f:
            out[f"doctor {f['check']}"] = f"{f.get('status', '?')}: {f.get('value', '')}"
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


def compare_runs(a: RunData, b: RunData, tolerance_pct: float | None = None) -> RunComparison:
    """B against A. ``tolerance_pct`` (the equivalence margin) defaults to
    B's study file's; noise floors come from B's study file; the level
    accounts for both runs' planned looks when they were adaptive."""
    ma, mb = _measured(a), _measured(b)
    asked, mismatched = [], []
    for ident, (kb, vb) in mb.items():  # B's order: the newer study's
        if ident not in ma:
            continue
        ka, va = ma[ident]
        env = ident[3]
        if ka.unit != kb.unit or ka.higher_is_better != kb.higher_is_better:
            mismatched.append(f"{_cell_name(kb, env)}: {ka.unit} {_arrow(ka)} vs {kb.unit} {_arrow(kb)}")
            continue
        asked.append((kb, env, Question(kb, vb, va)))
    sa, sb = settings_of(a), settings_of(b)
    settings = sb if tolerance_pct is None else replace(sb, tolerance_pct=tolerance_pct)
    verdicts = judge_cells([q for *_, q in asked], settings, looks=sa.looks * sb.looks)
    cells = [CellDiff(k, env, v, is_emulated(a, env) or is_emulated(b, env))
             for (k, env, _), v in zip(asked, verdicts)]
    only_a = [_cell_name(k, i[3]) for i, (k, _) in ma.items() if i not in mb]
    only_b = [_cell_name(k, i[3]) for i, (k, _) in mb.items() if i not in ma]
    return RunComparison(a, b, settings.tolerance_pct, cells, only_a, only_b, mismatched, _facts_diff(a, b))


def _arrow(k: MetricKey) -> str:
    return HIGHER if k.higher_is_better else LOWER
