"""The same program everywhere: what each environment runs for a workload
(the digest of the executable it resolved, of the shared libraries it
loads, of every copied file, its packages' versions: Workload.program,
kept in the environment's facts under ``programs``), whether an
environment's differs from the baseline's, the one line that refuses such
a run before it measures, and the lines every output prints about them. Pure; the runner decides and the report
reads the same records back."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from isobench.core.numbers import plural
from isobench.results.model import RunData

PROGRAMS = "programs"  # the key of the records in an environment's facts
MISSING = "missing"
LIBRARIES_NAMED = 5  # the run section names this many libraries that differ, then counts the rest


@dataclass(frozen=True)
class Difference:
    env: str  # the environment whose program is not the baseline's
    what: str  # "executable /usr/bin/7z", "file src/", "package p7zip-full"
    baseline: str  # the baseline's digest or version
    other: str  # the environment's
    at: str = ""  # where the environment found its executable, when not where the baseline did
    # the executable's Debian package and version on each side ("python3.11-minimal 3.11.2-6+deb12u6"), when known
    owners: tuple[str, str] = ("", "")

    def text(self, baseline_env: str) -> str:
        at = f" (at {self.at})" if self.at else ""
        mine, theirs = self.owners
        held = f"; from {mine} in {baseline_env}, {theirs} in {self.env}" if mine and theirs else ""
        return f"{self.what}: {self.baseline} in {baseline_env}, {self.other} in {self.env}{at}{held}"

    @property
    def versions_differ(self) -> bool:
        """The same package at two versions: a host behind (or ahead of) the image."""
        mine, theirs = (o.split(" ", 1) for o in self.owners)
        return len(mine) == 2 == len(theirs) and mine[0] == theirs[0] and mine[1] != theirs[1]


def _items(record: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """A record as {what is compared: (its name as printed, its digest or
    version)}. Its shared libraries are not among them: they are noted, not
    refused (library_differences)."""
    out: dict[str, tuple[str, str]] = {}
    if "sha256" in record:
        out["executable"] = (f"executable {record.get('executable', '?')}", str(record["sha256"]))
    for name, digest in sorted((record.get("files") or {}).items()):
        out[f"file {name}"] = (f"file {name}", str(digest))
    for name, version in sorted((record.get("packages") or {}).items()):
        out[f"package {name}"] = (f"package {name}", str(version))
    return out


def differences(records: dict[str, dict[str, Any]], baseline: str) -> list[Difference]:
    """Every way an environment's record differs from the baseline's, in the
    records' order. An executable is the same when its bytes are (the path
    it was found at may differ: named beside the other digest). Nothing to
    compare without the baseline's record (its preparation failed, and so
    do its cells)."""
    base = records.get(baseline)
    if base is None:
        return []
    ours = _items(base)
    out = []
    for env, record in records.items():
        if env == baseline:
            continue
        theirs = _items(record)
        for key in dict.fromkeys([*ours, *theirs]):
            name, mine = ours.get(key, (key, MISSING))
            other_name, other = theirs.get(key, (key, MISSING))
            if mine != other:
                at = other_name.removeprefix("executable ") if other_name != name and other != MISSING else ""
                owners = (str(base.get("owner", "")), str(record.get("owner", ""))) if key == "executable" else ("", "")
                out.append(Difference(env, name, mine, other, at, owners))
    return out


def library_differences(records: dict[str, dict[str, Any]], baseline: str) -> dict[str, list[str]]:
    """environment -> the sonames whose bytes are not the baseline's (or
    that one side does not load). Noted, not refused: a host that took a
    security update the image has not (or the other way round) loads other
    bytes of libkrb5 under sysbench, which no study means to compare; the
    executable, the copied files and the named packages are what must match."""
    base = records.get(baseline)
    if base is None:
        return {}
    ours = base.get("libraries") or {}
    out = {}
    for env, record in records.items():
        theirs = record.get("libraries") or {}
        if env != baseline and (names := [n for n in sorted({*ours, *theirs}) if ours.get(n) != theirs.get(n)]):
            out[env] = names
    return out


def refusal(workload: str, found: list[Difference], baseline: str) -> str:
    """The one line that refuses a run whose environments run other bytes
    than the baseline: the first difference with both digests, how many more."""
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    same = (
        "`isobench setup --match-image` brings a host package older than the image's to its version, "
        "`isobench images build --force` builds the image anew at the archive's; "
        if first.versions_differ
        else ""
    )
    return (
        f"{workload}: {first.env} does not run the same program as {baseline}: {first.text(baseline)}{more}; "
        f"nothing was measured. Make them the same ({same}docs/workloads/command.md), or set same_program = false "
        f"in [workloads.{workload}] to measure them anyway"
    )


def run_programs(run: RunData) -> dict[str, dict[str, dict[str, Any]]]:
    """workload -> environment -> its record, from the run's environment
    facts, environments in the run's column order (the baseline first)."""
    order = [run.baseline, *(e for e in run.environments if e != run.baseline)]
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for env in order:
        facts = run.env_facts.get(env)
        table = facts.get(PROGRAMS) if isinstance(facts, dict) else None
        for workload, record in (table or {}).items() if isinstance(table, dict) else ():
            if isinstance(record, dict):
                out.setdefault(workload, {})[env] = record
    return out


def run_differences(run: RunData) -> dict[str, list[Difference]]:
    """workload -> its differences from the baseline; a stored run holds
    some only when its study allowed them (same_program = false)."""
    return {w: found for w, records in run_programs(run).items() if (found := differences(records, run.baseline))}


def footnotes(run: RunData) -> list[str]:
    """Table I's notes: each environment that ran other bytes than the baseline."""
    out = []
    for workload, found in run_differences(run).items():
        for env in dict.fromkeys(d.env for d in found):
            first = [d for d in found if d.env == env]
            more = f" (and {len(first) - 1} more)" if len(first) > 1 else ""
            out.append(
                f"{env}: {workload} ran a different program than {run.baseline} (same_program = false): "
                f"{first[0].text(run.baseline)}{more}."
            )
    return out


def program_lines(records: dict[str, dict[str, Any]], baseline: str = "") -> list[str]:
    """What each environment ran, environments with identical records on
    one line each: "native, docker-nat: executable /usr/bin/7z sha256 ...";
    then their shared libraries, grouped the same way on their own (a
    program can load dozens, fio 63: one line and one digest of them all),
    and which of them are other bytes than the baseline's."""
    out = []
    groups: dict[tuple[tuple[str, tuple[str, str]], ...], list[str]] = {}
    for env, record in records.items():
        groups.setdefault(tuple(sorted(_items(record).items())), []).append(env)
    for items, envs in groups.items():
        for _, (name, value) in items:
            kind = "sha256 " if not name.startswith("package ") else ""
            out.append(f"{', '.join(envs)}: {name} {kind}{value}")
    by_libraries: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for env, record in records.items():
        if libraries := record.get("libraries"):
            by_libraries.setdefault(tuple(sorted((str(k), str(v)) for k, v in libraries.items())), []).append(env)
    for libraries, envs in by_libraries.items():
        combined = hashlib.sha256("".join(f"{n}\0{d}\n" for n, d in libraries).encode()).hexdigest()
        out.append(
            f"{', '.join(envs)}: {plural(len(libraries), 'shared library', 'shared libraries')} sha256 {combined}"
        )
    by_names: dict[tuple[str, ...], list[str]] = {}
    for env, differing in library_differences(records, baseline).items():
        by_names.setdefault(tuple(differing), []).append(env)
    for names, envs in by_names.items():
        shown = ", ".join(names[:LIBRARIES_NAMED]) + (
            f" and {len(names) - LIBRARIES_NAMED} more" if len(names) > LIBRARIES_NAMED else ""
        )
        out.append(
            f"{', '.join(envs)}: {plural(len(names), 'shared library', 'shared libraries')} not the bytes "
            f"{baseline} loads: {shown} (noted, not refused)"
        )
    return out


def summary(run: RunData) -> dict[str, dict[str, Any]]:
    """The JSON documents' ``programs``: per workload, whether every
    environment ran the same bytes, each one's record, the differences."""
    found = run_differences(run)
    return {
        workload: {
            "same": workload not in found,
            "environments": records,
            "differences": [d.text(run.baseline) for d in found.get(workload, [])],
            "library_differences": library_differences(records, run.baseline),
        }
        for workload, records in run_programs(run).items()
    }
