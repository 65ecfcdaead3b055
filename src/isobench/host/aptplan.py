"""What installing Debian packages would change on this host, asked of apt
before anything changes: ``apt-get -s install`` (a simulation: no root, no
lock, nothing written) parsed into the packages it would install, upgrade
and remove, and the refusal of a plan that removes a package or touches one
isobench needs.

The services the new packages would bring (``with_services``) are read
from their .debs, fetched into a temporary directory and listed
(host/debservices.py): apt's package lists hold no file lists. Where they
cannot be fetched (no network, a timeout), the plan says it cannot tell
and why, rather than guess from names."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from isobench.core.proc import run_argv
from isobench.host.debservices import DOWNLOAD_TIMEOUT_S, Unknown, services_of

SIMULATE_TIMEOUT_S = 120.0  # texlive-full (356 packages) took 10 s here on a busy host
# "Inst NAME [INSTALLED] (CANDIDATE RELEASE [ARCH])": no [INSTALLED] when new
_INST = re.compile(r"^Inst (\S+)(?: \[([^\]]*)\])? \((\S+)")
# "Remv NAME [INSTALLED]" ("Purg" with --purge)
_REMV = re.compile(r"^(?:Remv|Purg) (\S+)(?: \[([^\]]*)\])?")


@dataclass(frozen=True)
class Change:
    package: str
    old: str | None  # the installed version (None: not installed)
    new: str | None  # the version apt would install (None: removed)


@dataclass(frozen=True)
class AptPlan:
    install: tuple[Change, ...] = ()  # new on this host
    upgrade: tuple[Change, ...] = ()  # installed now, replaced by apt's candidate
    remove: tuple[Change, ...] = ()
    # (package, unit or /etc/init.d/NAME) of the new packages; None: not read (services_unknown: why not)
    services: tuple[tuple[str, str], ...] | None = None
    services_unknown: str = ""

    @property
    def changes(self) -> bool:
        return bool(self.install or self.upgrade or self.remove)

    def as_dict(self) -> dict:
        return {
            "install": [{"package": c.package, "version": c.new} for c in self.install],
            "upgrade": [{"package": c.package, "from": c.old, "to": c.new} for c in self.upgrade],
            "remove": [{"package": c.package, "version": c.old} for c in self.remove],
            "services": None if self.services is None else [{"package": p, "unit": u} for p, u in self.services],
            "services_unknown": self.services_unknown or None,
        }


def parse_simulation(text: str) -> AptPlan:
    """The plan in ``apt-get -s install`` output: its Inst and Remv lines,
    in apt's order (Conf lines repeat the Inst ones; the summary above them
    is for people)."""
    install: list[Change] = []
    upgrade: list[Change] = []
    remove: list[Change] = []
    for line in text.splitlines():
        inst = _INST.match(line)
        if inst:
            name, old, new = inst.groups()
            (upgrade if old else install).append(Change(_bare(name), old or None, new))
            continue
        remv = _REMV.match(line)
        if remv:
            remove.append(Change(_bare(remv.group(1)), remv.group(2) or None, None))
    return AptPlan(tuple(install), tuple(upgrade), tuple(remove))


def describe(plan: AptPlan, most: int = 10) -> str:
    """The plan in words: new packages by name (the first ``most``),
    upgrades and removals with their versions, then the services the new
    packages bring where they were read (or why they could not be)."""

    def listed(verb: str, changes: tuple[Change, ...], word) -> str:
        if not changes:
            return f"{verb} none"
        shown = [word(c) for c in changes[:most]]
        more = f", and {len(changes) - most} more" if len(changes) > most else ""
        return f"{verb} {len(changes)} ({', '.join(shown)}{more})"

    parts = [
        listed("adds", plan.install, lambda c: c.package),
        listed("upgrades", plan.upgrade, lambda c: f"{c.package} {c.old} -> {c.new}"),
        listed("removes", plan.remove, lambda c: f"{c.package} {c.old}"),
    ]
    if plan.install and plan.services_unknown:
        parts.append(f"services: could not tell ({plan.services_unknown})")
    elif plan.install and plan.services is not None:
        parts.append(_started(plan.services, most))
    return ", ".join(parts)


def _started(services: tuple[tuple[str, str], ...], most: int) -> str:
    if not services:
        return "starts no service"
    shown = ", ".join(f"{unit} ({package})" for package, unit in services[:most])
    more = f", and {len(services) - most} more" if len(services) > most else ""
    return f"starts services: {shown}{more}"


def with_services(plan: AptPlan, timeout_s: float = DOWNLOAD_TIMEOUT_S) -> AptPlan:
    """``plan`` with the services its new packages (not its upgrades) would
    bring, read from their .debs at the versions it installs; where they
    cannot be read, with why not. Never raises: a plan is a plan without
    its services."""
    if not plan.install:
        return plan
    try:
        found = services_of([(c.package, c.new or "") for c in plan.install], timeout_s)
    except Unknown as exc:
        return replace(plan, services_unknown=str(exc))
    return replace(plan, services=found)


def _bare(name: str) -> str:
    return name.split(":", 1)[0]  # "libc6:amd64" on a multiarch host


class PlanError(RuntimeError):
    """No plan (one line): apt refused (``refused``: an unknown name, broken
    dependencies; the install would fail the same way), or could not be
    asked (no apt-get, a timeout)."""

    def __init__(self, message: str, refused: bool):
        super().__init__(message)
        self.refused = refused


def simulate(names: list[str], timeout_s: float = SIMULATE_TIMEOUT_S) -> AptPlan:
    """The plan of ``apt-get install --no-install-recommends NAMES`` (how
    host.packages.install_on_host installs them), from apt's lists as they
    are now. Raises PlanError when apt-get cannot run, takes too long, or
    refuses (an unknown name, broken dependencies)."""
    if not names:
        return AptPlan()
    argv = ["apt-get", "-s", "-q", "install", "--no-install-recommends", *names]
    r = run_argv(argv, timeout_s, env={**os.environ, "LC_ALL": "C"})
    if r.timed_out:
        raise PlanError(f"apt-get -s install took over {timeout_s:.0f} s", refused=False)
    if r.returncode == 127:  # run_argv: not found, or not executable
        raise PlanError(f"cannot run apt-get ({r.stderr.strip()[:120]})", refused=False)
    if r.returncode != 0:
        why = _last_error(r.stderr) or _last_error(r.stdout) or f"exit {r.returncode}"
        raise PlanError(f"apt-get -s install {' '.join(names)}: {why[:200]}", refused=True)
    return parse_simulation(r.stdout)


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return next((ln for ln in reversed(lines) if ln.startswith("E:")), lines[-1] if lines else "")


def touched(plan: AptPlan, needed: set[str]) -> tuple[str, str] | None:
    """(verb, package) of the first change isobench will not make: a
    removal (of a package isobench needs first), or an upgrade of one it
    needs (``needed``); None when the plan only adds packages or upgrades
    others."""
    removed = [c.package for c in plan.remove]
    hit = next((p for p in removed if p in needed), removed[0] if removed else None)
    if hit:
        return "remove", hit
    hit = next((c.package for c in plan.upgrade if c.package in needed), None)
    return ("upgrade", hit) if hit else None


def why_not(verb: str, package: str, needed: set[str]) -> str:
    """The rest of the refusal after "NAME would ": what it touches, why
    isobench will not, and the fix."""
    if package in needed:
        fix = "" if verb == "remove" else ", or bring isobench's own packages up to date first (isobench setup)"
        return f"{verb} {package}, which isobench runs on: drop it from packages{fix}"
    return (
        f"remove {package}, and isobench removes no package from a host: drop it from packages "
        f"(or remove {package} yourself first, if you mean to)"
    )


def still_safe(names: list[str], needed: set[str]) -> str:
    """Empty when installing ``names`` now (after ``apt-get update``: apt's
    plan may have changed since the user agreed to it) still removes
    nothing and touches nothing isobench needs; else one line why not."""
    try:
        hit = touched(simulate(names), needed)
    except PlanError as exc:
        return f"cannot tell what installing {' '.join(names)} would change now ({exc}); nothing was installed"
    if hit is None:
        return ""
    return f"after apt-get update, {' '.join(names)} would {why_not(*hit, needed)}; nothing was installed"
