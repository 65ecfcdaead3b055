"""What each column ran on: kind, options, the tool versions inside it and
every other fact the environment recorded."""

from __future__ import annotations

from isobench.report.blocks import NOTE, PLAIN, Record, Records
from isobench.report.section import HTML, MARKDOWN, ReportContext, Section
from isobench.results.programs import PROGRAMS
from isobench.results.runfacts import fmt_fact
from isobench.results.table import EMULATED_NOTE, is_emulated


def _pairs(value) -> tuple[tuple[str, str], ...]:
    if isinstance(value, dict):
        return tuple((str(k), fmt_fact(v)) for k, v in sorted(value.items()) if v is not None)
    return (("", fmt_fact(value)),) if value not in (None, "", [], {}) else ()


class EnvironmentsSection(Section):
    slug = "environments"
    title = "Environments"
    order = 85
    formats = frozenset({MARKDOWN, HTML})

    def applies(self, ctx: ReportContext) -> bool:
        return bool(ctx.run.env_facts)

    def blocks(self, ctx: ReportContext):
        records = []
        for col in ctx.table.columns:
            facts = dict(ctx.run.env_facts.get(col.env) or {})
            kind = fmt_fact(facts.pop("kind", None))
            options, tools = facts.pop("options", None) or {}, facts.pop("tool_versions", None) or {}
            tools = {**tools, **(facts.pop("library_versions", None) or {})}
            facts.pop(PROGRAMS, None)  # the run section lists them, side by side
            emulated = is_emulated(ctx.run, col.env)
            note = "; ".join(n for n in ("baseline" if col.is_baseline else "", EMULATED_NOTE if emulated else "") if n)
            records.append(
                Record(
                    col.env,
                    note,
                    ((("", kind),), _pairs(options), _pairs(tools), _pairs(facts)),
                    tone=NOTE if emulated else PLAIN,
                )
            )
        return [
            Records(
                ("environment", "kind", "options", "tool and library versions", "other facts"),
                tuple(records),
                empty=("?", "defaults", "-", "-"),
            )
        ]
