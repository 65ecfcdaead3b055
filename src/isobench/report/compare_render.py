"""``isobench compare`` for the terminal and as Markdown (the HTML page is in
html.py), from a compare.RunComparison: one row per cell, its legend, the
facts that differ and the cells found in one run only. Renders only reads
the comparison's attributes, so the report never imports the comparison."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from isobench.report.markdown import md_escape
from isobench.report.table import DASH, EMULATED, HIGHER, LOWER, MINUS, fmt_num, fmt_pct
from isobench.stats import VERDICT_BETTER, VERDICT_WORSE, Comparison

HEADER = ["workload", "metric", "env", "A mean [sd]", "B mean [sd]", "B/A [95% CI]", "change", "p",
          "verdict"]


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


def _finite(x: float) -> bool:
    return x is not None and math.isfinite(x)


def status_text(cell) -> str:
    """A cell's verdict: WORSE/better when flagged, else what the test said."""
    c = cell.comparison
    if not cell.flagged:
        return "changed (within tolerance)" if c.significant else c.verdict
    return {VERDICT_WORSE: "WORSE", VERDICT_BETTER: "better"}.get(c.verdict, c.verdict)


def rows(result) -> list[list[str]]:
    out = []
    for cell in result.cells:
        c = cell.comparison
        metric = cell.key.metric if cell.key.case in ("", "default") else f"{cell.key.case}: {cell.key.metric}"
        arrow = HIGHER if cell.key.higher_is_better else LOWER
        env = cell.env + (f" {EMULATED}" if cell.emulated else "")
        out.append([cell.key.workload, f"{metric} ({cell.key.unit}) {arrow}", env,
                    f"{fmt_num(c.baseline.mean)} [{fmt_num(c.baseline.sd, 2)}] n={c.baseline.n}",
                    f"{fmt_num(c.candidate.mean)} [{fmt_num(c.candidate.sd, 2)}] n={c.candidate.n}",
                    fmt_ratio(c), fmt_pct(c.pct), fmt_p(c.p_value), status_text(cell)])
    return out


def legend(result) -> list[str]:
    lines = [f"A = {result.run_a.run_id} ({result.run_a.study_name}), B = {result.run_b.run_id} "
             f"({result.run_b.study_name}); A is the baseline of every cell.",
             f"change: B's mean vs A's; p: Welch's t-test, two-sided; flagged (WORSE/better): "
             f"|change| > {result.tolerance_pct:g}% and p < {result.alpha:g}; "
             f"{HIGHER} higher is better, {LOWER} lower is better ({MINUS}% on {HIGHER} is worse).",
             ]
    if any(c.emulated for c in result.cells):
        lines.append(f"{EMULATED} emulated (TCG), not comparable to KVM.")
    return lines


def render_markdown(result, regressions: list | None = None) -> str:
    out = [f"# Compare {md_escape(result.run_a.run_id)} (A) \u2192 {md_escape(result.run_b.run_id)} (B)", "",
           f"**{md_escape(result.summary_line())}**", ""]
    if regressions:
        out += ["## Regressions", ""] + [f"- {md_escape(c.name)}: {fmt_pct(c.comparison.pct)} "
                                          f"({p_phrase(c.comparison.p_value)})" for c in regressions] + [""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "|".join([":---"] * 3 + ["---:"] * 5 + [":---"]) + "|"]
    for row in rows(result):
        out.append("| " + " | ".join(md_escape(x) for x in row) + " |")
    out += [""] + [f"- {md_escape(line)}" for line in legend(result)] + [""]
    out += _extras_md(result)
    return "\n".join(out)


def _extras_md(result) -> list[str]:
    out = []
    if result.facts_diff:
        out += ["## What differs between the runs", "", "| fact | A | B |", "|:---|:---|:---|"]
        out += [f"| {md_escape(k)} | {md_escape(a)} | {md_escape(b)} |" for k, a, b in result.facts_diff] + [""]
    for title, items in (("Only in A", result.only_in_a), ("Only in B", result.only_in_b),
                         ("Not comparable (unit or direction changed)", result.mismatched)):
        if items:
            out += [f"## {title}", ""] + [f"- {md_escape(i)}" for i in items] + [""]
    return out


def render_terminal(result, console, regressions: list | None = None) -> None:
    t = RichTable(*HEADER, box=box.SIMPLE_HEAVY,
                  title=f"{result.run_a.run_id} (A) \u2192 {result.run_b.run_id} (B)")
    for col in t.columns[3:8]:
        col.justify = "right"
    for cell, row in zip(result.cells, rows(result)):
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
