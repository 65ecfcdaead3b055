"""What the report says of a run's schedule (run/schedule.py): one sentence
from the facts the run kept. Pure."""

from __future__ import annotations

from statistics import median

from isobench.core.ids import printable
from isobench.core.numbers import fmt_bound, fmt_pct
from isobench.results.cellwarnings import position_of
from isobench.results.model import RunData


def schedule_summary(run: RunData) -> str:
    """ "" for a sequential run (or one stored before schedules); else which
    cases ran as duets, on which CPU sides, and which ran one at a time."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    record = facts.get("schedule")
    if not isinstance(record, dict) or record.get("name") != "duet":
        return ""
    cells = record["cells"] if isinstance(record.get("cells"), dict) else {}
    duets = sorted(str(c) for c, s in cells.items() if s == "duet")
    alone = sorted(str(c) for c, s in cells.items() if s != "duet")
    sides = record.get("sides")
    where = ""
    if isinstance(sides, list) and len(sides) == 2 and all(isinstance(s, list) for s in sides):
        where = " on host CPUs " + " | ".join(",".join(str(c) for c in s) for s in sides)
    rotate = record.get("rotate_s")
    swapped = (
        f"sides swapped every {rotate:g} s while both ran{_stretched(run.duet_periods, rotate)}"
        if isinstance(rotate, (int, float)) and not isinstance(rotate, bool) and 0 < rotate < 1e6
        else "sides swapped every round"  # a run stored before sides rotated within a sample
    )
    text = (
        f"Schedule: duet: each environment's sample ran at the same time as {run.baseline}'s, each side on "
        f"its own CPUs{where}, {swapped}; ratios are taken within each duet"
        if duets
        else f"Schedule: duet asked{f' (sides{where})' if where else ''}, but no case ran as one: each sample ran alone"
    )
    calls = record["calls"] if isinstance(record.get("calls"), dict) else {}
    said = {str(c): str(v["text"]) for c, v in calls.items() if isinstance(v, dict) and isinstance(v.get("text"), str)}
    plain = [c for c in duets if c not in said]
    text += f" ({', '.join(plain)})" if plain else ""
    cannot = [c for c in alone if c not in said]
    if cannot:
        text += f"; one sample at a time: {', '.join(cannot)} (its workload cannot duet)"
        text += "".join(f"; {line}" for line in position_lines(run, cannot))
    # a table decided from its sample alone (a user's command, a server's
    # case: workloads/duetcall.py), the cases one call fits said together
    grouped: dict[str, list[str]] = {}
    for c, t in sorted(said.items()):
        grouped.setdefault(t, []).append(c)
    text += "." + "".join(f" {', '.join(cs)}: {t}." for t, cs in grouped.items())
    return text + "".join(f" {line}" for line in gate_lines(run.duet_starts))


def _stretched(periods: dict[str, list[float]], rotate: float) -> str:
    """The environments whose moves were slow enough to stretch the swap
    period (run/duet.py swap_period), with their median period. Pure."""
    slow = {env: median(p) for env, p in sorted(periods.items()) if p and median(p) > 1.5 * rotate}
    if not slow:
        return ""
    said = ", ".join(f"{printable(env)} every {p:.2g} s" for env, p in slow.items())
    return f" (slower where a side's moves took longer: {said}, median)"


def position_lines(run: RunData, cells: list[str]) -> list[str]:
    """For each cell run one sample at a time, its primaries' position
    effect (a round's first sample against its later ones), large or not."""
    out = []
    for key in run.metrics:
        if key.primary and f"{key.workload}/{key.case}" in cells:
            e = position_of(run, key)
            if e is not None:
                out.append(
                    f"{key.workload}/{key.case} {key.metric}: a round's first sample read {fmt_pct(e.pct)} "
                    f"[{fmt_bound(e.low_pct)}, {fmt_bound(e.high_pct)}] against its later ones"
                    f" ({'balanced: each environment first equally often' if e.balanced else 'not balanced'})"
                )
    return out


def gate_lines(starts: dict[str, list[tuple[str, float]]]) -> list[str]:
    """How far apart each duet's two works started, from their own clocks
    where both sides were held at the gate (run before 2026-11-29: none
    stored); and each environment that fell back, why, and how far apart
    its starts were on the harness's clock. Pure."""
    held = [abs(skew) for samples in starts.values() for gate, skew in samples if gate == "held"]
    lines = []
    if held:
        lines.append(
            f"The two sides' work started together, held at a gate: {median(held) * 1000:.2f} ms apart"
            f" (median; at most {max(held) * 1000:.1f} ms), on the work's own clock."
        )
    for env, samples in sorted(starts.items()):
        fell = [(gate, abs(skew)) for gate, skew in samples if gate and gate != "held"]
        if fell:
            why = fell[0][0]
            apart = median([s for _, s in fell]) * 1000
            lines.append(f"{env} was not held at the gate ({why}): its starts were {apart:.0f} ms apart (median).")
    return lines
