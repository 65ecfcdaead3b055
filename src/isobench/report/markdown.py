"""Table I as GitHub-flavoured Markdown, with facts, legend, failures and the study file."""

from __future__ import annotations

import re

from isobench.report.attribution import section_lines as attribution_lines
from isobench.report.instances import density_lines, speedup_lines
from isobench.results.model import RunData
from isobench.report.netpairs import section_lines
from isobench.report.sweeps import sweeps
from isobench.results.table import (
    Table,
    build_table,
    doctor_warnings,
    host_facts,
    inconclusive_lines,
    run_facts,
)

# Markup GFM would act on: emphasis (our "*" marker, snake_case names), code,
# cell separators, and "<" only where it could open an HTML tag ("p < 0.05" stays).
_SPECIAL = re.compile(r"([\\`*_|]|<(?=[A-Za-z/!?]))")


def md_escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", text.replace("\n", " "))


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks inside the text."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _facts_md(run: RunData) -> list[str]:
    lines = [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in run_facts(run)]
    lines += [f"- **{md_escape(k)}**: {md_escape(v)}" for k, v in host_facts(run)]
    return lines


def table_md(table: Table) -> list[str]:
    header = ["workload", "metric"] + [c.header for c in table.columns]
    lines = ["| " + " | ".join(md_escape(h) for h in header) + " |",
             "|" + "|".join([":---", ":---"] + ["---:"] * len(table.columns)) + "|"]
    for workload, rows in table.groups():
        for j, row in enumerate(rows):
            cells = [md_escape(workload) if j == 0 else "", md_escape(row.label)]
            cells += [md_escape(c.text) for c in row.cells]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _environments_md(run: RunData) -> list[str]:
    """What each column ran on: kind, options and the tool versions inside it."""
    if not run.env_facts:
        return []
    out = ["## Environments", ""]
    for env in run.environments:
        facts = run.env_facts.get(env, {})
        opts = ", ".join(f"{k}={v}" for k, v in sorted((facts.get("options") or {}).items()) if v is not None)
        tools = ", ".join(f"{k} {v}" for k, v in sorted((facts.get("tool_versions") or {}).items()))
        extra = ", ".join(f"{k}: {facts[k]}" for k in ("accel", "image", "docker_version", "runtime", "storage_driver")
                          if facts.get(k))
        line = f"- **{md_escape(env)}** ({md_escape(str(facts.get('kind', '?')))})"
        line += "".join(f"; {md_escape(part)}" for part in (opts, extra) if part)
        out.append(line)
        if tools:
            out.append(f"  - tools: {md_escape(tools)}")
    return out + [""]


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "|".join([":---"] * 2 + ["---:"] * (len(header) - 2)) + "|",
            *("| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows)]


def _instances_md(run: RunData, table: Table) -> list[str]:
    """Speedup over the fewest instances, and density, when the run has them."""
    out = []
    if rows := speedup_lines(table, sweeps(table)):
        out += ["## Scale-out", "", *_grid(["workload", "environment", "instances", "throughput (mean)",
                                            "speedup"], rows), ""]
    if rows := density_lines(run.env_facts, run.environments):
        out += ["## Density", "", "As each environment's instances started (page cache dropped before "
                "each reading):", "", *_grid(["environment", "N", "startup of instance N (s)",
                                              "MiB per instance", "QEMU PSS (MiB)"], rows), ""]
    return out


def render_markdown(run: RunData) -> str:
    table = build_table(run)
    out = [f"# {md_escape(table.title)}", "", "## Run and host", "", *_facts_md(run), ""]
    warnings = doctor_warnings(run)
    if warnings:
        out += ["Host settings that may bias these results (`isobench doctor`):", ""]
        out += [f"- {md_escape(w)}" for w in warnings] + [""]
    out += ["## Results", "", *table_md(table), ""]
    if table.footnotes:
        out += [md_escape(n) + "  " for n in table.footnotes] + [""]  # "  ": line break
    out += [f"- {md_escape(line)}" for line in table.legend] + [""]
    for title, lines in (("Warnings", table.warnings), ("Inconclusive", inconclusive_lines(table))):
        if lines:
            out += [f"## {title}", "", *(f"- {md_escape(line)}" for line in lines), ""]
    if pairs := section_lines(run):  # docker-nat vs docker-host, compared directly
        out += [f"## {md_escape(pairs[0])}", "", md_escape(pairs[1]), ""]
        out += [f"- {md_escape(line)}" for line in pairs[2:]] + [""]
    if attr := attribution_lines(run):  # where the overhead comes from (counters)
        out += [f"## {md_escape(attr[0])}", "", md_escape(attr[1]), ""]
        out += [("  - " if line.startswith("  ") else "- ") + md_escape(line.strip()) for line in attr[2:]] + [""]
    out += _instances_md(run, table)
    if table.failures:
        out += ["## Failures", ""]
        for f in table.failures:
            out.append(f"- **{md_escape(f.workload)}/{md_escape(f.case)}** on "
                       f"**{md_escape(f.env)}**: {f.count} failed")
            out += [f"  - {md_escape(r)}" + (f" (\u00d7{k})" if k > 1 else "") for r, k in f.reasons]
        out.append("")
    out += _environments_md(run)
    fence = _fence(run.study_text or "")
    out += ["## Study file", "", f"{fence}toml", (run.study_text or "").rstrip("\n"), fence, ""]
    return "\n".join(out)
