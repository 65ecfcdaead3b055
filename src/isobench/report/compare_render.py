"""``isobench compare`` for the terminal and as Markdown (the HTML page is in
html.py), from a compare.RunComparison: one row per cell, its legend, the
facts that differ and the cells found in one run only. Renders only reads
the comparison's attributes, so the report never imports the comparison."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table as RichTable
from rich.text import Text

from isobench.results.analysis import interval_text
from isobench.report.markdown import md_escape
from isobench.results.analysis import DESCRIPTIVE
from isobench.results.table import DASH, DESCRIPTIVE_MARK, EMULATED, HIGHER, LOWER, MINUS, fmt_num
from isobench.verdicts import CHANGED

HEADER = ["workload", "metric", "env", "A mean [sd]", "B mean [sd]", "change [interval]", "BH p", "verdict"]


def fmt_p(p: float) -> str:
    if p is None or math.isnan(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def status_text(cell) -> str:
    """WORSE/better for a changed cell, else equivalent / inconclusive."""
    v = cell.verdict
    if v.verdict == CHANGED:
        return "WORSE" if v.direction == "worse" else "better"
    if v.verdict == "equivalent":
        return f"equivalent \u00b1{v.margin_pct:g}%"
    return f"inconclusive ({v.rounds_needed_text} rounds)" if v.rounds_needed else "inconclusive"


def _side(s) -> str:
    return f"{fmt_num(s.mean)} [{fmt_num(s.sd, 2)}] n={s.n}"


def rows(result) -> list[list[str]]:
    out = []
    for cell in result.cells:
        v = cell.verdict
        env = cell.env + (f" {EMULATED}" if cell.emulated else "")
        out.append([cell.key.workload, metric_label(cell), env,
                    _side(v.effect.baseline), _side(v.effect.candidate), interval_text(v),
                    fmt_p(v.p_adjusted), status_text(cell)])
    return out


def metric_label(cell) -> str:
    """"case: metric (unit) ↑", with the descriptive mark when the compare
    is judged in two families and the cell is not a primary."""
    k = cell.key
    metric = k.metric if k.case in ("", "default") else f"{k.case}: {k.metric}"
    mark = f" {DESCRIPTIVE_MARK}" if cell.family == DESCRIPTIVE else ""
    return f"{metric} ({k.unit}) {HIGHER if k.higher_is_better else LOWER}{mark}"


def regression_line(cell) -> str:
    return f"{cell.name}: {cell.verdict.text}"


def legend(result) -> list[str]:
    lines = [f"A = {result.run_a.run_id} ({result.run_a.study_name}), B = {result.run_b.run_id} "
             f"({result.run_b.study_name}); A is the reference of every cell.",
             _change_line(result),
             f"WORSE/better: changed (BH-significant, beyond the noise floor); equivalent: the interval "
             f"lies within \u00b1{result.tolerance_pct:g}% (or the metric's noise floor); inconclusive: "
             f"neither, with the rounds per side that would tell; {HIGHER} higher is better, {LOWER} lower "
             f"is better ({MINUS}% on {HIGHER} is worse).",
             ]
    if result.split:
        lines.append(f"{DESCRIPTIVE_MARK} descriptive: not one of its workload case's primary metrics (as B stores "
                     "them, else A); judged in a Benjamini-Hochberg family of its own, never failing "
                     "--fail-on-regression.")
    if any(c.emulated for c in result.cells):
        lines.append(f"{EMULATED} emulated (TCG), not comparable to KVM.")
    return lines


def _change_line(result) -> str:
    tail = "test: Welch's t on log values; BH p: Benjamini-Hochberg adjusted p."
    if not result.split:
        return (f"change: ratio of B's geometric mean to A's, with its interval corrected for the "
                f"{len(result.cells)} cells compared (it excludes 0% exactly for the BH-significant cells); {tail}")
    n = sum(1 for c in result.cells if c.family != DESCRIPTIVE)
    return (f"change: ratio of B's geometric mean to A's, with its interval corrected within its family, the "
            f"{n} primary cells or the {len(result.cells) - n} descriptive ones marked {DESCRIPTIVE_MARK} (it "
            f"excludes 0% exactly for the BH-significant cells of its family); {tail}")


def render_markdown(result, regressions: list | None = None) -> str:
    out = [f"# Compare {md_escape(result.run_a.run_id)} (A) \u2192 {md_escape(result.run_b.run_id)} (B)", "",
           f"**{md_escape(result.summary_line())}**", ""]
    if regressions:
        out += ["## Regressions", ""] + [f"- {md_escape(regression_line(c))}" for c in regressions] + [""]
    out += ["| " + " | ".join(HEADER) + " |", "|" + "|".join([":---"] * 3 + ["---:"] * 4 + [":---"]) + "|"]
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
    for col in t.columns[3:7]:
        col.justify = "right"
    for cell, row in zip(result.cells, rows(result)):
        style = ""
        if cell.flagged:
            style = "bold red" if cell.verdict.direction == "worse" else "bold green"
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
