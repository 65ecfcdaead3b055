"""What a study's planned rounds can resolve on this host, said before it
starts (`validate`, `run`): from the host-noise pilot (isobench.checks.noisepilot),
the study's rounds and the number of cells its Table I compares
(docs/statistics.md#host-noise).

Table I answers with the primary metrics of every workload case in every
environment against the baseline, paired by round (n - 1 df at n rounds),
and corrects over those m cells (the descriptive metrics are a family of
their own, results/primary.py): with nothing changed its intervals are at level
1 - alpha/m, and an adaptive study's K looks make that alpha/K instead of
alpha. The pilot's A/A pairs give the per-round log-ratio SD of its kernels,
which stands in for each cell's own. At the study's n rounds, then:

* the change found 4 times in 5: ``verdicts.detectable_change(sd, n, q)``;
* the rounds after which every cell is changed or ±tol equivalent:
  ``verdicts.rounds_to_resolve(sd, q, tol)``, the rule an inconclusive
  cell's "about N rounds would resolve" uses;

with q = alpha/(K·m). Cells of workloads that declare themselves I/O-bound
(``Workload.io_bound``) use the pilot's I/O figure, every other cell the
CPU one. A workload can be noisier than the pilot's kernels: the line says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from isobench.analysis.budget import Plan
from isobench.analysis.repetitions import sequential_alpha
from isobench.analysis.stats import ALPHA
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP, change_text, detectable_change, findable, rounds_to_resolve
from isobench.checks.noisepilot import ABOUT_S, MAX_AGE_S, KernelNoise, Pilot, fmt_noise
from isobench.checks.preflight import StudySize
from isobench.checks.preflight import budget_rounds as preflight_budget_rounds
from isobench.host.hostinfo import HostInfo
from isobench.results.numbers import rounds_text
from isobench.study import Study
from isobench.workloads import WORKLOADS


@dataclass(frozen=True)
class Compared:
    """The cells Table I will compare with the baseline."""

    cells: int  # m: primary metrics x cases (x noise steps) x non-baseline environments that run them
    io_cells: int  # of them, those of I/O-bound workloads
    io_workloads: tuple[str, ...]  # their keys in the study
    duet_cells: int = 0  # of the others, those that run as duets (schedule = "duet")
    duet_workloads: tuple[str, ...] = ()


def compared_cells(study: Study, host: HostInfo) -> Compared:
    steps = len(study.noise.steps) if study.noise is not None else 1
    skip = study.unsupported()
    baseline = study.meta.baseline
    cells = io_cells = duet_cells = 0
    io_keys, duet_keys = [], []
    for entry in study.workloads:
        if (baseline, entry.key) in skip:
            continue  # no baseline cell: nothing of it is compared
        envs = [e for e in study.environments if e != baseline and (e, entry.key) not in skip]
        workload = WORKLOADS[entry.workload](entry.params, host)
        # a case that declares no primary gets one by role (results/primary.py)
        rows = sum(max(len(workload.primaries(case)), 1) for case in workload.cases()) * steps
        cells += rows * len(envs)
        if workload.io_bound and envs:
            io_cells += rows * len(envs)
            io_keys.append(entry.key)
        elif study.meta.schedule == "duet" and (workload.duets or workload.duet_mode() in ("auto", "true")) and envs:
            duet_cells += rows * len(envs)
            duet_keys.append(entry.key)
    return Compared(cells, io_cells, tuple(io_keys), duet_cells, tuple(duet_keys))


@dataclass(frozen=True)
class Resolution:
    """What one noise figure allows at the study's rounds."""

    noise_sd: float
    rounds: int
    change_pct: float  # found 4 times in 5 at ``rounds`` (inf: nothing can be)
    rounds_needed: int | None  # to resolve ±tol; > ROUNDS_NEEDED_CAP means beyond the cap
    tol_pct: float


def resolve(noise_sd: float, rounds: int, q: float, tol_pct: float) -> Resolution:
    change = detectable_change(noise_sd, rounds, q)
    change_pct = math.expm1(change) * 100 if change < 700 else math.inf  # exp would overflow
    return Resolution(noise_sd, rounds, change_pct, rounds_to_resolve(noise_sd, q, tol_pct), tol_pct)


def _needs_text(r: Resolution, size: StudySize) -> str:
    tol = f"\u00b1{r.tol_pct:g}%"
    n = r.rounds_needed
    if n is None:
        return ""
    if n > ROUNDS_NEEDED_CAP:
        return f"{tol} equivalence is out of reach here (more than {ROUNDS_NEEDED_CAP} rounds)"
    if n <= r.rounds:
        return f"{tol} equivalence needs about {n} rounds, within the planned {r.rounds}"
    # said as the run's inconclusive cells say it, at the study's own estimate of a round
    return f"{tol} equivalence needs {rounds_text(n, size.round_s, ROUNDS_NEEDED_CAP, size.warmup, size.fixed_s)}"


def budget_rounds(plan: Plan, size: StudySize, warmup: int) -> int:
    """Measured rounds of every case the budget pays for, by the study's own
    estimate (``preflight.budget_rounds``: the figure its size line says)."""
    return preflight_budget_rounds(plan, size.round_s, size.fixed_s, warmup)


@dataclass(frozen=True)
class Outlook:
    """What the planned rounds can resolve, per noise figure: ``groups``
    (the figure's resolution, what it is called), CPU-bound cells first;
    empty when the host's noise was not measured lately."""

    at: str  # "at 5 rounds", "in the 30m budget (...)"
    rounds: int
    looks: int
    cells: int
    groups: tuple[tuple[Resolution, str, str], ...]  # (resolution, noise named, which cells; "" for the rest)

    def resolves_nothing(self) -> bool:
        """No cell can resolve at the study's size: under every noise figure
        only changes beyond what is printed (+999%) can be found, and ±tol
        equivalence needs more rounds than planned. False when unknown (no
        pilot, no cell compared)."""
        return bool(self.groups) and all(
            change_text(r.change_pct).startswith(">") and (r.rounds_needed is None or r.rounds_needed > r.rounds)
            for r, _, _ in self.groups
        )


def outlook(study: Study, size: StudySize, compared: Compared, pilot: Pilot | None) -> Outlook:
    """The study's planned rounds (a budget's: what it pays for) against the
    pilot's noise, at q = alpha/(K·m)."""
    meta = study.meta
    rounds = meta.planned_rounds
    at = f"at {'up to ' if meta.adaptive else ''}{rounds} rounds"
    plan = study.budget_plan()
    looks = meta.adaptive_schedule.looks if meta.adaptive else 1
    if plan is not None:
        rounds, looks = budget_rounds(plan, size, meta.warmup), plan.looks
        at = f"in the {meta.budget} budget (about {rounds} rounds of every case, more for the cases still open)"
    m = compared.cells
    if m == 0 or pilot is None or not pilot.kernels:
        return Outlook(at, rounds, looks, m, ())
    q = sequential_alpha(looks, alpha=ALPHA) / m
    cpu, duet, io = pilot.noise("cpu"), pilot.noise("cpu-duet"), pilot.noise("io")
    lent = cpu or io
    assert lent is not None  # the pilot's kernels are cpu, io or both
    # a kernel that did not run lends the other's figure, said so
    groups: list[tuple[KernelNoise, str, str]] = []
    if m > compared.io_cells + compared.duet_cells:
        figure = cpu or lent
        groups.append((figure, f"{figure.label} noise {fmt_noise(figure.sd)}", ""))
    if compared.duet_cells:
        figure = duet or cpu or lent
        named = f"{figure.label} noise {fmt_noise(figure.sd)}" + ("" if duet else ", the duet's not measured")
        groups.append((figure, named, f"duets {', '.join(compared.duet_workloads)}"))
    if compared.io_cells:
        figure = io or lent
        named = (
            f"I/O noise {fmt_noise(figure.sd)}"
            if io is not None
            else f"I/O not measured, {figure.label} noise {fmt_noise(figure.sd)}"
        )
        groups.append((figure, named, f"I/O-bound {', '.join(compared.io_workloads)}"))
    return Outlook(
        at,
        rounds,
        looks,
        m,
        tuple((resolve(f.sd, rounds, q, meta.tolerance_pct), named, cells) for f, named, cells in groups),
    )


def resolution_lines(study: Study, size: StudySize, compared: Compared, pilot: Pilot | None, now: float) -> list[str]:
    """Two lines: what the planned rounds can find here and the rounds
    ±tolerance equivalence needs (CPU-bound cells, then I/O-bound ones),
    and that a workload can be noisier than the pilot; nothing when no cell
    is compared."""
    if compared.cells == 0:
        return []
    return one_round_warning(study) + _noise_lines(study, size, compared, pilot, now)


def one_round_warning(study: Study) -> list[str]:
    """A study measured once per cell compares nothing: said before it runs."""
    meta = study.meta
    if meta.adaptive or meta.budget is not None or meta.repetitions != 1:
        return []
    return [
        "warning: repetitions = 1: one round per cell gives no interval and no paired test, so every "
        "comparison is inconclusive; give repetitions = 2 at least (7 or more to resolve a few percent)"
    ]


def _noise_lines(study: Study, size: StudySize, compared: Compared, pilot: Pilot | None, now: float) -> list[str]:
    o = outlook(study, size, compared, pilot)
    if not o.groups:
        return [
            f"host noise not measured here lately, so what {o.at.split(' ', 1)[1]} can resolve is unknown: "
            f"`isobench doctor` measures it (about {ABOUT_S} s); `isobench run` does before its first round"
        ]
    assert pilot is not None  # groups come from its figures
    (r, named, cells), *rest = o.groups
    if not rest and cells:
        named += f", {cells}"
    first = (
        f"{o.at} this host can find {findable(r.change_pct)} ({named}, {o.cells} cells compared"
        + (f", tested at alpha/{o.looks} for {o.looks} looks" if o.looks > 1 else "")
        + ")"
    )
    needs = _needs_text(r, size)
    first += f"; {needs}" if needs else ""
    for r, named, cells in rest:
        needs = _needs_text(r, size).replace(" equivalence", "")
        first += f"; {cells} ({named}): about {change_text(r.change_pct)}" + (f", and {needs}" if needs else "")
    age = pilot.when(now) + ("" if pilot.age_s(now) < MAX_AGE_S else "; `isobench doctor --fresh` measures again")
    second = (
        f"a workload can be noisier than the pilot's kernels ({age}): its inconclusive cells then "
        "say the rounds its own noise needs"
    )
    return [first, second]
