"""Which environments run other package versions than the baseline: the
tools a study's workloads run and the libraries they load (each
environment's ``tool_versions`` and ``library_versions`` facts). Pure; a
note, never a refusal: the host and an image built from today's archive
often differ by a security update, and a CPU cell's change can be theirs
rather than the isolation's, so Table I says so beside it."""

from __future__ import annotations

from typing import Any

from isobench.results.model import RunData

KEYS = ("tool_versions", "library_versions")
NAMED = 4  # a note names this many packages, then counts the rest


def _versions(facts: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in KEYS:
        table = facts.get(key) if isinstance(facts, dict) else None
        if isinstance(table, dict):
            out.update({str(k): str(v) for k, v in table.items() if v is not None})
    return out


def differences(run: RunData) -> dict[str, list[tuple[str, str, str]]]:
    """environment -> (package, baseline's version, its version) for each
    package both record at another version, sorted by package."""
    base = _versions(run.env_facts.get(run.baseline))
    out = {}
    for env in run.environments:
        if env == run.baseline:
            continue
        theirs = _versions(run.env_facts.get(env))
        found = [(p, base[p], theirs[p]) for p in sorted(base.keys() & theirs.keys()) if base[p] != theirs[p]]
        if found:
            out[env] = found
    return out


def footnotes(run: RunData) -> list[str]:
    """Table I's notes: "docker-nat: other package versions than native:
    liblzma5 5.4.5-0.3 (native 5.4.1-0.2); its CPU cells may show them"."""
    out = []
    for env, found in differences(run).items():
        named = ", ".join(f"{p} {theirs} ({run.baseline} {ours})" for p, ours, theirs in found[:NAMED])
        more = f" and {len(found) - NAMED} more" if len(found) > NAMED else ""
        out.append(
            f"{env}: other package versions than {run.baseline}: {named}{more}; "
            f"a change in its CPU cells may be theirs, not the isolation's."
        )
    return out
