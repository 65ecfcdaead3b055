"""``isobench compare`` for the terminal and as Markdown (the HTML page is in
html.py) and as JUnit test cases, from a compare.RunComparison: one row per
cell, its legend, the facts that differ and the cells found in one run only,
in either form (raw values, or ``--overhead``: each environment's ratio to
the baseline). Renders only reads the comparison's attributes, so the
report never imports the comparison."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table as RichTable

from isobench.analysis.verdicts import CHANGED, INCONCLUSIVE
from isobench.core.sink import rich_text as plain
from isobench.report.fit import fitted
from isobench.report.junit import Case
from isobench.report.markdown import md_escape
from isobench.results.analysis import DESCRIPTIVE, interval_text
from isobench.results.numbers import fmt_pct
from isobench.results.table import DASH, DESCRIPTIVE_MARK, EMULATED, EMULATED_NOTE, HIGHER, LOWER, MINUS, fmt_num

HEADER = ["workload", "metric", "env", "A centre [sd]", "B centre [sd]", "change [interval]", "BH p", "verdict"]


def header(result) -> list[str]:
    if not result.is_overhead:
        return HEADER
    return [
        "workload",
        "metric",
        "env",
        f"A: vs {result.baseline}",
        f"B: vs {result.baseline}",
        "change of the ratio [interval]",
        "BH p",
        "verdict",
    ]


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


def _side(s, centre: float) -> str:
    """A run's cell: its geometric mean (the change is B's over A's), sd, n."""
    return f"{fmt_num(centre if math.isfinite(centre) else s.mean)} [{fmt_num(s.sd, 2)}] n={s.n}"


def _ratio_side(e) -> str:
    """One run's environment against its baseline: the change of the value
    (as Table I prints it, uncorrected here), its rounds and test."""
    n = e.n_pairs or min(e.n_c, e.n_b)
    return f"{fmt_pct(e.pct)} n={n} {e.test}"


def sides(result, cell) -> tuple[str, str]:
    """The A and B columns: the raw cells, or each run's ratio to the baseline."""
    if result.is_overhead:
        return _ratio_side(cell.within_a), _ratio_side(cell.within_b)
    e = cell.verdict.effect
    return _side(e.baseline, e.centre_b), _side(e.candidate, e.centre_c)


def rows(result) -> list[list[str]]:
    out = []
    for cell in result.cells:
        v = cell.verdict
        env = cell.env + (f" {EMULATED}" if cell.emulated else "")
        out.append(
            [
                cell.key.workload,
                metric_label(cell),
                env,
                *sides(result, cell),
                interval_text(v),
                fmt_p(v.p_adjusted),
                status_text(cell),
            ]
        )
    return out


def metric_label(cell) -> str:
    """ "case: metric (unit) ↑", with the descriptive mark when the compare
    is judged in two families and the cell is not a primary."""
    k = cell.key
    metric = k.metric if k.case in ("", "default") else f"{k.case}: {k.metric}"
    mark = f" {DESCRIPTIVE_MARK}" if cell.family == DESCRIPTIVE else ""
    return f"{metric} ({k.unit}) {HIGHER if k.higher_is_better else LOWER}{mark}"


def regression_line(cell) -> str:
    return f"{cell.name}: {cell.verdict.text}"


def blind_line(cell, run) -> str:
    """A cell the gate could not see through: its interval's half-width and
    the rounds per run and their time (at RUN's pace) that would resolve it:
    no --budget, which stops when a run's own cells resolve, not a compare's."""
    from isobench.results.gate import why_blind

    return f"{cell.name}: {why_blind(cell.verdict, run, budget=False)}"


def legend(result) -> list[str]:
    ids = (
        f"A = {result.run_a.run_id} ({result.run_a.study_name}), B = {result.run_b.run_id} ({result.run_b.study_name})"
    )
    if result.is_overhead:
        base = result.baseline
        lines = [
            f"{ids}; in each run every environment is compared with {base} of the same run.",
            f"A/B: vs {base}: the environment's change against {base} in that run (ratio of geometric "
            f"means, paired by round as in Table I; not corrected here), its rounds and test.",
            f"change of the ratio: B's ratio to {base} over A's, with its interval {_corrected(result)}; "
            f"test: Welch-type t on the difference of the two runs' mean log ratios; BH p: "
            f"Benjamini-Hochberg adjusted p. A host faster or slower in B moves {base} and the "
            f"environment alike and cancels.",
            f"WORSE/better: the environment's cost against {base} changed (BH-significant, beyond the "
            f"noise floor); equivalent: the interval lies within \u00b1{result.tolerance_pct:g}% (or the "
            f"metric's noise floor); inconclusive: neither, with the rounds per run that would tell; "
            f"{HIGHER} higher is better, {LOWER} lower is better ({MINUS}% on {HIGHER} is worse).",
        ]
    else:
        lines = [
            f"{ids}; A is the reference of every cell.",
            _change_line(result),
            f"WORSE/better: changed (BH-significant, beyond the noise floor); equivalent: the interval "
            f"lies within \u00b1{result.tolerance_pct:g}% (or the metric's noise floor); inconclusive: "
            f"neither, with the rounds that would tell; {HIGHER} higher is better, {LOWER} lower "
            f"is better ({MINUS}% on {HIGHER} is worse).",
        ]
    if result.split:
        lines.append(
            f"{DESCRIPTIVE_MARK} descriptive: not one of its workload case's primary metrics (as B stores "
            "them, else A); judged in a Benjamini-Hochberg family of its own, never failing "
            "--fail-on-change."
        )
    if any(c.emulated for c in result.cells):
        lines.append(f"{EMULATED} {EMULATED_NOTE}.")
    return lines


def _corrected(result) -> str:
    """How a compare's intervals are corrected: over all its cells, or within
    the primary and the descriptive family."""
    if not result.split:
        n = len(result.cells)
        return (
            f"corrected for the {n} {'cell' if n == 1 else 'cells'} compared (it excludes 0% exactly for the "
            f"BH-significant cells)"
        )
    n = sum(1 for c in result.cells if c.family != DESCRIPTIVE)
    return (
        f"corrected within its family, the {n} primary cells or the {len(result.cells) - n} descriptive "
        f"ones marked {DESCRIPTIVE_MARK} (it excludes 0% exactly for the BH-significant cells of its family)"
    )


def _change_line(result) -> str:
    return (
        f"change: ratio of B's geometric mean to A's, with its interval {_corrected(result)}; "
        "test: Welch's t on log values; BH p: Benjamini-Hochberg adjusted p."
    )


def render_markdown(result, regressions: list | None = None) -> str:
    out = (
        [
            f"# Compare {md_escape(result.run_a.run_id)} (A) \u2192 {md_escape(result.run_b.run_id)} (B)",
            "",
            *([f"> **{md_escape(result.study_line)}**", ""] if result.study_line else []),
            md_escape(result.form_line),
            "",
        ]
        + ([md_escape(result.between_line), ""] if result.between_line else [])
        + [f"**{md_escape(result.summary_line())}**", ""]
    )
    if regressions:
        out += ["## Regressions", ""] + [f"- {md_escape(regression_line(c))}" for c in regressions] + [""]
    out += [
        "| " + " | ".join(md_escape(h) for h in header(result)) + " |",
        "|" + "|".join([":---"] * 3 + ["---:"] * 4 + [":---"]) + "|",
    ]
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
    for title, items in (
        ("Only in A", result.only_in_a),
        ("Only in B", result.only_in_b),
        ("Not comparable (unit or direction changed)", result.mismatched),
    ):
        if items:
            out += [f"## {title}", ""] + [f"- {md_escape(i)}" for i in items] + [""]
    return out


def render_terminal(result, console, regressions: list | None = None) -> None:
    if result.study_line:
        console.print(plain(result.study_line, style="bold red"))
    console.print(plain(result.form_line, style="bold"))
    if result.between_line:
        console.print(plain(result.between_line))
    t = RichTable(box=box.SIMPLE_HEAVY, title=plain(f"{result.run_a.run_id} (A) \u2192 {result.run_b.run_id} (B)"))
    for i, h in enumerate(header(result)):  # plain: an environment's name is shown, never read as markup
        t.add_column(plain(h), justify="right" if 3 <= i < 7 else "left")
    for cell, row in zip(result.cells, rows(result)):
        style = ""
        if cell.flagged:
            style = "bold red" if cell.verdict.direction == "worse" else "bold green"
        t.add_row(*[plain(x) for x in row[:-1]], plain(row[-1], style=style))
    console.print(fitted(console, t))
    for line in legend(result):
        console.print(plain(line, style="dim"))
    if result.facts_diff:
        console.print(plain("What differs between the runs:", style="bold"))
        for k, a, b in result.facts_diff:
            console.print(plain(f"  {k}: {a[:80]} \u2192 {b[:80]}"))
    for title, items in (
        ("Only in A", result.only_in_a),
        ("Only in B", result.only_in_b),
        ("Not comparable", result.mismatched),
    ):
        if items:
            console.print(plain(f"{title}: " + "; ".join(items), style="yellow"))
    console.print(plain(result.summary_line(), style="bold"))


def junit_cases(
    result,
    regressions: list | None = None,
    fail_pct: float | None = None,
    blind: list | None = None,
    resolution_pct: float | None = None,
) -> list[Case]:
    """One JUnit case per compared cell: failed where the gate fails, and
    where --require-resolution finds the cell blind; skipped when
    inconclusive otherwise (the runs cannot tell), passed otherwise."""
    failing = {id(c) for c in regressions or []}
    unseen = {id(c) for c in blind or []}
    classname = f"isobench.compare.{'overhead' if result.is_overhead else 'raw'}.{result.run_b.study_name}"
    cases = []
    for cell in result.cells:
        v = cell.verdict
        failure = skipped = None
        if id(cell) in failing:
            what = f"cost against {result.baseline} worse than in" if result.is_overhead else "worse than"
            failure = f"{what} {result.run_a.run_id} by more than {fail_pct:g}%: {v.text}"
        elif id(cell) in unseen:
            failure = f"blind: could not have seen a change of {resolution_pct:g}%: {v.text}"
        elif v.verdict == INCONCLUSIVE:
            skipped = v.text
        cases.append(Case(cell.name, classname, failure, skipped, regression_line(cell)))
    return cases
