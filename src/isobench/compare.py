"""Two runs side by side: did anything change, significantly, beyond a tolerance?

Every cell (workload, case, metric, environment) present in both runs is
compared with ``stats.compare``, run A as the baseline: ratio B/A with its
95% CI and Welch's t-test. A cell is *flagged* when it changed by more than
the tolerance AND significantly; a *regression* (for CI gating) is a
significant change for the worse by more than a given percent, "worse"
following the metric's direction. The A/A check: comparing two runs of the
same study, about 5% of cells differ significantly by chance at p < 0.05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from isobench.report.model import MetricKey, RunData
from isobench.report.table import DASH, MINUS, fmt_num, fmt_pct, is_emulated
from isobench.stats import ALPHA, VERDICT_BETTER, VERDICT_WORSE, Comparison, compare

DEFAULT_TOLERANCE_PCT = 2.0

__all__ = ["CellDiff", "RunComparison", "compare_runs", "fmt_num", "fmt_pct", "fmt_p", "fmt_ratio"]


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
    from isobench.report.table import fmt_fact
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
    return "\u2191" if k.higher_is_better else "\u2193"


def _finite(x: float) -> bool:
    return x is not None and math.isfinite(x)


# -- formatting shared by the renderers -------------------------------------------------

def fmt_p(p: float) -> str:
    if p is None or math.isnan(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_phrase(p: float) -> str:
    """``p < 0.001`` or ``p = 0.013``."""
    text = fmt_p(p)
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def fmt_ratio(c: Comparison) -> str:
    """``0.981 [0.962, 1.001]``"""
    if not _finite(c.ratio):
        return DASH
    if _finite(c.ratio_ci95_low):
        return f"{c.ratio:.3f} [{c.ratio_ci95_low:.3f}, {c.ratio_ci95_high:.3f}]"
    return f"{c.ratio:.3f}"


def status_text(cell: CellDiff) -> str:
    c = cell.comparison
    if not cell.flagged:
        return "changed (within tolerance)" if c.significant else c.verdict
    return {VERDICT_WORSE: "WORSE", VERDICT_BETTER: "better"}.get(c.verdict, c.verdict)


def _rows(result: RunComparison) -> list[list[str]]:
    out = []
    for cell in result.cells:
        c = cell.comparison
        metric = cell.key.metric if cell.key.case in ("", "default") else f"{cell.key.case}: {cell.key.metric}"
        arrow = "\u2191" if cell.key.higher_is_better else "\u2193"
        env = cell.env + (" \u2020" if cell.emulated else "")
        out.append([cell.key.workload, f"{metric} ({cell.key.unit}) {arrow}", env,
                    f"{fmt_num(c.baseline.mean)} [{fmt_num(c.baseline.sd, 2)}] n={c.baseline.n}",
                    f"{fmt_num(c.candidate.mean)} [{fmt_num(c.candidate.sd, 2)}] n={c.candidate.n}",
                    fmt_ratio(c), fmt_pct(c.pct), fmt_p(c.p_value), status_text(cell)])
    return out


HEADER = ["workload", "metric", "env", "A mean [sd]", "B mean [sd]", "B/A [95% CI]", "change", "p",
          "verdict"]


def legend(result: RunComparison) -> list[str]:
    lines = [f"A = {result.run_a.run_id} ({result.run_a.study_name}), B = {result.run_b.run_id} "
             f"({result.run_b.study_name}); A is the baseline of every cell.",
             f"change: B's mean vs A's; p: Welch's t-test, two-sided; flagged (WORSE/better): "
             f"|change| > {result.tolerance_pct:g}% and p < {result.alpha:g}; "
             f"\u2191 higher is better, \u2193 lower is better ({MINUS}% on \u2191 is worse).",
             ]
    if any(c.emulated for c in result.cells):
        lines.append("\u2020 emulated (TCG), not comparable to KVM.")
    return lines


def render_markdown(result: RunComparison, regressions: list[CellDiff] | None = None) -> str:
    from isobench.report.markdown import md_escape
    out = [f"# Compare {md_escape(result.run_a.run_id)} (A) \u2192 {md_escape(result.run_b.run_id)} (B)", "",
           f"**{md_escape(result.summary_line())}**", ""]
    if regressions:
        out += ["## Regressions", ""] + [f"- {md_escape(c.name)}: {fmt_pct(c.comparison.pct)} "
                                          f"({p_phrase(c.comparison.p_value)})" for c in regressions] + [""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "|".join([":---"] * 3 + ["---:"] * 5 + [":---"]) + "|"]
    for row in _rows(result):
        out.append("| " + " | ".join(md_escape(x) for x in row) + " |")
    out += [""] + [f"- {md_escape(line)}" for line in legend(result)] + [""]
    out += _extras_md(result, md_escape)
    return "\n".join(out)


def _extras_md(result: RunComparison, esc) -> list[str]:
    out = []
    if result.facts_diff:
        out += ["## What differs between the runs", "", "| fact | A | B |", "|:---|:---|:---|"]
        out += [f"| {esc(k)} | {esc(a)} | {esc(b)} |" for k, a, b in result.facts_diff] + [""]
    for title, items in (("Only in A", result.only_in_a), ("Only in B", result.only_in_b),
                         ("Not comparable (unit or direction changed)", result.mismatched)):
        if items:
            out += [f"## {title}", ""] + [f"- {esc(i)}" for i in items] + [""]
    return out


def render_terminal(result: RunComparison, console, regressions: list[CellDiff] | None = None) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text
    t = Table(*HEADER, box=box.SIMPLE_HEAVY,
              title=f"{result.run_a.run_id} (A) \u2192 {result.run_b.run_id} (B)")
    for col in t.columns[3:8]:
        col.justify = "right"
    for cell, row in zip(result.cells, _rows(result)):
        style = ""
        if cell.flagged:
            style = "bold red" if cell.comparison.verdict == VERDICT_WORSE else "bold green"
        t.add_row(*[Text(x) for x in row[:-1]], Text(row[-1], style=style))
    console.print(t)
    for line in legend(result):
        console.print(Text(line, style="dim"))
    if result.facts_diff:
        console.print(Text("What differs between the runs:", style="bold"))
        for k, a, b in result.facts_diff:
            console.print(Text(f"  {k}: {a[:80]} \u2192 {b[:80]}"))
    for title, items in (("Only in A", result.only_in_a), ("Only in B", result.only_in_b),
                         ("Not comparable", result.mismatched)):
        if items:
            console.print(Text(f"{title}: " + "; ".join(items), style="yellow"))
    console.print(Text(result.summary_line(), style="bold"))
