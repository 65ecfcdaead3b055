"""Two runs side by side: did anything change, by how much, and can we tell?

Every cell (workload, case, metric, environment) present in both runs is
compared with the same statistics as Table I (results/analysis.py), run A as
the reference: the ratio of B's geometric mean to A's from Welch's t-test on
log values (two runs cannot be paired round by round), Benjamini-Hochberg
over all compared cells, and one of three verdicts per cell: changed,
equivalent within ±tolerance, or inconclusive at this n. When the runs store
their primaries (results/primary.py: B's, else A's), the primary cells form
one family and the descriptive rest another, each corrected on its own.
The stored runs of A's configuration, when there are enough, say how far a
run's mean moves between runs on its own (results/between.py): each raw
cell's interval holds that too (and in the overhead form, how far a run's
ratio to the baseline moves). A
*regression* (the CI gate) is a primary cell (any cell, for runs stored
before primaries) *changed* for the worse by more than a given percent.
The A/A check: two runs of an unchanged study exit 0 from
``--fail-on-change`` in at least 95% of cases (docs/statistics.md).

With ``--overhead`` (``compare_overheads``) the question is another one:
did what an environment costs move? Each run's ratio of every environment
to the run's own baseline (as Table I measures it, paired by round) is
compared between the runs: the ratio of ratios, its Welch-type interval
(``tworuns.overhead_change``), the same correction and verdicts. The host's
speed between the two runs scales an environment and its baseline alike and
cancels, which a raw-value compare cannot tell from a change.

Pure data: the renderers (terminal, Markdown, HTML, JUnit cases) are in
report/.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from isobench.analysis.stats import Effect
from isobench.analysis.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE, Verdict, fmt_level, regressions
from isobench.core.errors import IsobenchError
from isobench.results.analysis import (
    DESCRIPTIVE,
    PRIMARY,
    Question,
    Settings,
    baseline_question,
    judge_families,
    judge_overhead_cells,
    settings_of,
)
from isobench.results.between import Spread
from isobench.results.gate import cell_name
from isobench.results.model import MetricKey, RunData
from isobench.results.primary import primary_family
from isobench.results.runfacts import fmt_fact
from isobench.results.studydiff import study_change
from isobench.results.table import HIGHER, LOWER, is_emulated

__all__ = ["RAW", "OVERHEAD", "CellDiff", "RunComparison", "compare_runs", "compare_overheads"]

RAW = "raw"  # each cell of B against the same cell of A
OVERHEAD = "overhead"  # each environment's ratio to the baseline, B's against A's


@dataclass(frozen=True)
class CellDiff:
    key: MetricKey  # as in run B
    env: str
    verdict: Verdict  # B (candidate) vs A (reference)
    emulated: bool  # emulated (TCG) in either run
    # the overhead form only: the baseline, and the environment against it in each run
    baseline: str = ""
    within_a: Effect | None = None
    within_b: Effect | None = None
    # "primary" | "descriptive" when the runs store primaries, "" otherwise (one family)
    family: str = ""

    @property
    def name(self) -> str:
        return cell_name(self.key, self.env, self.baseline)

    @property
    def flagged(self) -> bool:
        """Changed, significantly after correction (and beyond any noise floor)."""
        return self.verdict.changed

    @property
    def gated(self) -> bool:
        """Checked by --fail-on-change: a primary cell, or any cell of a
        compare of runs stored before primaries."""
        return self.family != DESCRIPTIVE

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
    form: str = RAW
    baseline: str = ""  # the overhead form's baseline environment
    # cells whose intervals hold the between-run spread, and the runs of A's
    # configuration that spread rests on (fewest over the cells)
    between_cells: int = 0
    between_runs: int = 0
    between_asked: bool = False

    @property
    def is_overhead(self) -> bool:
        return self.form == OVERHEAD

    @property
    def study_line(self) -> str:
        """ "" when both runs ran one study text; else what differs, which
        every output of the compare says first (results/studydiff.py)."""
        return study_change(self.run_a, self.run_b)

    @property
    def form_line(self) -> str:
        """Which question was asked, for every output of the compare."""
        if self.form == OVERHEAD:
            return (
                f"form: overhead: each environment's ratio to {self.baseline} within its run, B's "
                f"against A's (the host's speed between the runs cancels)"
            )
        return (
            "form: raw values: each cell of B against the same cell of A (a change of the host's "
            "speed between the runs is part of every change; --overhead compares each environment's "
            "ratio to the baseline instead)"
        )

    @property
    def between_line(self) -> str:
        """What the compare knew of how far runs move apart; "" when not asked."""
        if not self.between_asked:
            return ""
        what = "ratio to the baseline" if self.form == OVERHEAD else "mean"
        n = len(self.cells)
        if self.between_cells == 0:
            hint = "run the study again" if self.form == OVERHEAD else "run the study again, or compare --overhead"
            return (
                "between runs: no metric has enough stored runs of A's configuration on this host class (2 in "
                "an environment, 4 degrees of freedom over the metric's environments), so a shift of the host "
                f"between the two runs reads as a change here ({hint})"
            )
        rest = n - self.between_cells
        return (
            f"between runs: {self.between_cells} of {n} cells' intervals hold how far a run's {what} moves "
            f"between runs (from {self.between_runs}+ stored runs of A's configuration on this host class)"
            + (f"; {rest} without enough such runs use the two runs' own noise only" if rest else "")
        )

    def count(self, verdict: str, family: str | None = None) -> int:
        return sum(1 for c in self.cells if c.verdict.verdict == verdict and family in (None, c.family))

    @property
    def split(self) -> bool:
        """Judged as two families (primary, descriptive)."""
        return any(c.family for c in self.cells)

    @property
    def flagged(self) -> list[CellDiff]:
        return [c for c in self.cells if c.flagged]

    def regressions(self, pct: float) -> list[CellDiff]:
        """The gate: primary cells (every cell of runs stored before
        primaries) changed for the worse by more than ``pct`` percent."""
        gated = [c for c in self.cells if c.gated]
        worse = {id(v) for v in regressions([c.verdict for c in gated], pct)}
        return [c for c in gated if id(c.verdict) in worse]

    def blind(self, pct: float) -> list[CellDiff]:
        """The gate's blind spots: gated cells neither resolved nor narrow
        enough to have seen a change of ``pct`` percent (Verdict.resolves)."""
        return [c for c in self.cells if c.gated and not c.verdict.resolves(pct)]

    def level(self, family: str | None = None) -> float:
        """The level of the (family's) intervals; nan when none was tested."""
        return next(
            (c.verdict.level for c in self.cells if c.verdict.effect.tested and family in (None, c.family)),
            float("nan"),
        )

    def summary_line(self) -> str:
        if not self.split:
            n = len(self.cells)
            return (
                f"{self.count(CHANGED)} of {n} {'cell' if n == 1 else 'cells'} changed (significant after "
                f"Benjamini-Hochberg correction: false discoveries <= 5%; intervals at {fmt_level(self.level())}), "
                f"{self.count(EQUIVALENT)} equivalent within \u00b1{self.tolerance_pct:g}% "
                f"(or the metric's noise floor), "
                f"{self.count(INCONCLUSIVE)} inconclusive at this n"
            )
        n = sum(1 for c in self.cells if c.family == PRIMARY)
        d = len(self.cells) - n
        return (
            f"{self.count(CHANGED, PRIMARY)} of {n} primary {'cell' if n == 1 else 'cells'} changed "
            f"(significant after Benjamini-Hochberg correction among them: false discoveries <= 5%; intervals at "
            f"{fmt_level(self.level(PRIMARY))}), {self.count(EQUIVALENT, PRIMARY)} equivalent within "
            f"\u00b1{self.tolerance_pct:g}% (or the metric's noise floor), "
            f"{self.count(INCONCLUSIVE, PRIMARY)} inconclusive at this n; {d} descriptive cells (their own "
            f"family, intervals at {fmt_level(self.level(DESCRIPTIVE))}): {self.count(CHANGED, DESCRIPTIVE)} "
            f"changed, {self.count(EQUIVALENT, DESCRIPTIVE)} equivalent, "
            f"{self.count(INCONCLUSIVE, DESCRIPTIVE)} inconclusive"
        )


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


# facts of a run's own history, never of what it measured on: when it was
# imported (issue 55: "What differs" listed two import times) or resumed
RUN_HISTORY = frozenset({"imported", "resumed"})


def _by_check(facts: dict[str, Any]) -> dict[str, Any]:
    """Host facts with the doctor's findings one per check ("doctor load":
    "ok: load average 0.5"), so a diff names the finding that changed
    instead of printing the whole list; the noise pilot by its figures, a
    budget by its minutes."""
    out = {k: v for k, v in facts.items() if k != "doctor" and k not in RUN_HISTORY}
    budget = facts.get("budget")
    if isinstance(budget, dict) and isinstance(budget.get("budget_s"), (int, float)):  # not every look's state
        out["budget"] = f"{budget['budget_s'] / 60:g} min"
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


def compare_runs(
    a: RunData,
    b: RunData,
    tolerance_pct: float | None = None,
    between: dict[tuple[str, str, str, str], Spread] | None = None,
) -> RunComparison:
    """B against A. ``tolerance_pct`` (the equivalence margin) defaults to
    B's study file's; noise floors come from B's study file; the level
    accounts for both runs' planned looks when they were adaptive. The
    families: B's primaries when B stores them, else A's, else one family.
    ``between`` (``results.between.spreads``): each cell's spread between
    runs, added to its interval; None: not asked (the runs' own noise only)."""
    matched, only_a, only_b, mismatched = _match(_measured(a), _measured(b))
    asked = [(kb, env, Question(kb, vb, va, between=_held(between, kb, env), env=env)) for kb, env, va, vb in matched]
    sa, sb = settings_of(a), settings_of(b)
    settings = sb if tolerance_pct is None else replace(sb, tolerance_pct=tolerance_pct)
    family = _families(asked, primary_family((a, b)))
    verdicts = judge_families([q for *_, q in asked], settings, family, looks=sa.looks * sb.looks)
    cells = [
        CellDiff(k, env, v, is_emulated(a, env) or is_emulated(b, env), family=f)
        for (k, env, _), v, f in zip(asked, verdicts, family)
    ]
    used = [q.between[2] for *_, q in asked if q.between is not None]
    return RunComparison(
        a,
        b,
        settings.tolerance_pct,
        cells,
        only_a,
        only_b,
        mismatched,
        _facts_diff(a, b),
        between_cells=len(used),
        between_runs=min(used, default=0),
        between_asked=between is not None,
    )


def _held(between: dict[Any, Any] | None, k: MetricKey, env: str) -> tuple[float, int, int] | None:
    """The cell's between-run spread as the analysis takes it (tau², df, runs)."""
    s = (between or {}).get((k.workload, k.case, k.metric, env))
    return None if s is None else (s.tau2, s.df, s.runs)


def _arrow(k: MetricKey) -> str:
    return HIGHER if k.higher_is_better else LOWER


def _families(asked: list[Any], primaries: set[tuple[str, str, str]] | None) -> list[str]:
    """Each asked cell's verdict family: PRIMARY or DESCRIPTIVE by the runs'
    primaries (``primary_family``), "" for all when neither run stores any."""
    return [
        "" if primaries is None else PRIMARY if (k.workload, k.case, k.metric) in primaries else DESCRIPTIVE
        for k, *_ in asked
    ]


def _match(ma: dict[Any, Any], mb: dict[Any, Any], base: str = "") -> tuple[list[Any], list[str], list[str], list[str]]:
    """The cells of A and B (``(workload, case, metric, env) -> (key, X)``)
    matched in B's order, the newer study's: ``(key_b, env, x_a, x_b)`` for
    each cell in both with the same unit and direction; the names of the
    cells only A has, only B has, and those whose unit or direction differ."""
    matched, mismatched = [], []
    for ident, (kb, xb) in mb.items():
        if ident not in ma:
            continue
        ka, xa = ma[ident]
        env = ident[3]
        if ka.unit != kb.unit or ka.higher_is_better != kb.higher_is_better:
            mismatched.append(f"{cell_name(kb, env, base)}: {ka.unit} {_arrow(ka)} vs {kb.unit} {_arrow(kb)}")
            continue
        matched.append((kb, env, xa, xb))
    only_a = [cell_name(k, i[3], base) for i, (k, _) in ma.items() if i not in mb]
    only_b = [cell_name(k, i[3], base) for i, (k, _) in mb.items() if i not in ma]
    return matched, only_a, only_b, mismatched


def _check_overhead_runs(a: RunData, b: RunData) -> str:
    """The baseline both runs share, or an IsobenchError naming what is
    missing (the command line's error frame escapes the names it holds)."""
    ids = f"runs {a.run_id} (A) and {b.run_id} (B)"
    if a.baseline != b.baseline:
        raise IsobenchError(
            f"--overhead: {ids} have different baselines ('{a.baseline}' in A, "
            f"'{b.baseline}' in B); an overhead compare needs the same baseline "
            "in both: drop --overhead to compare raw values"
        )
    base = b.baseline
    for name, run in (("A", a), ("B", b)):
        if not any(run.values.get((k, base)) for k in run.metrics):
            raise IsobenchError(
                f"--overhead: run {run.run_id} ({name}) has no measured value of its "
                f"baseline '{base}', so it has no overhead to compare: drop "
                "--overhead to compare raw values"
            )
    shared = [e for e in b.environments if e != base and e in a.environments]
    if not shared:
        others = {n: ", ".join(e for e in r.environments if e != base) or "none" for n, r in (("A", a), ("B", b))}
        raise IsobenchError(
            f"--overhead: {ids} share no environment other than the baseline "
            f"'{base}' (A has {others['A']}; B has {others['B']}): drop --overhead "
            "to compare raw values"
        )
    return base


def _ratios(run: RunData, settings: Settings) -> dict[tuple[str, str, str, str], tuple[MetricKey, Question]]:
    """(workload, case, metric, env) -> (key, env against the run's baseline),
    every environment other than the baseline with values on both sides."""
    out = {}
    for k in run.metrics:
        for env in run.environments:
            if env != run.baseline and (q := baseline_question(run, k, env, settings)):
                out[(k.workload, k.case, k.metric, env)] = (k, q)
    return out


def compare_overheads(
    a: RunData,
    b: RunData,
    tolerance_pct: float | None = None,
    between: dict[tuple[str, str, str, str], Spread] | None = None,
) -> RunComparison:
    """Did what an environment costs move? For every environment other than
    the shared baseline and every metric measured in both runs, B's ratio to
    the baseline against A's (``results.analysis.judge_overhead_cells``).
    Settings as ``compare_runs``; ``between`` as there, the spread of each
    environment's ratio (``results.between.spreads(..., overhead=True)``).
    Raises IsobenchError (one line naming what is missing) when the runs
    share no baseline or no other environment."""
    base = _check_overhead_runs(a, b)
    sa, sb = settings_of(a), settings_of(b)
    settings = sb if tolerance_pct is None else replace(sb, tolerance_pct=tolerance_pct)
    asked, only_a, only_b, mismatched = _match(_ratios(a, sa), _ratios(b, sb), base)
    family = _families(asked, primary_family((a, b)))
    held = [_held(between, kb, env) for kb, env, _, _ in asked]
    judged = judge_overhead_cells(
        [(qa, qb) for *_, qa, qb in asked], settings, looks=sa.looks * sb.looks, family=family, between=held
    )
    cells = [
        CellDiff(k, env, j.verdict, is_emulated(a, env) or is_emulated(b, env), base, j.within_a, j.within_b, family=f)
        for (k, env, _, _), j, f in zip(asked, judged, family)
    ]
    used = [h[2] for h in held if h is not None]
    return RunComparison(
        a,
        b,
        settings.tolerance_pct,
        cells,
        only_a,
        only_b,
        mismatched,
        _facts_diff(a, b),
        form=OVERHEAD,
        baseline=base,
        between_cells=len(used),
        between_runs=min(used, default=0),
        between_asked=between is not None,
    )
