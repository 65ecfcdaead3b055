"""The gate's accuracy on this host, measured: a study's environment run
beside copies of itself (A/A: nothing changed) and beside slowed copies
whose slowdown is planted with a known size, then every primary cell's
verdict counted.

Two pure halves around a real run: ``derive`` writes the calibration study
(the chosen environment as the baseline, its A/A copies, its slowed copies;
every other environment dropped), ``judge`` reads the stored run's Table I
and counts false alarms among the A/A cells and detections among the
planted ones, each plant's delivered size beside its planted one.

Two kinds of plant. ``work`` (the default): a slowed copy does a known
extra share of the same work in each sample and counts only the base work
(the study's ``plants``, Workload.planted), so its rate falls by the
planted size whatever the host's scheduler does. ``quota``: every copy gets
the same CPU quota Q (the environment's own ``cpus``, else ``cpus`` given
here) and a slowed copy Q x (1 - size); what that delivers depends on how
much CPU time the copy would have had anyway (a vCPU descheduled part of
the time loses less to it), which the delivered size shows.

With ``seam``, one more copy: the placebo (the least isolation a container
kind allows, EnvKind.placebo) beside a baseline on the host itself. Nothing
is left between them to cost anything, so its comparison, "A/A across the
seam", is read apart from the A/A copies': what the gate calls there is the
harness's own bias between the two kinds (results/placebo.py).
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import asdict, dataclass

import tomli_w

from isobench.core.ids import NAME_MAX
from isobench.core.plants import CannotPlant, plant_problem, rate_slowdown
from isobench.envs.kinds import kind_of, kinds
from isobench.results.model import RunData
from isobench.results.placebo import bias_cells
from isobench.results.primary import primary_keys
from isobench.results.table import Table, build_table
from isobench.study import Study, StudyError, parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import NO_HOST

QUOTA_FIELD = "cpus"  # the spec field a kind offers for a CPU quota
PLANT_KINDS = ("work", "quota")
# each copy is one more idle environment (a container: a few MB); 20 A/A
# comparisons of a one-case study need 20 copies
MAX_COPIES = 32
DEFAULT_SIZES = (5.0, 10.0, 20.0)
_AA = "-aa"
_SLOW = "-slow"


@dataclass(frozen=True)
class Plan:
    env: str
    sizes: tuple[float, ...]  # planted slowdowns, percent
    copies: int  # A/A copies of the environment
    quota: float | None  # CPUs every unslowed copy gets (quota plants); None for work plants
    plant: str = "work"  # work | quota
    plants: int = 1  # slowed copies per planted size
    seam: str | None = None  # the placebo copy's name (A/A across the seam), if any


def parse_sizes(text: str) -> tuple[float, ...]:
    """ "5,10,20" -> (5.0, 10.0, 20.0); each in (0, 50] percent (core.plants)."""
    sizes = []
    for part in text.split(","):
        try:
            size = float(part.strip().rstrip("%"))
        except ValueError:
            raise StudyError(f"--sizes: {part.strip()!r} is not a number; give percentages like 5,10,20") from None
        if plant_problem(size):
            raise StudyError(f"--sizes: {plant_problem(size)}")
        sizes.append(size)
    if len(set(sizes)) != len(sizes):
        raise StudyError("--sizes: each planted size once")
    return tuple(sorted(sizes))


def _size_name(size: float) -> str:
    return f"{size:g}".replace(".", "p")


def slowed_names(env: str, size: float, plants: int) -> list[str]:
    """ENV-slow5 for one plant of 5%, ENV-slow5-1 ... ENV-slow5-N for N."""
    name = f"{env}{_SLOW}{_size_name(size)}"
    return [name] if plants == 1 else [f"{name}-{i}" for i in range(1, plants + 1)]


def derive(
    text: str,
    path: str,
    env: str | None,
    sizes: tuple[float, ...],
    copies: int,
    quota: float | None,
    plant: str = "work",
    plants: int = 1,
    seam: bool = False,
) -> tuple[str, Plan]:
    """The calibration study's TOML text, and its plan. Refuses (StudyError,
    one line) an environment the study lacks, a workload that cannot plant
    work (work plants), an environment whose kind has no CPU quota (quota)
    or one that is not on the host itself (seam)."""
    study = parse_study(text, path)
    env = env or study.meta.baseline
    if env not in study.environments:
        raise StudyError(f"--env: {env!r} is not an environment of {path} ({', '.join(study.environments)})")
    if not 1 <= copies <= MAX_COPIES:
        raise StudyError(f"--copies: {copies} is outside 1 to {MAX_COPIES}")
    if not 1 <= plants <= MAX_COPIES:
        raise StudyError(f"--plants: {plants} is outside 1 to {MAX_COPIES}")
    if not sizes:
        raise StudyError("--sizes: give at least one planted size")
    if plant not in PLANT_KINDS:
        raise StudyError(f"--plant: {plant!r} is not a kind of plant; give {' or '.join(PLANT_KINDS)}")
    q = _quota(study, env, quota) if plant == "quota" else None
    body = study.environments[env].model_dump(mode="json", exclude_none=True)
    same = {**body, QUOTA_FIELD: q} if q is not None else body
    raw = tomllib.loads(text)
    meta = dict(raw["study"])
    suffix = "-calibrate"
    meta["name"] = study.meta.name[: NAME_MAX - len(suffix)].rstrip("-") + suffix
    meta["baseline"] = env
    how = f"CPU quota, {q:g} CPUs unslowed" if q is not None else "extra work"
    meta["description"] = (
        f"calibration of {env}: {copies} A/A copies, {plants} planted slowdown(s) of "
        f"{', '.join(f'{s:g}%' for s in sizes)} each ({how})"
    )
    envs = {env: same, **{f"{env}{_AA}{i}": same for i in range(1, copies + 1)}}
    placebo = _seam_copy(study, env, body) if seam else None
    if placebo is not None:
        envs[placebo[0]] = placebo[1]
        meta["description"] += f", and {placebo[0]} beside it (A/A across the seam)"
    planted = {}
    for size in sizes:
        for name in slowed_names(env, size, plants):
            if q is not None:
                envs[name] = {**body, QUOTA_FIELD: round(q * (1 - size / 100), 4)}
            else:
                envs[name], planted[name] = body, size
    if planted:
        _check_work(study, sizes)
        meta["plants"] = planted
    out = {"study": meta, "environments": envs, "workloads": raw.get("workloads", {})}
    if "noise" in raw:
        out["noise"] = raw["noise"]
    derived = "# written by isobench calibrate from " + path + "\n" + tomli_w.dumps(out)
    parse_study(derived, f"{path} (calibration)")  # what we wrote must be a study we can run
    return derived, Plan(env, sizes, copies, q, plant, plants, placebo[0] if placebo else None)


def _seam_copy(study: Study, env: str, body: dict) -> tuple[str, dict]:
    """The first kind's placebo preset (its name and body), placed as the
    baseline is (its pin, its instances, where the placebo's kind has them).
    Only beside an environment on the host itself (a kind that runs the
    host's own programs): against anything else it would not read zero."""
    kind = study.environments[env].kind
    if not kind_of(kind).installs_on_host:
        raise StudyError(
            f"--seam: {env} ({kind}) is not on the host itself; A/A across the seam compares a placebo "
            "container with such an environment: calibrate one (--env NAME), or leave --seam out"
        )
    for other in kinds().values():
        if other.placebo:
            placed = {k: v for k, v in body.items() if k in other.spec.model_fields and k != "kind"}
            return other.placebo, {"kind": other.name, **placed, **other.presets[other.placebo]}
    raise StudyError("--seam: no environment kind offers a placebo")


def _quota(study: Study, env: str, quota: float | None) -> float:
    """The CPU quota every unslowed copy gets: the environment's own, else ``quota``, else 1."""
    spec = study.environments[env]
    if QUOTA_FIELD not in type(spec).model_fields:
        able = sorted({s.kind for s in study.environments.values() if QUOTA_FIELD in type(s).model_fields})
        raise StudyError(
            f"--env: {env} ({spec.kind}) has no CPU quota ({QUOTA_FIELD}) to plant a slowdown "
            f"with; choose an environment of kind {' or '.join(able) or 'docker'}, or --plant work"
        )
    own = getattr(spec, QUOTA_FIELD)
    q = float(own if own is not None else (quota if quota is not None else 1.0))
    if not q > 0 or not math.isfinite(q):
        raise StudyError(f"--cpus: {q} must be a positive number of CPUs")
    return q


def _check_work(study: Study, sizes: tuple[float, ...]) -> None:
    """Every workload can do each planted size's extra work (Workload.planted)."""
    for entry in study.workloads:
        for size in sizes:
            try:
                WORKLOADS[entry.workload](entry.params, NO_HOST).planted(size)
            except CannotPlant as exc:
                raise StudyError(f"--plant work: workloads.{entry.key}: {exc}; or --plant quota") from None


@dataclass(frozen=True)
class Planted:
    """One plant: a slowed copy's primary cell, its planted and delivered size."""

    env: str
    cell: str  # "workload case metric"
    planted_pct: float  # as built (a command's whole runs); the asked size for a quota
    delivered_pct: float  # its rate's slowdown against the A/A copies' in the same row
    found: bool  # called changed for the worse
    text: str  # the verdict's text


@dataclass(frozen=True)
class Rate:
    label: str  # "A/A" or "planted 10%"
    planted_pct: float  # 0 for A/A
    hits: int  # false alarms (A/A) or detections (planted)
    n: int  # primary cells compared
    low: float  # 95% Wilson interval of hits / n
    high: float
    measured_pct: float  # median measured slowdown of those cells (overhead, %)
    cells: tuple[str, ...]  # "case metric: verdict text" per cell
    plants: tuple[Planted, ...] = ()  # each plant (planted sizes only)

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else math.nan

    @property
    def delivered_pct(self) -> float:
        """The plants' median delivered size (nan for A/A)."""
        return _median([p.delivered_pct for p in self.plants])

    @property
    def delivered_range(self) -> tuple[float, float]:
        got = [p.delivered_pct for p in self.plants if not math.isnan(p.delivered_pct)]
        return (min(got), max(got)) if got else (math.nan, math.nan)


@dataclass(frozen=True)
class SeamCell:
    """One primary cell of the placebo beside the baseline: Table I's change and interval."""

    cell: str  # "workload case metric"
    change_pct: float
    low_pct: float  # nan when untested
    high_pct: float
    called: bool  # the gate called it changed, either way
    text: str  # the verdict's text


@dataclass(frozen=True)
class Seam:
    """A/A across the seam: the placebo's cells, counted as the A/A copies' are."""

    env: str
    rate: Rate
    cells: tuple[SeamCell, ...]

    def as_dict(self) -> dict:
        r = self.rate
        return {
            "env": self.env,
            **{"hits": r.hits, "n": r.n, "rate": r.rate, "low": r.low, "high": r.high, "measured_pct": r.measured_pct},
            "cells": [asdict(c) for c in self.cells],
        }


@dataclass(frozen=True)
class Calibration:
    run_id: str
    env: str
    rates: tuple[Rate, ...]  # A/A first, then planted sizes ascending
    plant: str = "quota"  # work | quota: how the slowed copies were slowed
    seam: Seam | None = None  # the placebo beside the baseline (calibrate --seam)

    def as_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "env": self.env,
            "plant": self.plant,
            **({"seam": self.seam.as_dict()} if self.seam else {}),
            "rates": [
                {
                    "label": r.label,
                    "planted_pct": r.planted_pct,
                    "hits": r.hits,
                    "n": r.n,
                    "rate": r.rate,
                    "low": r.low,
                    "high": r.high,
                    "measured_pct": r.measured_pct,
                    **({"delivered_pct": r.delivered_pct} if r.plants else {}),
                    "plants": [
                        {
                            "env": p.env,
                            "cell": p.cell,
                            "planted_pct": p.planted_pct,
                            "delivered_pct": p.delivered_pct,
                            "found": p.found,
                        }
                        for p in r.plants
                    ],
                }
                for r in self.rates
            ],
        }


def _role_of(env: str, base: str) -> float | None:
    """0 for an A/A copy, the planted size for a slowed copy, None otherwise."""
    if re.fullmatch(re.escape(base + _AA) + r"[0-9]+", env):
        return 0.0
    m = re.fullmatch(re.escape(base + _SLOW) + r"([0-9]+(?:p[0-9]+)?)(?:-[0-9]+)?", env)
    return float(m[1].replace("p", ".")) if m else None


def wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def _median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return math.nan
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def delivered(planted: float, aa: list[float]) -> float:
    """A plant's delivered size, percent: its rate's slowdown against the
    baseline (rate_slowdown of its overhead) taken relative to the median
    A/A copy's in the same row, so what every copy shows beside the
    baseline (a side's bias, drift) is not counted as planted. Pure."""
    base = _median(aa)
    base = 0.0 if math.isnan(base) else base
    return (1.0 - (1.0 - planted / 100.0) / (1.0 - base / 100.0)) * 100.0


def built_sizes(run: RunData) -> dict[tuple[str, str], float]:
    """(workload key, environment) -> the slowdown its planted copy carries
    as built (Workload.plant_pct), for a run planted with work; empty for
    quota plants (and a study that no longer parses)."""
    try:
        study = parse_study(run.study_text, run.run_id)
    except StudyError:
        return {}
    out = {}
    for entry in study.workloads:
        for env, pct in study.meta.plants.items():
            try:
                out[(entry.key, env)] = WORKLOADS[entry.workload](entry.params, NO_HOST).planted(pct).plant_pct
            except CannotPlant:
                continue
    return out


def judge(run: RunData) -> Calibration:
    """Count, over the run's primary cells, A/A copies called changed (false
    alarms) and slowed copies called changed for the worse (detections),
    with each plant's delivered size."""
    primaries = set(primary_keys(run))
    built = built_sizes(run)
    groups: dict[float, list] = {}
    plants: dict[float, list[Planted]] = {}
    table = build_table(run)
    for row in table.rows:
        if row.key not in primaries:
            continue
        tested = [
            (planted, cell.env, cell.verdict)
            for cell in row.cells
            if (planted := _role_of(cell.env, run.baseline)) is not None
            and cell.verdict is not None
            and cell.verdict.effect.tested
        ]
        aa = [_slowdown(v) for planted, _, v in tested if planted == 0]
        k = row.key
        for planted, env, v in tested:
            groups.setdefault(planted, []).append((k, v))
            if planted:
                found = v.changed and v.direction == "worse"
                size = built.get((k.workload, env), planted)
                got = delivered(_slowdown(v), aa)
                plants.setdefault(planted, []).append(
                    Planted(env, f"{k.workload} {k.case} {k.metric}", size, got, found, v.text)
                )
    rates = []
    for planted in sorted(groups):
        pairs = groups[planted]
        hit = [v.changed and (planted == 0 or v.direction == "worse") for _, v in pairs]
        low, high = wilson(sum(hit), len(hit))
        rates.append(
            Rate(
                "A/A" if planted == 0 else f"planted {planted:g}%",
                planted,
                sum(hit),
                len(hit),
                low,
                high,
                _median([v.overhead_pct for _, v in pairs]),
                tuple(f"{k.case} {k.metric}: {v.text}" for k, v in pairs),
                tuple(plants.get(planted, ())),
            )
        )
    return Calibration(run.run_id, run.baseline, tuple(rates), "work" if built else "quota", seam_of(run, table))


SEAM_LABEL = "A/A across the seam"


def seam_of(run: RunData, table: Table) -> Seam | None:
    """The run's first placebo beside its baseline, its primary cells as the
    gate judged them in Table I; None when the run has none."""
    placebos = bias_cells(run, table)
    if not placebos:
        return None
    env, cells_judged = next(iter(placebos.items()))
    judged = [(k, v) for k, v in cells_judged if v.effect.tested]  # as the A/A copies' are counted
    cells = tuple(
        SeamCell(f"{k.workload} {k.case} {k.metric}", v.pct, v.pct_low, v.pct_high, v.changed, v.text)
        for k, v in judged
    )
    hits = sum(c.called for c in cells)
    low, high = wilson(hits, len(cells))
    overheads = [v.overhead_pct for _, v in judged]
    texts = tuple(f"{k.case} {k.metric}: {v.text}" for k, v in judged)
    return Seam(env, Rate(SEAM_LABEL, 0.0, hits, len(cells), low, high, _median(overheads), texts), cells)


def _slowdown(v) -> float:
    return rate_slowdown(v.overhead_pct, v.effect.higher_is_better)
