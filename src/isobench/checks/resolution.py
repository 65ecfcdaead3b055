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
* the rounds after which every cell is changed or ±tol equivalent 4 times
  in 5, allowing for the pilot's SD being an estimate (its pairs - 1 df):
  ``analysis.suggest``, the rule an inconclusive cell's "about N rounds
  would resolve" uses, at a fixed study's level alpha/m (an adaptive
  one's own alpha/(K·m)) and, for a `--budget`, at its looks' alpha/(K·m)
  and the first look reaching them;

with q = alpha/(K·m). Cells of workloads that declare themselves I/O-bound
(``Workload.io_bound``) use the pilot's I/O figure, every other cell the
CPU one. A workload can be noisier than the pilot's kernels: the line says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import t as student_t

from isobench.analysis.budget import Plan
from isobench.analysis.repetitions import sequential_alpha
from isobench.analysis.settle import SETTLE_TEXT
from isobench.analysis.stats import ALPHA
from isobench.analysis.suggest import Looks, Noise, Pace, Suggestion, looks_of, suggest
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP, change_text, detectable_change, findable
from isobench.checks.noisepilot import ABOUT_S, MAX_AGE_S, KernelNoise, Pilot, fmt_noise
from isobench.checks.pilotkernels import PAIRS
from isobench.checks.preflight import StudySize
from isobench.checks.preflight import budget_rounds as preflight_budget_rounds
from isobench.host.hostinfo import HostInfo
from isobench.results.suggestion import suggestion_text
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
        # a case the study's primary list leaves out is descriptive: none of its cells counts
        rows = sum(len(workload.primaries(case)) for case in workload.cases()) * steps
        cells += rows * len(envs)
        if workload.io_bound and envs:
            io_cells += rows * len(envs)
            io_keys.append(entry.key)
        elif study.meta.schedule == "duet" and workload.may_duet() and envs:
            duet_cells += rows * len(envs)
            duet_keys.append(entry.key)
    return Compared(cells, io_cells, tuple(io_keys), duet_cells, tuple(duet_keys))


PILOT_DF = PAIRS - 1  # the pilot's SD, from its pairs


@dataclass(frozen=True)
class Resolution:
    """What one noise figure allows at the study's rounds."""

    noise_sd: float
    rounds: int
    change_pct: float  # found 4 times in 5 at ``rounds`` (inf: nothing can be)
    # the rounds that resolve ±tol 4 times in 5 as the study runs: a fixed or
    # adaptive study's at its own level, a budgeted one's first look reaching
    # them at its looks' level; > ROUNDS_NEEDED_CAP means beyond the cap
    rounds_needed: int | None
    tol_pct: float
    suggestion: Suggestion | None = None  # and how it is said: analysis.suggest
    budgeted: bool = False


def resolve(
    noise_sd: float,
    rounds: int,
    q: float,
    tol_pct: float,
    df: float = PILOT_DF,
    design: Design | None = None,
) -> Resolution:
    """The change found at ``rounds`` and level 1 - q, and the rounds that
    settle ±tol at the noise ``noise_sd`` estimated on ``df`` degrees of
    freedom (the pilot's pairs - 1), as ``design`` runs them (a fixed run's
    at q when None)."""
    change = detectable_change(noise_sd, rounds, q)
    change_pct = math.expm1(change) * 100 if change < 700 else math.inf  # exp would overflow
    d = design or Design(q)
    s = suggest(Noise(noise_sd, df), d.q, tol_pct, d.looks, d.pace)
    needed = s.rounds
    if d.budgeted:
        needed = s.budget.look if s.budget is not None else ROUNDS_NEEDED_CAP + 1
    return Resolution(noise_sd, rounds, change_pct, needed, tol_pct, s, d.budgeted)


@dataclass(frozen=True)
class Design:
    """How the study would run the rounds a suggestion names: ``q`` the
    level its fixed rounds are said at (a fixed study's alpha/m, an adaptive
    one's own alpha/(K·m)), ``looks`` a `--budget` run's (None: the study
    cannot take one), ``budgeted`` whether the study has a budget, ``pace``
    its own estimate of a round."""

    q: float
    looks: Looks | None = None
    budgeted: bool = False
    pace: Pace | None = None


def _needs_text(r: Resolution) -> str:
    tol = f"\u00b1{r.tol_pct:g}%"
    n, s = r.rounds_needed, r.suggestion
    if n is None or s is None:
        return ""
    if n > ROUNDS_NEEDED_CAP or s.beyond_cap:
        return f"{tol} equivalence is out of reach here (more than {ROUNDS_NEEDED_CAP} rounds)"
    b = s.budget
    if r.budgeted and b is not None:
        reach = f"about {b.rounds} rounds at its looks' alpha/{b.looks} ({SETTLE_TEXT}), its look at {b.look}"
        if n <= r.rounds:
            return f"{tol} equivalence needs {reach}, within the budget"
        if b.budget is None:
            return f"{tol} equivalence needs {reach}" + (": more than any --budget (24h)" if b.beyond_24h else "")
        cap = f" with max_repetitions = {b.max_repetitions}" if b.max_repetitions else ""
        return f"{tol} equivalence needs {reach}: --budget {b.budget}{cap}"
    if n <= r.rounds:
        return f"{tol} equivalence needs about {n} rounds ({SETTLE_TEXT}), within the planned {r.rounds}"
    # said as the run's inconclusive cells say it, at the study's own estimate of a round
    return f"{tol} equivalence needs {suggestion_text(s)}"


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
    q: float = ALPHA  # the level its intervals are said at: alpha/(K·m)

    def blind(self, pct: float, runs: int = 2) -> list[tuple[str, str, float]]:
        """(noise named, cells, expected half-width %) of each figure whose
        interval is expected wider than ±pct at the planned rounds: what
        `compare --require-resolution PCT` of ``runs`` such runs would call blind."""
        out = []
        for r, named, cells in self.groups:
            width = expected_half_width_pct(r.noise_sd, r.rounds, self.q, runs)
            if width > pct:
                out.append((named, cells, width))
        return out

    def resolves_nothing(self) -> bool:
        """No cell can resolve at the study's size: under every noise figure
        only changes beyond what is printed (+999%) can be found, and ±tol
        equivalence needs more rounds than planned. False when unknown (no
        pilot, no cell compared)."""
        return bool(self.groups) and all(
            change_text(r.change_pct).startswith(">") and (r.rounds_needed is None or r.rounds_needed > r.rounds)
            for r, _, _ in self.groups
        )


def expected_half_width_pct(noise_sd: float, rounds: int, q: float, runs: int = 1) -> float:
    """Pure: the half-width (percent) a paired interval at level 1 - q is
    expected to have after ``rounds`` rounds at per-round log-ratio SD
    ``noise_sd``; ``runs`` 2 for a compare of two such runs, each run's mean
    carrying its own noise (sqrt 2 wider). inf under 2 rounds."""
    if rounds < 2 or not q > 0:
        return math.inf
    half = float(student_t.ppf(1 - q / 2, rounds - 1)) * noise_sd * math.sqrt(runs / rounds)
    return math.expm1(half) * 100 if half < 700 else math.inf


def outlook(study: Study, size: StudySize, compared: Compared, pilot: Pilot | None) -> Outlook:
    """The study's planned rounds (a budget's: what it pays for) against the
    pilot's noise, at q = alpha/(K·m)."""
    meta = study.meta
    rounds = size.rounds - size.warmup  # a fixed study's in whole periods when every workload's are
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
    design = study_design(study, size, q, looks)
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
        tuple(
            (resolve(f.sd, rounds, q, meta.tolerance_pct, f.pairs - 1, design), named, cells)
            for f, named, cells in groups
        ),
        q,
    )


def study_design(study: Study, size: StudySize, q: float, looks: int) -> Design:
    """How STUDY runs what a suggestion names: a fixed study's rounds at its
    level q (no looks), an adaptive one's at its own (q, with its K looks),
    and a `--budget` run at its looks' level when the study can take one
    (not adaptive, no [noise] table) or has one."""
    meta = study.meta
    pace = Pace(size.round_s, size.warmup, size.fixed_s) if size.round_s > 0 else None
    can_budget = not meta.adaptive and study.noise is None  # measure_for: `try --budget` takes its place
    budget_looks = (
        looks_of(int(meta.repetitions), len(study.environments), meta.max_repetitions) if can_budget else None
    )
    fixed_q = q * looks if not meta.adaptive else q  # a budgeted study's fixed level: without its looks
    return Design(fixed_q, budget_looks, meta.budget is not None, pace)


def resolution_lines(study: Study, size: StudySize, compared: Compared, pilot: Pilot | None, now: float) -> list[str]:
    """The workloads whose rounds are whole periods of the rotation beyond
    the study's repetitions (checks.preflight.Periods), then two lines: what
    the planned rounds can find here and the rounds ±tolerance equivalence
    needs (CPU-bound cells, then I/O-bound ones), and that a workload can be
    noisier than the pilot; these two not when no cell is compared."""
    periods = [size.periods.line()] if size.periods.keys else []
    if compared.cells == 0:
        return periods
    return periods + one_round_warning(study) + _noise_lines(study, size, compared, pilot, now)


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
    needs = _needs_text(r)
    first += f"; {needs}" if needs else ""
    for r, named, cells in rest:
        needs = _needs_text(r).replace(" equivalence", "")
        first += f"; {cells} ({named}): about {change_text(r.change_pct)}" + (f", and {needs}" if needs else "")
    age = pilot.when(now) + ("" if pilot.age_s(now) < MAX_AGE_S else "; `isobench doctor --fresh` measures again")
    second = (
        f"a workload can be noisier than the pilot's kernels ({age}): its inconclusive cells then "
        "say the rounds its own noise needs"
    )
    return [first, second]
