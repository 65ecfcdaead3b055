"""The answer, first: per environment against the baseline, which primary
cells changed (size and interval), which are equivalent, which cannot be told
yet and how many rounds would tell them; one figure of every primary cell.
The verdicts are Table I's own (same tests, same correction): this section
only chooses and groups them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from isobench.analysis.settle import SETTLE_TEXT
from isobench.analysis.suggest import BudgetRun, Suggestion
from isobench.analysis.verdicts import CHANGED, EQUIVALENT, ROUNDS_NEEDED_CAP, Verdict
from isobench.report.blocks import BAD, GOOD, Block, Figure, Grid, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.analysis import interval_text
from isobench.results.model import RunData
from isobench.results.numbers import fmt_duration, fmt_pct
from isobench.results.primary import primary_keys, stores_primaries
from isobench.results.programs import run_differences
from isobench.results.schedule import schedule_summary
from isobench.results.stopping import budget_summary, resume_line
from isobench.results.suggestion import cell_suggestion, suggestion_text
from isobench.results.table import DESCRIPTIVE_MARK, OK, Cell, Row, Table, tone
from isobench.results.why import why_inconclusive

SHOWN = 4  # inconclusive cells listed one by one per environment
ALT = "(a figure of every primary cell's ratio and interval is in the HTML report)"


@dataclass
class EnvAnswer:
    env: str
    changed: list[tuple[Row, Cell]] = field(default_factory=list)
    equivalent: list[tuple[Row, Cell]] = field(default_factory=list)
    inconclusive: list[tuple[Row, Cell]] = field(default_factory=list)
    untold: list[tuple[Row, Cell]] = field(default_factory=list)  # failed, missing, untested


def answers(table: Table, keys) -> list[EnvAnswer]:
    """Table I's verdicts on the primary rows, grouped per compared environment. Pure."""
    wanted = set(keys)
    rows = [r for r in table.rows if r.key in wanted]
    out = []
    for i, col in enumerate(table.columns):
        if col.is_baseline:
            continue
        a = EnvAnswer(col.env)
        for row in rows:
            cell = row.cells[i]
            v = cell.verdict
            if cell.status != OK or v is None or not v.effect.tested:
                a.untold.append((row, cell))  # not tested: never counted as inconclusive (Verdict.open)
            else:
                {CHANGED: a.changed, EQUIVALENT: a.equivalent}.get(v.verdict, a.inconclusive).append((row, cell))
        out.append(a)
    return out


def _judged(cell: Cell) -> Verdict:
    """The verdict of a cell ``answers`` sorted by its verdict: never None there."""
    assert cell.verdict is not None
    return cell.verdict


def _name(row: Row) -> str:
    return f"{row.key.workload} {row.label}"


def settle_line(suggestions: list[Suggestion], n: int | None) -> str:
    """How many rounds would settle how many inconclusive cells 4 times in 5,
    how long they take at the run's own pace, and the --budget that settles
    as many (``results.suggestion``). Pure."""
    if not suggestions:
        return ""
    finite = sorted((s for s in suggestions if s.rounds is not None and not s.beyond_cap), key=_rounds_of)
    beyond = len(suggestions) - len(finite)
    parts: list[str] = []
    budgets: list[BudgetRun] = []
    for q in (0.5, 0.9, 1.0):
        if not finite:
            break
        top = finite[min(len(finite) - 1, math.ceil(q * len(finite)) - 1)]
        settled = [s for s in finite if _rounds_of(s) <= _rounds_of(top)]
        said = [f"about {fmt_duration(top.wall_s)} here"] if top.wall_s is not None else []
        if said and (last := _budget_for(settled)) is not None:
            cap = f" with max_repetitions = {last.max_repetitions}" if last.max_repetitions else ""
            said.append(f"or --budget {last.budget}{cap}")
            budgets.append(last)
        when = f" ({', '.join(said)})" if said else ""
        text = f"{top.rounds}{when} settle {len(settled)} of {len(suggestions)}"
        if not parts or text.split(" ", 1)[0] != parts[-1].split(" ", 1)[0]:
            parts.append(text)
    if beyond:
        parts.append(f"{beyond} need{'s' if beyond == 1 else ''} more than {ROUNDS_NEEDED_CAP}")
    ran = f" (this run has n = {n})" if n else ""
    line = f"Rounds that would settle them {SETTLE_TEXT} at this run's noise{ran}: " + "; ".join(parts) + "."
    if budgets:
        k = "/".join(str(x) for x in sorted({b.looks for b in budgets}))
        line += (
            f" A --budget run tests at alpha/{k} over its {k} planned looks: it needs more rounds there, "
            "and its budget pays for the first look that reaches them."
        )
    return line


def _rounds_of(s: Suggestion) -> int:
    return s.rounds or 0


def _budget_for(settled: list[Suggestion]) -> BudgetRun | None:
    """The budget that settles all of them: the one paying for the latest of
    their looks; None when one of them has no budget to name."""
    runs = [s.budget for s in settled]
    named = [b for b in runs if b is not None and b.budget is not None]
    return max(named, key=lambda b: b.look) if named and len(named) == len(runs) else None


class AnswerSection(Section):
    slug = "answer"
    title = "The answer"
    order = 0
    lead = True

    def heading(self, ctx: ReportContext) -> str:
        return f"The answer: what each environment costs against {ctx.run.baseline}"

    def blocks(self, ctx: ReportContext) -> list[Block]:
        table = ctx.table
        keys = primary_keys(ctx.run)
        found = answers(table, keys)
        if not found or not keys:
            return []
        wanted = set(keys)
        primary_rows = [r for r in table.rows if r.key in wanted]
        m = max((c.verdict.m for r in primary_rows for c in r.cells if c.verdict is not None), default=0)
        if stores_primaries(ctx.run):  # judged in a family of their own (Table I's legend)
            out: list[Block] = [
                Para(
                    f"{len(keys)} primary metric(s) per environment (each workload case's own, or the "
                    f"study's primary list), with Table I's verdicts ({m} primary cells corrected together); "
                    f"Table I has every metric, the descriptive ones marked {DESCRIPTIVE_MARK}."
                )
            ]
        else:
            out = [
                Para(
                    f"{len(keys)} primary metric(s) per environment (each workload case's throughput, else "
                    f"its latency, else its duration), with Table I's verdicts ({m} cells corrected together); "
                    "Table I has every metric."
                )
            ]
        told = sum(len(a.changed) + len(a.equivalent) for a in found)
        total = sum(len(a.changed) + len(a.equivalent) + len(a.inconclusive) + len(a.untold) for a in found)
        out.append(
            Para(
                f"Resolved: {told} of {total} primary cells ({told / max(total, 1):.0%}) are changed or "
                "equivalent." + (f" {spent}" if (spent := budget_summary(ctx.run)) else "")
            )
        )
        if resumed := resume_line(ctx.run):
            out.append(Para(resumed))
        if schedule := schedule_summary(ctx.run):
            out.append(Para(schedule))
        grid = []
        for a in found:
            worse = sum(1 for _, c in a.changed if tone(c) == "worse")
            changed = f"{len(a.changed)}" + (f" ({worse} worse, {len(a.changed) - worse} better)" if a.changed else "")
            grid.append((a.env, changed, str(len(a.equivalent)), str(len(a.inconclusive)), str(len(a.untold))))
        out.append(
            Grid(("environment", "changed", "equivalent", "inconclusive", "not tested"), tuple(grid), numeric_from=1)
        )
        other = _other_programs(ctx.run)
        changed_items = [
            Item(
                f"{_name(r)}: {interval_text(_judged(c))}, {tone(c)}" + other.get((r.key.workload, a.env), ""),
                strong=f"{a.env}:",
                tone=BAD if tone(c) == "worse" else GOOD,
            )
            for a in found
            for r, c in a.changed
        ]
        if changed_items:
            out.append(Items(tuple(changed_items), heading="Changed"))
        equivalent = [
            Item(
                "; ".join(
                    f"{_name(r)} {fmt_pct(_judged(c).pct)}{other.get((r.key.workload, a.env), '')}"
                    for r, c in a.equivalent
                ),
                strong=f"{a.env}:",
            )
            for a in found
            if a.equivalent
        ]
        if equivalent:
            margins = sorted({f"±{_judged(c).margin_pct:g}%" for a in found for _, c in a.equivalent})
            out.append(Items(tuple(equivalent), heading=f"Equivalent (the interval lies within {', '.join(margins)})"))
        open_cells = [(a.env, r, c) for a in found for r, c in a.inconclusive]
        if open_cells:
            out.append(
                Items(
                    tuple(item for a in found for item in _open_items(a, ctx.run)),
                    heading="Inconclusive: these rounds cannot tell (cheapest to settle first)",
                )
            )
            # an environment's own rounds: a duet's baseline column pools the samples of every partner
            n = max((col.n for col in table.columns if not col.is_baseline and col.n), default=None)
            out.append(Para(settle_line([cell_suggestion(_judged(c), ctx.run) for _, _, c in open_cells], n)))
        untold = [
            Item(
                f"{_name(r)}: {c.status if c.status != OK else 'not tested'}"
                + (f" ({c.verdict.reason})" if c.verdict is not None and c.verdict.reason else ""),
                strong=f"{a.env}:",
            )
            for a in found
            for r, c in a.untold
        ]
        if untold:
            out.append(Items(tuple(untold), heading="Not tested"))
        if (fig := _figure(ctx, keys)) is not None:
            out.append(fig)
        return out


def _other_programs(run: RunData) -> dict[tuple[str, str], str]:
    """(workload, environment) -> the caveat its figure carries where the
    study let it run another program than the baseline (same_program = false)."""
    return {
        (workload, d.env): f" (another program than {run.baseline}'s: {d.what}, same_program = false)"
        for workload, found in run_differences(run).items()
        for d in found
    }


def _open_items(a: EnvAnswer, run: RunData | None = None) -> list[Item]:
    """The SHOWN cells cheapest to settle, one line each, with what would
    settle them at RUN's pace; the rest in one line (the Inconclusive
    section lists every one)."""
    cells = sorted(a.inconclusive, key=lambda rc: _cost(_judged(rc[1]).rounds_needed))
    items = [
        Item(
            f"{_name(r)}: {interval_text(_judged(c))}; "
            + (f"{_judged(c).callable_text}; " if _judged(c).callable_text else "")
            + f"{suggestion_text(cell_suggestion(_judged(c), run))} would settle it",
            # its cause and remedy under it, as the Inconclusive section has them
            sub=(why,) if run is not None and (why := why_inconclusive(run, r.key, c.env, _judged(c))) else (),
            strong=f"{a.env}:",
        )
        for r, c in cells[:SHOWN]
    ]
    if rest := cells[SHOWN:]:
        low, high = _judged(rest[0][1]).rounds_needed, _judged(rest[-1][1]).rounds_needed
        span = _rounds(low) if _rounds(low) == _rounds(high) else f"{_rounds(low)} to {_rounds(high)}"
        items.append(Item(f"{len(rest)} more need {span} rounds (listed under Inconclusive)", strong=f"{a.env}:"))
    return items


def _cost(k: int | None) -> float:
    return math.inf if k is None else k


def _rounds(k: int | None) -> str:
    return "?" if k is None else (f">{ROUNDS_NEEDED_CAP}" if k > ROUNDS_NEEDED_CAP else str(k))


def _figure(ctx: ReportContext, keys) -> Figure | None:
    if not ctx.wants_figures:
        return None
    # imported only here: report.figures loads matplotlib, which only HTML draws with
    from isobench.report.figures.normalised import overview_figure

    fig = overview_figure(ctx.table, keys)
    if fig is None:
        return None
    return Figure(
        "overview",
        "Every primary cell against the baseline",
        "bars: performance relative to the baseline on a log axis, >1 better (latency-like metrics "
        "inverted); whiskers: Table I's corrected interval",
        fig,
        alt=ALT,
    )
