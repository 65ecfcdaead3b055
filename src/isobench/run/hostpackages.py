"""A study's own Debian packages on this host, planned before anything
starts: which of them an environment that runs the host's programs
(EnvKind.installs_on_host: native) would install, what apt would then
install, upgrade and remove, and the services its new packages bring
(host.aptplan), and the refusal of a plan that removes a package or touches
one isobench needs. `validate` prints the plan; `run`, `try` and
`calibrate` ask for consent with it and keep it with the run as the
``packages_plan`` fact (cli/execution.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from isobench.envs.kinds import kind_of
from isobench.host.aptplan import AptPlan, PlanError, describe, simulate, touched, why_not, with_services
from isobench.host.hostinfo import host_info
from isobench.host.packages import to_install
from isobench.host.prepare import needed_packages
from isobench.images.definition import beyond_own
from isobench.run.plan import plan
from isobench.study import Study

NOTHING = "nothing to install"  # the consent of a plan that changes nothing
UNPLANNED = ("install", "upgrade", "remove", "services", "services_unknown")  # null where apt could not be asked


class Refused(ValueError):
    """The study's packages must not be installed here (one line, the fix)."""


@dataclass(frozen=True)
class HostPackages:
    environments: tuple[str, ...]  # the study's environments that install on the host
    asked: tuple[str, ...]  # the study's packages beyond isobench's own
    missing: tuple[str, ...]  # those the host lacks or has at another version (host.packages.to_install)
    plan: AptPlan | None  # None: apt could not be asked (unknown says why)
    unknown: str = ""

    @property
    def changes(self) -> bool:
        return self.plan is None or self.plan.changes

    def line(self) -> str:
        where = f"packages on this host ({', '.join(self.environments)})"
        if self.plan is None:
            return f"{where}: cannot tell what installing {' '.join(self.missing)} would change ({self.unknown})"
        if not self.plan.changes:
            return f"{where}: {' '.join(self.asked)} installed already: nothing changes on this host"
        return f"{where}: installing {' '.join(self.missing)} (apt-get update, then install) {describe(self.plan)}"

    def as_dict(self) -> dict:
        return {
            "environments": list(self.environments),
            "asked": list(self.asked),
            "to_install": list(self.missing),
            **(self.plan.as_dict() if self.plan is not None else dict.fromkeys(UNPLANNED)),
            "unknown": self.unknown or None,
            "line": self.line(),
        }

    def fact(self, consent: str) -> dict:
        """The ``packages_plan`` run fact: the plan and how it was agreed to."""
        return {**self.as_dict(), "consent": consent}


def host_packages(study: Study) -> HostPackages | None:
    """The plan of the study's packages on this host; None when it installs
    none here (no such environment, or no package beyond isobench's own).
    Raises Refused (naming the study's label) where apt refuses them."""
    envs = tuple(name for name, spec in study.environments.items() if kind_of(spec.kind).installs_on_host)
    asked = beyond_own(p for c in plan(study, host_info()) for p in c.workload.added_packages()) if envs else ()
    if not asked:
        return None
    missing, found, error = _planned(tuple(asked))
    if error is not None and found is None and error.startswith("refused:"):
        raise Refused(f"apt cannot install them on this host ({error[len('refused:') :]}): drop them from packages")
    return HostPackages(envs, asked, missing, found, error or "")


@functools.lru_cache(maxsize=64)
def _planned(asked: tuple[str, ...]) -> tuple[tuple[str, ...], AptPlan | None, str | None]:
    """(what the host lacks, apt's plan for it with its new packages'
    services, why there is none), asked once per process for the same
    packages: apt takes 2 to 10 s a plan (reading the services a few more:
    the .debs are fetched), and a fleet or a test validates the same study's
    packages many times. The install re-checks its plan on fresh lists
    anyway (host.packages). A plan refused anyway fetches nothing."""
    missing = tuple(to_install(list(asked)))
    try:
        found = simulate(list(missing))
        return missing, found if touched(found, needed_packages()) else with_services(found), None
    except PlanError as exc:
        return missing, None, f"refused:{exc}" if exc.refused else str(exc)


def refusal(packages: HostPackages) -> str:
    """Why this plan is refused ("" if it is not): a removal, or an upgrade
    of what isobench needs, naming the study's package behind it."""
    if packages.plan is None:
        return ""
    needed = needed_packages()
    hit = touched(packages.plan, needed)
    if hit is None:
        return ""
    return f"{culprit(packages.missing, hit)} would {why_not(*hit, needed)}"


def culprit(names: tuple[str, ...], hit: tuple[str, str]) -> str:
    """Which of several packages makes the change (each one simulated
    alone); all of them when none does alone."""
    verb, package = hit
    for name in names if len(names) > 1 else ():
        try:
            alone = simulate([name])
        except PlanError:
            continue
        if package in {c.package for c in (alone.remove if verb == "remove" else alone.upgrade)}:
            return name
    return ", ".join(names)
