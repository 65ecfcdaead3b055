"""Where the run's time went: wall time per workload and environment, warm-up
and failed samples included (what a time budget would spend)."""

from __future__ import annotations

from isobench.report.blocks import Grid, Para
from isobench.report.section import ReportContext, Section
from isobench.results.numbers import fmt_duration


def time_rows(
    time_spent: dict[tuple[str, str], tuple[float, int]],
    workloads: list[str],
    envs: list[str],
    overlap_s: dict[str, float] | None = None,
) -> tuple[tuple[str, ...], list[tuple[str, ...]], float]:
    """(header, rows, total seconds): a row per workload, a column per
    environment (its samples' own time), then the workload's wall time (a
    duet's two sides, ``overlap_s``, counted once) and its share. Pure."""
    overlap = overlap_s or {}
    total = sum(wall for wall, _ in time_spent.values()) - sum(overlap.values())
    names = list(dict.fromkeys(workloads + [w for w, _ in time_spent]))
    columns = list(dict.fromkeys(envs + [e for _, e in time_spent]))
    header = ("workload", *columns, "total", "share")
    rows = []
    for w in names:
        cells = [time_spent.get((w, e)) for e in columns]
        if not any(cells):
            continue
        sub = sum(c[0] for c in cells if c) - overlap.get(w, 0.0)
        rows.append(
            (
                w,
                *(fmt_duration(c[0]) if c else "-" for c in cells),
                fmt_duration(sub),
                f"{100 * sub / total:.0f}%" if total > 0 else "-",
            )
        )
    return header, rows, total


class TimeSpentSection(Section):
    slug = "time-spent"
    title = "Time spent"
    order = 75

    def blocks(self, ctx: ReportContext):
        run = ctx.run
        if not run.time_spent:
            return []
        workloads = list(dict.fromkeys(k.workload for k in run.metrics))
        header, rows, total = time_rows(run.time_spent, workloads, run.environments, run.overlap_s)
        samples = sum(n for _, n in run.time_spent.values())
        duet = (
            "; a duet's two sides ran at once, so a workload's total is its wall time, not the sum of its columns"
            if any(v > 0 for v in run.overlap_s.values())
            else ""
        )
        return [
            Para(
                f"Wall time of the {samples} samples, warm-up and failed ones included: "
                f"{fmt_duration(total)} (starting and stopping environments is not counted{duet})."
            ),
            Grid(header, tuple(rows), numeric_from=1),
        ]
