"""Why an inconclusive cell is inconclusive, in words a user acts on: its
noise per sample against the host's noise pilot, whether pairing helped
(same-round correlation), how long its samples are, and what would settle
it. Pure: from the run's stored values, times and facts."""

from __future__ import annotations

import math

import numpy as np

from isobench.analysis.verdicts import INCONCLUSIVE, ROUNDS_NEEDED_CAP, Verdict
from isobench.core.numbers import signed
from isobench.results.analysis import tested_pairs
from isobench.results.model import MetricKey, RunData

KERNEL_LABELS = {"cpu": "CPU", "cpu-duet": "CPU duet", "io": "I/O"}  # as checks.noisepilot names them
PAIRING_HELPS = 0.3  # a same-round correlation below this removed little of the noise
HOSTS_WITHIN = 2.0  # a cell within this factor of a pilot kernel's noise has the host's noise
LONGER_BELOW_S = 10.0  # samples shorter than this may gain from a longer sample


def _pct(sd: float) -> str:
    return f"{sd * 100:.1f}%"


def pilot_noise(run: RunData) -> dict[str, float]:
    """The host-noise pilot's paired SD per sample by kernel ("cpu",
    "cpu-duet", "io"), as the run kept it; {} when it kept none."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    noise = facts.get("host_noise")
    kernels = noise.get("kernels") if isinstance(noise, dict) else None
    if not isinstance(kernels, dict):
        return {}
    out = {}
    for name, k in kernels.items():
        sd = k.get("sd") if isinstance(k, dict) else None
        if isinstance(sd, (int, float)) and not isinstance(sd, bool) and math.isfinite(sd) and sd > 0:
            out[str(name)] = float(sd)
    return out


def ran_as_duet(run: RunData, key: MetricKey) -> bool:
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    record = facts.get("schedule")
    cells = record.get("cells") if isinstance(record, dict) else None
    return isinstance(cells, dict) and cells.get(f"{key.workload}/{key.case}") == "duet"


def sample_seconds(run: RunData, key: MetricKey, env: str) -> float | None:
    """The mean wall time of the workload's samples in the environment."""
    wall, n = run.time_spent.get((key.workload, env), (0.0, 0))
    return wall / n if n and wall > 0 else None


def same_round_correlation(pairs: list[tuple[float, float]]) -> float | None:
    """Pearson's r of the log values measured in the same round: what pairing
    can remove (a share of about 2r of the variance for equal spreads)."""
    a = np.log(np.asarray(pairs, dtype=float))
    if a.shape[0] < 3 or np.ptp(a[:, 0]) == 0 or np.ptp(a[:, 1]) == 0:
        return None
    return float(np.corrcoef(a[:, 0], a[:, 1])[0, 1])


def why_inconclusive(run: RunData, key: MetricKey, env: str, verdict: Verdict) -> str:
    """ "why: paired SD 12.4% per sample, this host's pilot 22.4% on I/O (the
    host's own noise); same-round correlation −0.07: pairing removed nothing;
    5.1 s a sample; would settle it: ..." for an inconclusive tested cell."""
    e = verdict.effect
    if not e.tested or verdict.verdict != INCONCLUSIVE or not math.isfinite(e.noise_sd):
        return ""
    parts = [f"{'paired ' if e.n_pairs else ''}SD {_pct(e.noise_sd)} per sample"]
    pilot = pilot_noise(run)
    kinds = ["cpu-duet"] if ran_as_duet(run, key) and "cpu-duet" in pilot else [k for k in pilot if k != "cpu-duet"]
    # the run does not know which kernel is its kind's: the one its noise is closest to, within 2-fold
    near = min(kinds, key=lambda k: abs(math.log(e.noise_sd / pilot[k])), default=None) if e.noise_sd > 0 else None
    hosts_own = near is not None and abs(math.log(e.noise_sd / pilot[near])) <= math.log(HOSTS_WITHIN)
    if kinds:
        said = ", ".join(f"{_pct(pilot[k])} on {KERNEL_LABELS.get(k, k)}" for k in kinds)
        own = f" (about this host's {KERNEL_LABELS.get(near, near)} noise)" if hosts_own and near else ""
        parts[0] += f" against this host's pilot {said}{own}"
    pairs, _ = tested_pairs(run, key, env, run.baseline)
    r = same_round_correlation(list(pairs)) if e.n_pairs and pairs else None
    if r is not None:
        helped = r >= PAIRING_HELPS
        parts.append(
            f"same-round correlation {signed(r, 2)}: "
            + ("pairing removed the noise both sides shared" if helped else "pairing removed nothing")
        )
    seconds = sample_seconds(run, key, env)
    if seconds is not None:
        parts.append(f"{seconds:.1f} s a sample")
    return "why: " + "; ".join(parts) + "; would settle it: " + either(remedies(verdict, r, seconds, hosts_own))


def remedies(verdict: Verdict, r: float | None, seconds: float | None, hosts_own: bool) -> list[str]:
    """What would settle the cell, cheapest first as far as the run can tell."""
    out = []
    if verdict.rounds_needed is not None and verdict.rounds_needed <= ROUNDS_NEEDED_CAP:
        out.append(f"{verdict.rounds_needed} rounds")
    if r is not None and r < PAIRING_HELPS and seconds is not None and seconds < LONGER_BELOW_S:
        # only if the noise is within a sample: a disk whose speed moves over
        # tens of seconds is as noisy at 8 s as at 1 s (docs/workloads/fio.md)
        out.append("longer samples if SD² × seconds a sample falls with them (docs/statistics.md#shorter-samples)")
    if hosts_own:
        out.append("a quieter host or device")
    out.append("leaving the case out of a gate")
    return out


def either(remedies: list[str]) -> str:
    """ "a, b, or c"; "a or b"; "a"."""
    if len(remedies) < 3:
        return " or ".join(remedies)
    return ", ".join(remedies[:-1]) + ", or " + remedies[-1]
