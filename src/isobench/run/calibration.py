"""The gate's accuracy on this host, measured: a study's environment run
beside copies of itself (A/A: nothing changed) and beside copies slowed by a
planted CPU quota of known size, then every primary cell's verdict counted.

Two pure halves around a real run: ``derive`` writes the calibration study
(the chosen environment as the baseline, its A/A copies, its slowed copies;
every other environment dropped), ``judge`` reads the stored run's Table I
and counts false alarms among the A/A cells and detections among the
planted ones. The planted slowdown is a CPU quota: every copy gets the same
quota Q (the environment's own ``cpus``, else ``cpus`` given here) and a
slowed copy gets Q x (1 - size), so CPU-bound work in it gets that much less
CPU time; what a quota does not slow (I/O waits, the network) shows as a
planted size the cell did not feel, which ``judge`` reports as the measured
slowdown beside the planted one.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass

import tomli_w

from isobench.core.ids import NAME_MAX
from isobench.results.model import RunData
from isobench.results.primary import primary_keys
from isobench.results.table import build_table
from isobench.study import StudyError, parse_study

QUOTA_FIELD = "cpus"  # the spec field a kind offers for a CPU quota
MAX_COPIES = 16
DEFAULT_SIZES = (5.0, 10.0, 20.0)
_AA = "-aa"
_SLOW = "-slow"


@dataclass(frozen=True)
class Plan:
    env: str
    sizes: tuple[float, ...]  # planted slowdowns, percent
    copies: int  # A/A copies of the environment
    quota: float  # CPUs every unslowed copy gets


def parse_sizes(text: str) -> tuple[float, ...]:
    """ "5,10,20" -> (5.0, 10.0, 20.0); each in (0, 90) percent."""
    sizes = []
    for part in text.split(","):
        try:
            size = float(part.strip().rstrip("%"))
        except ValueError:
            raise StudyError(f"--sizes: {part.strip()!r} is not a number; give percentages like 5,10,20") from None
        if not 0 < size < 90:
            raise StudyError(
                f"--sizes: {part.strip()} is outside (0, 90): a planted slowdown is a percentage above 0 and below 90"
            )
        sizes.append(size)
    if len(set(sizes)) != len(sizes):
        raise StudyError("--sizes: each planted size once")
    return tuple(sorted(sizes))


def _size_name(size: float) -> str:
    return f"{size:g}".replace(".", "p")


def derive(
    text: str, path: str, env: str | None, sizes: tuple[float, ...], copies: int, quota: float | None
) -> tuple[str, Plan]:
    """The calibration study's TOML text, and its plan. Refuses (StudyError,
    one line) an environment the study lacks or whose kind has no CPU quota."""
    study = parse_study(text, path)
    env = env or study.meta.baseline
    if env not in study.environments:
        raise StudyError(f"--env: {env!r} is not an environment of {path} ({', '.join(study.environments)})")
    spec = study.environments[env]
    if QUOTA_FIELD not in type(spec).model_fields:
        able = sorted({s.kind for s in study.environments.values() if QUOTA_FIELD in type(s).model_fields})
        raise StudyError(
            f"--env: {env} ({spec.kind}) has no CPU quota ({QUOTA_FIELD}) to plant a slowdown "
            f"with; choose an environment of kind {' or '.join(able) or 'docker'}"
        )
    if not 1 <= copies <= MAX_COPIES:
        raise StudyError(f"--copies: {copies} is outside 1 to {MAX_COPIES}")
    if not sizes:
        raise StudyError("--sizes: give at least one planted size")
    own = getattr(spec, QUOTA_FIELD)
    q = float(own if own is not None else (quota if quota is not None else 1.0))
    if not q > 0 or not math.isfinite(q):
        raise StudyError(f"--cpus: {q} must be a positive number of CPUs")
    body = spec.model_dump(mode="json", exclude_none=True)
    raw = tomllib.loads(text)
    meta = dict(raw["study"])
    suffix = "-calibrate"
    meta["name"] = study.meta.name[: NAME_MAX - len(suffix)].rstrip("-") + suffix
    meta["baseline"] = env
    meta["description"] = (
        f"calibration of {env}: {copies} A/A copies, planted CPU slowdowns of "
        f"{', '.join(f'{s:g}%' for s in sizes)} (quota {q:g} CPUs)"
    )
    envs = {env: {**body, QUOTA_FIELD: q}}
    for i in range(1, copies + 1):
        envs[f"{env}{_AA}{i}"] = {**body, QUOTA_FIELD: q}
    for size in sizes:
        envs[f"{env}{_SLOW}{_size_name(size)}"] = {**body, QUOTA_FIELD: round(q * (1 - size / 100), 4)}
    out = {"study": meta, "environments": envs, "workloads": raw.get("workloads", {})}
    if "noise" in raw:
        out["noise"] = raw["noise"]
    derived = "# written by isobench calibrate from " + path + "\n" + tomli_w.dumps(out)
    parse_study(derived, f"{path} (calibration)")  # what we wrote must be a study we can run
    return derived, Plan(env, sizes, copies, q)


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

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else math.nan


@dataclass(frozen=True)
class Calibration:
    run_id: str
    env: str
    rates: tuple[Rate, ...]  # A/A first, then planted sizes ascending

    def as_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "env": self.env,
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
                }
                for r in self.rates
            ],
        }


def _role_of(env: str, base: str) -> float | None:
    """0 for an A/A copy, the planted size for a slowed copy, None otherwise."""
    if re.fullmatch(re.escape(base + _AA) + r"[0-9]+", env):
        return 0.0
    m = re.fullmatch(re.escape(base + _SLOW) + r"([0-9]+(?:p[0-9]+)?)", env)
    return float(m[1].replace("p", ".")) if m else None


def wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def judge(run: RunData) -> Calibration:
    """Count, over the run's primary cells, A/A copies called changed (false
    alarms) and slowed copies called changed for the worse (detections)."""
    primaries = set(primary_keys(run))
    table = build_table(run)
    groups: dict[float, list] = {}
    for row in table.rows:
        if row.key not in primaries:
            continue
        for cell in row.cells:
            planted = _role_of(cell.env, run.baseline)
            if planted is None or cell.verdict is None or not cell.verdict.effect.tested:
                continue
            groups.setdefault(planted, []).append((row.key, cell.verdict))
    rates = []
    for planted in sorted(groups):
        pairs = groups[planted]
        hit = [v.changed and (planted == 0 or v.direction == "worse") for _, v in pairs]
        low, high = wilson(sum(hit), len(hit))
        measured = sorted(v.overhead_pct for _, v in pairs)
        mid = measured[len(measured) // 2] if measured else math.nan
        rates.append(
            Rate(
                "A/A" if planted == 0 else f"planted {planted:g}%",
                planted,
                sum(hit),
                len(hit),
                low,
                high,
                mid,
                tuple(f"{k.case} {k.metric}: {v.text}" for k, v in pairs),
            )
        )
    return Calibration(run.run_id, run.baseline, tuple(rates))
