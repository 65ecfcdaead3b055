"""The answer, first: per environment against the baseline, which primary
cells changed (size and interval), which are equivalent, which cannot be told
yet and how many rounds would tell them; one figure of every primary cell.
The verdicts are Table I's own (same tests, same correction): this section
only chooses and groups them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from isobench.analysis.verdicts import CHANGED, EQUIVALENT, INCONCLUSIVE, ROUNDS_NEEDED_CAP, Verdict
from isobench.report.blocks import BAD, GOOD, Block, Figure, Grid, Item, Items, Para
from isobench.report.section import ReportContext, Section
from isobench.results.analysis import interval_text
from isobench.results.numbers import fmt_pct, rounds_text, rounds_time
from isobench.results.primary import primary_keys, stores_primaries
from isobench.results.schedule import schedule_summary
from isobench.results.stopping import budget_summary
from isobench.results.table import DESCRIPTIVE_MARK, OK, Cell, Row, Table, tone

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
                a.untold.append((row, cell))
            else:
                {CHANGED: a.changed, EQUIVALENT: a.equivalent, INCONCLUSIVE: a.inconclusive}[v.verdict].append(
                    (row, cell)
                )
        out.append(a)
    return out


def _judged(cell: Cell) -> Verdict:
    """The verdict of a cell ``answers`` sorted by its verdict: never None there."""
    assert cell.verdict is not None
    return cell.verdict


def _name(row: Row) -> str:
    return f"{row.key.workload} {row.label}"


def settle_line(
    needed: list[int | None], n: int | None, seconds_per_round: float | None = None, warmup: int = 0
) -> str:
    """How many rounds would settle how many inconclusive cells, and how long
    they take at the run's own pace. Pure."""
    finite = sorted(k for k in needed if k is not None and k <= ROUNDS_NEEDED_CAP)
    beyond = len(needed) - len(finite)
    if not needed:
        return ""
    parts: list[str] = []
    for q in (0.5, 0.9, 1.0):
        if not finite:
            break
        k = finite[min(len(finite) - 1, math.ceil(q * len(finite)) - 1)]
        settled = sum(1 for x in finite if x <= k)
        when = rounds_time(k, seconds_per_round, warmup)
        when = f" ({when})" if when else ""
        text = f"{k}{when} settle {settled} of {len(needed)}"
        if not parts or text.split(" ", 1)[0] != parts[-1].split(" ", 1)[0]:
            parts.append(text)
    if beyond:
        parts.append(f"{beyond} need{'s' if beyond == 1 else ''} more than {ROUNDS_NEEDED_CAP}")
    ran = f" (this run has n = {n})" if n else ""
    return f"Rounds that would settle them at this run's noise{ran}: " + "; ".join(parts) + "."


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
        changed_items = [
            Item(
                f"{_name(r)}: {interval_text(_judged(c))}, {tone(c)}",
                strong=f"{a.env}:",
                tone=BAD if tone(c) == "worse" else GOOD,
            )
            for a in found
            for r, c in a.changed
        ]
        if changed_items:
            out.append(Items(tuple(changed_items), heading="Changed"))
        equivalent = [
            Item("; ".join(f"{_name(r)} {fmt_pct(_judged(c).pct)}" for r, c in a.equivalent), strong=f"{a.env}:")
            for a in found
            if a.equivalent
        ]
        if equivalent:
            margins = sorted({f"±{_judged(c).margin_pct:g}%" for a in found for _, c in a.equivalent})
            out.append(Items(tuple(equivalent), heading=f"Equivalent (the interval lies within {', '.join(margins)})"))
        open_cells = [(a.env, r, c) for a in found for r, c in a.inconclusive]
        if open_cells:
            pace = ctx.run.seconds_per_round()
            out.append(
                Items(
                    tuple(item for a in found for item in _open_items(a, pace, ctx.run.warmup_rounds)),
                    heading="Inconclusive: these rounds cannot tell (cheapest to settle first)",
                )
            )
            n = next((col.n for col in table.columns if col.is_baseline), None)
            out.append(
                Para(settle_line([_judged(c).rounds_needed for _, _, c in open_cells], n, pace, ctx.run.warmup_rounds))
            )
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


def _open_items(a: EnvAnswer, pace: float | None = None, warmup: int = 0) -> list[Item]:
    """The SHOWN cells cheapest to settle, one line each; the rest in one line
    (the Inconclusive section lists every one)."""
    cells = sorted(a.inconclusive, key=lambda rc: _cost(_judged(rc[1]).rounds_needed))
    items = [
        Item(
            f"{_name(r)}: {interval_text(_judged(c))}; "
            + (f"{_judged(c).callable_text}; " if _judged(c).callable_text else "")
            + f"{rounds_text(_judged(c).rounds_needed, pace, ROUNDS_NEEDED_CAP, warmup)} would settle it",
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
