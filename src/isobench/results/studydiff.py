"""Whether two runs measured the same study, said in one line a compare
puts first (issue 55: every `isobench try -- sh -c ...` pipeline was study
"try-sh", and a compare of a bzip2 run against a gzip run read "native
WORSE +11.9%", the only hint a changed study hash among the facts). The
stored study texts say what differs: another study, another command (or
any field of a workload's table), other environments or settings. Pure."""

from __future__ import annotations

import shlex
import tomllib
from typing import Any

from isobench.results.model import RunData


def study_change(a: RunData, b: RunData) -> str:
    """ "" when A and B ran the same study text; else one line: what differs
    and what that means for every cell compared."""
    if a.study_name == b.study_name and a.study_hash == b.study_hash:
        return ""
    what = differences(_tables(a.study_text), _tables(b.study_text))
    said = f": {'; '.join(what)}" if what else ""
    if a.study_name != b.study_name:
        return (
            f"NOT THE SAME STUDY: A is study {a.study_name}, B is study {b.study_name}{said}; each change below "
            "is between different studies, not only between two runs of one"
        )
    hashes = f"hash {a.study_hash[:12]} \u2192 {b.study_hash[:12]}"
    if any(w.startswith("workload ") for w in what):
        return (
            f"THE STUDY CHANGED between A and B ({hashes}){said}; a change below may be the work's, "
            "not the host's or the isolation's"
        )
    return f"the study changed between A and B ({hashes}){said or ': its text differs'}"


def differences(ta: dict[str, Any], tb: dict[str, Any]) -> list[str]:
    """What differs between two study files' tables, one phrase each: a
    workload's fields (its command as each runs it), the environments, the
    [study] settings."""
    out = []
    wa, wb = ta.get("workloads") or {}, tb.get("workloads") or {}
    for key in [k for k in wb if k in wa and wa[k] != wb[k]]:
        fields = sorted(f for f in {*wa[key], *wb[key]} if wa[key].get(f) != wb[key].get(f))
        out.append(f"workload {key} ({', '.join(fields)})" + _commands(wa[key], wb[key]))
    if set(wa) != set(wb):
        out.append(f"workloads {_names(wa)} \u2192 {_names(wb)}")
    ea, eb = ta.get("environments") or {}, tb.get("environments") or {}
    if ea != eb:
        out.append(f"environments {_names(ea)} \u2192 {_names(eb)}" if set(ea) != set(eb) else "environments' settings")
    sa, sb = ta.get("study") or {}, tb.get("study") or {}
    changed = sorted(f for f in {*sa, *sb} if f not in ("name", "description") and sa.get(f) != sb.get(f))
    if changed:
        out.append(f"study settings ({', '.join(changed)})")
    return out


def _commands(a: dict[str, Any], b: dict[str, Any]) -> str:
    ca, cb = _argv(a.get("command")), _argv(b.get("command"))
    if ca is None or cb is None or ca == cb:
        return ""
    return f": A runs {_cut(shlex.join(ca))}, B runs {_cut(shlex.join(cb))}"


def _argv(value: object) -> list[str] | None:
    return value if isinstance(value, list) and all(isinstance(w, str) for w in value) else None


def _cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 1] + "\u2026"


def _names(tables: dict[str, Any]) -> str:
    return ", ".join(tables) or "none"


def _tables(text: str) -> dict[str, Any]:
    """A stored study text's tables ({} where it does not parse: an older run's)."""
    try:
        return tomllib.loads(text or "")
    except (tomllib.TOMLDecodeError, TypeError):
        return {}
