"""How an adaptive or budgeted run stopped, in sentences for the legend of
Table I and the answer: the looks the run recorded in its host facts
(isobench.analysis.repetitions and isobench.analysis.budget made them)."""

from __future__ import annotations

from collections import Counter

from isobench.results.analysis import Settings
from isobench.results.model import RunData
from isobench.results.numbers import fmt_duration


def adaptive_lines(run: RunData, settings: Settings, split: bool = False) -> list[str]:
    """How an adaptive run stopped (the looks it recorded), and the level its
    tests used because of them. ``split``: the run stores its primaries,
    and the rule waited for the primary cells only."""
    if settings.target_ci_pct is None:
        return []
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    cells = "primary cell's" if split else "cell's"
    out = [
        f"Adaptive repetitions: rounds added in blocks until every {cells} 95% CI was within "
        f"\u00b1{settings.target_ci_pct:g}%; tests at alpha = 0.05/{settings.looks} for the "
        f"{settings.looks} planned looks."
    ]
    for step, looks in sorted((facts.get("adaptive") or {}).items()):
        if looks:
            where = "" if step == "all" else f" (noise step {step})"
            out.append(f"Stopped{where} after {looks[-1]['rounds']} rounds: {looks[-1]['text']}.")
    return out


def budget_summary(run: RunData) -> str:
    """One sentence on a budgeted run's cases ("" for any other run)."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    record = facts.get("budget")
    if not isinstance(record, dict) or not record.get("cases"):
        return ""
    cases = record["cases"]
    counts = Counter(c.get("state", "?") for c in cases.values())
    return (
        f"Time budget {fmt_duration(float(record.get('budget_s', 0)))}: of {len(cases)} workload cases, "
        + ", ".join(f"{k} {s}" for s, k in counts.most_common())
        + " (the legend says why)."
    )


def budget_lines(run: RunData) -> list[str]:
    """How a budgeted run spent its time (the facts isobench.analysis.budget's calls
    left): the rule, the count per state, and each case it left unresolved."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    record = facts.get("budget")
    if not isinstance(record, dict) or not record.get("points"):
        return []
    pts, looks = record["points"], record.get("looks", len(record["points"]))
    spent = record.get("spent_s")
    out = [
        f"Time budget {fmt_duration(float(record.get('budget_s', 0)))}"
        + (f" ({fmt_duration(float(spent))} spent at the last look)" if spent is not None else "")
        + f": a first block of {pts[0]} rounds, then blocks only for the workload cases that could still "
        f"resolve in the time left; tests at alpha = 0.05/{looks} for the {looks} planned looks "
        f"(at {', '.join(str(p) for p in pts)} rounds)."
    ]
    cases = record.get("cases") or {}
    if cases:
        counts = Counter(c.get("state", "?") for c in cases.values())
        out.append(f"Workload cases: {', '.join(f'{k} {s}' for s, k in counts.most_common())} (of {len(cases)}).")
        for name, c in sorted(cases.items()):
            if c.get("state") not in ("resolved", "open"):
                out.append(f"{name}: {c.get('state')} after {c.get('rounds')} rounds: {c.get('why', '')}.")
    return out


def resume_line(run: RunData) -> str:
    """One sentence on a run that was interrupted (or failed, or died) and
    resumed: when each attempt ended and resumed, and the samples each took
    after it, from the records the runner kept as it reopened the run ("" for
    a run never resumed; issue 55: the report never said)."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    records = [r for r in facts.get("resumed") or [] if isinstance(r, dict)]
    if not records:
        return ""
    total = sum(n for _, n in run.time_spent.values())  # every sample stored, warm-up and failed ones too
    befores = [int(r.get("samples_before") or 0) for r in records]
    parts = []
    for i, r in enumerate(records):
        after = (befores[i + 1] if i + 1 < len(records) else total) - befores[i]
        parts.append(
            f"{r.get('was', '?')} after {befores[i]} samples, resumed {r.get('at', '?')}, "
            f"which took {max(after, 0)} more"
        )
    times = "once" if len(records) == 1 else f"{len(records)} times"
    return f"Interrupted and resumed {times}: " + "; then ".join(parts) + "."
