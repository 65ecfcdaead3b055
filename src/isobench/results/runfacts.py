"""The run's and its host's facts as (label, text) pairs, shared by every
renderer and by the fingerprint of a run: well-known host facts first,
sizes in binary units, anything structured as compact JSON."""

from __future__ import annotations

import json
from typing import Any

from isobench.results.model import RunData
from isobench.results.numbers import DASH
from isobench.results.stopping import resume_line

HOST_KEYS = (
    ("cpu_model", "CPU"),
    ("cores", "Cores"),
    ("mem_bytes", "Memory"),
    ("kernel", "Kernel"),
    ("thp", "THP"),
    ("governor", "Governor"),
    ("docker_version", "Docker"),
    ("hypervisor", "Hypervisor"),
)
# /proc/stat's CPU time (guest time is inside user and nice already)
_CPU_TIME = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def fmt_bytes(n: Any) -> str:
    try:
        n = float(n)
    except (TypeError, ValueError):
        return str(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # unreachable


def fmt_fact(value: object) -> str:
    """Scalars as they are; lists and dicts as compact JSON."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    if value is None:
        return DASH
    return str(value)


def host_facts(run: RunData) -> list[tuple[str, str]]:
    """(label, text) pairs: the well-known facts first, then whatever else is there."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    known = dict(HOST_KEYS)
    out = []
    for key, label in HOST_KEYS:
        if key in facts:
            v = facts[key]
            out.append((label, fmt_bytes(v) if key == "mem_bytes" else fmt_fact(v)))
    noise = facts.get("host_noise")
    if isinstance(noise, dict) and isinstance(noise.get("line"), str):  # the noise pilot's own sentence
        out.append(("Host noise", noise["line"]))
    elif "host_noise" in facts:
        out.append(("host_noise", fmt_fact(noise)))
    plan = facts.get("packages_plan")  # cli/execution.agree_to_packages: the plan's sentence and the consent
    if isinstance(plan, dict) and isinstance(plan.get("line"), str):
        out.append(("Study's packages", f"{plan['line']}; consent: {plan.get('consent', DASH)}"))
    elif "packages_plan" in facts:
        out.append(("packages_plan", fmt_fact(plan)))
    shown = ("doctor", "adaptive", "host_noise", "packages_plan", "resumed")  # resumed: run_facts says it
    out += [(k, fmt_fact(v)) for k, v in facts.items() if k not in known and k not in shown]
    return out


def doctor_warnings(run: RunData) -> list[str]:
    """`isobench doctor` findings stored with the run that may bias it."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    return [
        f"{f['check']}: {f['value']}" + (f" ({f['fix']})" if f.get("fix") else "")
        for f in facts.get("doctor", [])
        if f.get("status") == "warn"
    ]


def run_facts(run: RunData) -> list[tuple[str, str]]:
    return [
        ("Study", run.study_name),
        ("Study hash", run.study_hash[:12] if run.study_hash else DASH),
        ("Run", run.run_id),
        ("Status", run.status),
        ("Started", run.started_at or DASH),
        ("Finished", run.finished_at or DASH),
        ("Baseline", run.baseline),
        *([("Resumed", line)] if (line := resume_line(run)) else []),
    ]


def steal_seen(run: RunData) -> tuple[float, float] | None:
    """The share of the host's CPU time the hypervisor gave to others while
    the run's samples ran (steal over all CPU time, host-wide, summed over
    every measured sample's counters) and the largest share in one sample;
    None when no sample kept counters."""
    steal = total = peak = 0.0
    for samples in run.counters.values():
        for _, deltas, _ in samples:
            cpu = sum(float(deltas.get(f"cpu.{f}_s") or 0.0) for f in _CPU_TIME)
            if cpu <= 0:
                continue
            stolen = float(deltas.get("cpu.steal_s") or 0.0)
            steal, total, peak = steal + stolen, total + cpu, max(peak, stolen / cpu)
    return (steal / total, peak) if total > 0 else None


def vm_lines(run: RunData) -> list[str]:
    """One or two lines for the report's top when the host is itself a
    virtual machine (its stored hypervisor fact, or steal time seen in a run
    stored before that fact): what native means then, and the steal time
    seen during the run. Nothing on bare metal."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    name = facts.get("hypervisor")
    steal = steal_seen(run)
    if name == "none" or (not isinstance(name, str) and not (steal and steal[0] > 0)):
        return []
    which = f" ({name})" if isinstance(name, str) and name != "unnamed" else ""
    lines = [
        f"This host is itself a virtual machine{which}: native here means native inside that VM, every "
        f"environment runs under its hypervisor, and the costs below come on top of it."
    ]
    if steal is None:
        lines.append("Steal time during the run: not measured (no sample kept the host's counters).")
    else:
        share, peak = steal
        lines.append(
            f"Steal time during the run: {_share(share)} of the host's CPU time (the hypervisor ran "
            f"something else on these CPUs), at most {_share(peak)} in one sample."
            if share > 0
            else "Steal time during the run: none seen."
        )
    return lines


def _share(x: float) -> str:
    return f"{x * 100:.1f}%" if x >= 0.001 else "under 0.1%"
