"""The registry of environment kinds.

A kind is one module of the envs package (or one package, like vm/) that
subclasses EnvKind: its name, its study-file model, its presets, how to
build an environment from a spec, whether this host can run it, what it
leaves behind and what it takes from the host. Subclassing registers it;
every module of the envs package is imported the first time the registry
is read, so the study model, the runner, preflight, clean and
`isobench envs` loop over the kinds and never name one.
"""

from __future__ import annotations

import abc
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

# EnvSpec, the base of every kind's study-file model, is defined beside
# Environment (which keeps one) and imported from here by the kinds
from isobench.core.owner import Keeper
from isobench.envs.base import Environment, EnvSpec
from isobench.host.hostinfo import Finding, HostInfo

# Every kind can be a group of identical instances (envs/group.py): N
# processes' worth of the host, N containers or N VMs, started one after
# another with the host's memory read between them (density). pin = true
# gives instance i its own core (i mod the host's cores) instead of leaving
# placement to the scheduler.
INSTANCES = Field(default=1, ge=1, le=64, description="identical instances (servers, containers, VMs)")
# true = "core"; "node": instance i gets NUMA node i mod nodes (all its CPUs)
Pin = bool | Literal["core", "node"]


@dataclass(frozen=True)
class EnvProbe:
    """One row of `isobench envs`: can this host run the kind, and why not."""

    name: str
    available: bool
    details: str


@dataclass(frozen=True)
class Footprint:
    """What one environment of a study takes from the host while all are up,
    or one environment's copy of a workload holds (preflight adds them up
    before anything starts)."""

    field: str  # the spec field or workload parameter that sets it, named in the error
    resource: str  # "memory" | "disk"
    bytes: int


class EnvKind(abc.ABC):
    """What every environment kind answers. Subclassing registers the kind
    (an abstract intermediate class, without a name, does not)."""

    name: ClassVar[str] = ""
    spec: ClassVar[type[EnvSpec]]
    # study-file shorthands: a table named after a preset needs no body
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    # the preset with the least isolation the kind allows ("" if none): beside
    # an environment that runs on the host itself, its change is the harness's
    # own bias (`isobench calibrate --seam` adds it)
    placebo: ClassVar[str] = ""
    # `isobench explain` (run/explainplan.py): the settings an environment of
    # this kind can be taken apart into, each the spec fields it moves together
    settings: ClassVar[dict[str, tuple[str, ...]]] = {}
    # the preset whose settings sit nearest the host itself: where explain
    # moves a setting when the baseline is of another kind ("" if none)
    host_side: ClassVar[str] = ""
    # where the kind is listed (study errors, presets, `isobench envs`)
    rank: ClassVar[int] = 100
    # the runner builds or reuses the Docker image before anything starts
    needs_image: ClassVar[bool] = False
    # a study's own packages are installed on the host itself (the kind runs
    # the host's programs): run asks first (run/hostpackages.py)
    installs_on_host: ClassVar[bool] = False
    # directories whose entries named "<run id>-..." are this kind's scratch
    scratch_roots: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.name:
            _register(cls())

    @abc.abstractmethod
    def make(
        self, name: str, spec: EnvSpec, *, run_id: str, host: HostInfo, image: str | None, index: int
    ) -> Environment:
        """One environment (instance `index` of its group) from a validated
        spec, which the environment keeps (Environment.spec) and reads."""

    def probe(self) -> EnvProbe:
        """Whether this host can run the kind; `isobench envs` prints it."""
        return EnvProbe(self.name, True, "")

    def check(self, spec: EnvSpec) -> list[tuple[str, str]]:
        """What stops this host from running a valid spec, found before
        anything starts: (spec field, one-line problem) pairs, empty if none."""
        return []

    def clean(self, run_id: str | None, keeper: Keeper) -> list[str]:
        """Remove this kind's leftovers (of one run, or all) other than its
        scratch_roots entries: processes, containers, volumes, but none that
        `keeper` keeps (a live run's). Returns what was removed, one line each."""
        return []

    def unsupported(self, spec: EnvSpec, workload: str) -> str | None:
        """Why an environment of this spec cannot run the named workload at
        all (a sandbox's known gap, seen on a real host), or None. Its cells
        are not run; `validate`, the run and the report say why."""
        return None

    def duet_problems(self, spec: EnvSpec, side_cpus: int) -> list[tuple[str, str]]:
        """What keeps an environment of this spec out of a duet whose sides
        have `side_cpus` host CPUs each (run/duet.py): (spec field, one-line
        problem) pairs, empty when it can take part. Default: the kind cannot
        be placed on chosen CPUs (Environment.place)."""
        return [
            ("kind", f'a {self.name} environment cannot be placed on chosen host CPUs; use schedule = "sequential"')
        ]

    def footprint(self, spec: EnvSpec) -> list[Footprint]:
        """What the environment holds of the host besides the workloads'
        inputs, for all its instances (a VM's guest memory)."""
        return []

    def host_readings(self) -> dict[str, Any]:
        """The host settings this kind depends on, read once for `isobench
        doctor` and every run's facts (cheap, bounded, never raising)."""
        return {}

    def host_findings(self, readings: dict[str, Any]) -> list[Finding]:
        """Pure judgement of host_readings(): each setting that biases this
        kind's results, with its fix."""
        return []


def placed_duet_problems(instances: int, own_placement: dict[str, object]) -> list[tuple[str, str]]:
    """The duet rule for kinds that can be placed: one instance, and no
    placement of its own (`own_placement`: field -> value; a set one would
    overlap the other side's CPUs)."""
    problems = []
    if instances != 1:
        problems.append(("instances", 'a duet runs one instance a side; use instances = 1 or schedule = "sequential"'))
    for name, value in own_placement.items():
        if value:
            problems.append(
                (
                    name,
                    f"a duet places each side on its own CPUs, which {name} = {value!r} would "
                    f'overlap; remove {name} or use schedule = "sequential"',
                )
            )
    return problems


def baseline_side(spec: EnvSpec, baseline: EnvSpec) -> EnvSpec:
    """The settings of ``spec``'s kind as the baseline has them (explain's
    baseline's side): the baseline itself when of the same kind, else the
    kind's host_side preset."""
    if baseline.kind == spec.kind:
        return baseline
    kind = kind_of(spec.kind)
    return kind.spec.model_validate({"kind": kind.name, **kind.presets.get(kind.host_side, {})})


Values = tuple[tuple[str, Any], ...]  # a setting's fields and their values


def differing(spec: EnvSpec, baseline: EnvSpec) -> list[tuple[str, Values, Values]]:
    """Each setting of ``spec``'s kind in which it differs from the
    baseline's side, in the kind's order: (setting, its values there, here)."""
    kind, side = kind_of(spec.kind), baseline_side(spec, baseline)
    mine, theirs = spec.model_dump(), side.model_dump()
    out = []
    for name, fields in kind.settings.items():
        here = tuple((f, mine[f]) for f in fields)
        there = tuple((f, theirs[f]) for f in fields)
        if here != there:
            out.append((name, there, here))
    return out


_REGISTRY: dict[str, EnvKind] = {}
_DISCOVERED: list[tuple[str, ...]] = []  # the envs package paths already imported


def _register(kind: EnvKind) -> None:
    fields = kind.spec.model_fields
    if "kind" not in fields or fields["kind"].default != kind.name or "instances" not in fields:
        raise TypeError(f"{type(kind).__name__}.spec must declare kind = {kind.name!r} and instances")
    unknown = [f for moved in kind.settings.values() for f in moved if f not in fields]
    if unknown or (kind.host_side and kind.host_side not in kind.presets):
        what = f"setting field {unknown[0]!r}" if unknown else f"host_side preset {kind.host_side!r}"
        raise TypeError(f"environment kind {kind.name!r}: {what} is not one of its own")
    taken = {p for other in _REGISTRY.values() if other.name != kind.name for p in other.presets}
    clash = taken & set(kind.presets)
    if clash:
        raise TypeError(f"environment kind {kind.name!r}: preset {sorted(clash)[0]!r} is another kind's")
    _REGISTRY[kind.name] = kind


def unregister(name: str) -> None:
    """Forget a kind (tests that register a throwaway one); the next read
    of the registry imports the envs package's modules afresh."""
    _REGISTRY.pop(name, None)
    _DISCOVERED.clear()


def discover() -> None:
    """Import every module of the envs package (once per package path), so
    every kind has registered itself."""
    import isobench.envs as package

    paths = tuple(package.__path__)
    if _DISCOVERED and _DISCOVERED[-1] == paths:
        return
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
    _DISCOVERED.append(paths)


def kinds() -> dict[str, EnvKind]:
    """Every registered kind by name, in rank order."""
    discover()
    return dict(sorted(_REGISTRY.items(), key=lambda item: item[1].rank))


def kind_of(name: str) -> EnvKind:
    try:
        return kinds()[name]
    except KeyError:
        raise ValueError(f"unknown environment kind {name!r}") from None


def presets() -> dict[str, dict[str, Any]]:
    """Every kind's presets, kinds in rank order; each names its kind."""
    return {preset: {"kind": kind.name, **body} for kind in kinds().values() for preset, body in kind.presets.items()}


def probe_all() -> list[EnvProbe]:
    return [kind.probe() for kind in kinds().values()]
