"""Which runs are alike, and what differs between two runs.

History (results/history.py) puts runs of one study into one series only
when they ran on the same class of host: CPU model, cores and memory (and
the host's name with ``by_host``). Memory is compared within a tolerance:
MemTotal moves by a few hundred MB between kernels (reserved memory), which
is a kernel change to show, not another machine.

``run_facts`` flattens a run's host facts and one environment's facts into
"name -> text" (nested options as ``options.cpus``), leaving out what
differs between any two runs by construction (the load average, timings,
names holding the run's own id), so that a diff names what was changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from isobench.results.model import RunData
from isobench.results.runfacts import fmt_bytes, fmt_fact

# Two runs are on one host class when their memory differs by less than this
# fraction of the larger (a kernel's reserved memory moves MemTotal by ~1%).
MEMORY_TOLERANCE = 0.05

# Host facts that change from run to run on an unchanged host: the load
# average, the doctor's readings of the moment, a fleet's per-run ids, what a
# calibration or adaptive run added about itself, the study's packages as
# planned and agreed to (a second run finds them installed: their versions
# are environment facts).
VOLATILE_HOST = frozenset(
    {
        "loadavg",
        "fleet",
        "imported",
        "resumed",
        "calibration",
        "adaptive",
        "budget",
        "packages_plan",
        "doctor load",
        "doctor free memory",
        "doctor free disk",
    }
)
# The noise pilot's fact (noisepilot.Pilot.as_fact) says when it was measured
# and how long ago: only its summary of the figures is a fact of the host.
NOISE_PREFIX, NOISE_KEPT = "host_noise.", "host_noise.summary"
# Environment facts that do: per-run names and argv (sockets under the run's
# directory), boot timings, and the runtime's details (its version is in
# "runtime" already).
VOLATILE_ENV = frozenset({"container", "qemu_argv", "boot", "runtime_info"})


@dataclass(frozen=True)
class HostClass:
    """What makes runs of one study comparable."""

    study: str
    cpu_model: str
    cores: int | None
    mem_bytes: float | None  # a representative (the first run's); classes compare within MEMORY_TOLERANCE
    host: str | None = None  # with --by-host

    def same(self, other: HostClass) -> bool:
        if (self.study, self.cpu_model, self.cores, self.host) != (
            other.study,
            other.cpu_model,
            other.cores,
            other.host,
        ):
            return False
        a, b = self.mem_bytes, other.mem_bytes
        if a is None or b is None:
            return a is b
        return abs(a - b) <= MEMORY_TOLERANCE * max(a, b)

    @property
    def label(self) -> str:
        cores = f"{self.cores} cores" if self.cores is not None else "cores unknown"
        mem = f"{self.mem_bytes / 2**30:.0f} GiB" if self.mem_bytes else "memory unknown"
        where = f" on host {self.host}" if self.host else ""
        return f"{self.study}: {self.cpu_model or 'CPU unknown'}, {cores}, {mem}{where}"


def host_name(run: RunData) -> str:
    """The host a run was measured on: its recorded hostname, else the
    inventory name a fleet gave it, else ''."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    name = facts.get("hostname")
    if not name and isinstance(facts.get("fleet"), dict):
        name = facts["fleet"].get("host")
    return str(name or "")


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x > 0 else None


def host_class(run: RunData, by_host: bool = False) -> HostClass:
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    cores = _number(facts.get("cores"))
    return HostClass(
        run.study_name,
        str(facts.get("cpu_model") or ""),
        int(cores) if cores else None,
        _number(facts.get("mem_bytes")),
        host_name(run) if by_host else None,
    )


def group_runs(runs: list[RunData], by_host: bool = False) -> list[tuple[HostClass, list[RunData]]]:
    """Runs (in the order given) grouped by host class, groups in order of
    their first run. A run joins the first group whose class it matches."""
    groups: list[tuple[HostClass, list[RunData]]] = []
    for run in runs:
        cls = host_class(run, by_host)
        for key, members in groups:
            if key.same(cls):
                members.append(run)
                break
        else:
            groups.append((cls, [run]))
    return groups


# -- facts ---------------------------------------------------------------------------


def _flatten(prefix: str, value: object, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for k in sorted(value, key=str):
            _flatten(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    else:
        out[prefix] = fmt_fact(value)


def host_fact_texts(run: RunData) -> dict[str, str]:
    """Host facts as "name -> text", the doctor's findings one per check."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    out: dict[str, str] = {}
    for k, v in facts.items():
        if k == "doctor" and isinstance(v, list):
            for f in v:
                if isinstance(f, dict) and "check" in f:
                    out[f"doctor {f['check']}"] = f"{f.get('status', '?')}: {f.get('value', '')}"
        elif k == "mem_bytes":
            out[k] = fmt_bytes(v)
        else:
            _flatten(str(k), v, out)
    return {
        k: v
        for k, v in out.items()
        if k not in VOLATILE_HOST
        and k.split(".")[0] not in VOLATILE_HOST
        and not (k.startswith(NOISE_PREFIX) and k != NOISE_KEPT)
    }


def env_fact_texts(run: RunData, env: str) -> dict[str, str]:
    facts = run.env_facts.get(env)
    out: dict[str, str] = {}
    if isinstance(facts, dict):
        for k, v in facts.items():
            if k not in VOLATILE_ENV:
                _flatten(str(k), v, out)
    return out


def facts_diff(a: RunData, b: RunData, envs: list[str]) -> list[tuple[str, str, str]]:
    """(fact, in A, in B) for every fact that differs: the study file's hash,
    host facts, then each of ENVS' facts as "ENV fact". A fact naming the
    run itself (a container called after its run id) is left out."""
    out = []
    if a.study_hash != b.study_hash:
        out.append(("study hash", a.study_hash[:12], b.study_hash[:12]))

    def add(name: str, fa: dict[str, str], fb: dict[str, str]) -> None:
        for k in sorted(set(fa) | set(fb)):
            va, vb = fa.get(k, "\u2014"), fb.get(k, "\u2014")
            # the same but for each run's own id (a name made from it): no change
            if va != vb and va.replace(a.run_id, "\0") != vb.replace(b.run_id, "\0"):
                out.append((f"{name}{k}", va, vb))

    add("", host_fact_texts(a), host_fact_texts(b))
    for env in envs:
        add(f"{env} ", env_fact_texts(a, env), env_fact_texts(b, env))
    return out
