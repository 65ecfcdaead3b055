"""What the report says of a run's schedule (run/schedule.py): one sentence
from the facts the run kept. Pure."""

from __future__ import annotations

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
        f"sides swapped every {rotate:g} s while both ran"
        if isinstance(rotate, (int, float)) and not isinstance(rotate, bool) and 0 < rotate < 1e6
        else "sides swapped every round"  # a run stored before sides rotated within a sample
    )
    text = (
        f"Schedule: duet: each environment's sample ran at the same time as {run.baseline}'s, each side on "
        f"its own CPUs{where}, {swapped}; ratios are taken within each duet"
    )
    calls = record["calls"] if isinstance(record.get("calls"), dict) else {}
    said = {str(c): str(v["text"]) for c, v in calls.items() if isinstance(v, dict) and isinstance(v.get("text"), str)}
    plain = [c for c in duets if c not in said]
    text += f" ({', '.join(plain)})" if plain else ""
    cannot = [c for c in alone if c not in said]
    if cannot:
        text += f"; one sample at a time: {', '.join(cannot)} (its workload cannot duet)"
    # a user's command, decided from its sample alone (workloads/duetcall.py)
    return text + "." + "".join(f" {c}: {t}." for c, t in sorted(said.items()))
