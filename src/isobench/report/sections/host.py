"""The run and the host it ran on, what each environment ran for the
workloads that record it (digests and versions: results/programs.py), and
host settings that may bias it."""

from __future__ import annotations

from isobench.report.blocks import PLAIN, WARN, Block, Facts, Item, Items
from isobench.report.section import ReportContext, Section
from isobench.results.programs import program_lines, run_differences, run_programs
from isobench.results.runfacts import doctor_warnings, host_facts, run_facts


class HostSection(Section):
    slug = "host"
    title = "Run and host"
    order = 80

    def blocks(self, ctx: ReportContext) -> list[Block]:
        out: list[Block] = [Facts(tuple(run_facts(ctx.run)) + tuple(host_facts(ctx.run)))]
        if items := program_items(ctx):
            out.append(Items(items, heading="What each environment ran (SHA-256 digests, package versions)"))
        if warnings := doctor_warnings(ctx.run):
            out.append(
                Items(
                    tuple(Item(w) for w in warnings),
                    tone=WARN,
                    heading="Host settings that may bias these results (isobench doctor)",
                )
            )
        return out


def program_items(ctx: ReportContext) -> tuple[Item, ...]:
    """Per workload that records its program: the same everywhere, or which
    environments differ (the study allowed it), and each one's digests."""
    differ = run_differences(ctx.run)
    out = []
    for workload, records in run_programs(ctx.run).items():
        envs = sorted({d.env for d in differ.get(workload, [])})
        text = (
            f"DIFFERENT in {', '.join(envs)} than in {ctx.run.baseline} (same_program = false)"
            if envs
            else f"the same in {', '.join(records)}"
        )
        out.append(
            Item(
                text,
                tuple(program_lines(records, ctx.run.baseline)),
                strong=f"{workload}:",
                tone=WARN if envs else PLAIN,
            )
        )
    return tuple(out)
