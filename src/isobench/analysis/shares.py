"""One gap taken apart (`isobench explain`, docs/explain.md): an environment
E against its baseline B, beside variants V_s of E with one setting s moved
to the baseline's side, and V_all with every such setting moved. Pure.

Each environment X has, per round r, its log ratio to the baseline's sample
of that round, d_X(r) = log X(r) - log B(r) (in a duet, to the baseline
sample beside it). Every figure is a contrast of those, tested as a paired t
on its per-round values (n - 1 df) over the rounds that hold every
environment, so the estimates add up exactly:

  whole        d_E                      the gap
  part s       d_E - d_Vs               what s costs E: moving it back undoes it
  unexplained  whole - the parts' sum   what no one setting accounts for
  interaction  (d_E - d_Vall) - sum     0 when the parts add up
  residual     d_Vall                   what no setting moves (the kind's own)

unexplained = interaction + residual. Ratios multiply, so the parts add up
as log ratios: whole = sum of parts + unexplained. The parts are corrected
together (Benjamini-Hochberg and its interval level, analysis.verdicts); the
whole, the unexplained part and the interaction each at 1 - alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from isobench.analysis.stats import ALPHA, DEFAULT_TOL_PCT, Effect, compare_cell
from isobench.analysis.verdicts import Verdict, adjust

# log ratios within this of 0 read as no gap: a share of nothing is no share
NO_GAP = 1e-9


@dataclass(frozen=True)
class Shares:
    """One cell's gap and its parts, each a Verdict on a ratio (``.pct``,
    ``.low``/``.high`` at ``.level``); the parts in the order given."""

    whole: Verdict
    parts: tuple[tuple[str, Verdict], ...]
    unexplained: Verdict
    interaction: Verdict | None  # None: fewer than two settings, or no V_all
    residual: Verdict | None
    rounds: int  # the rounds that held every environment

    @property
    def adds_up(self) -> bool:
        """The parts add up: the interaction's interval holds no change
        (trivially so with one setting, or where it was not measured)."""
        i = self.interaction
        return i is None or not i.effect.tested or i.low <= 1.0 <= i.high

    @property
    def explained(self) -> float:
        """The parts' sum as a share of the whole, both as log ratios (1 =
        all of it); nan where there is no gap to share."""
        return self._share([v for _, v in self.parts])

    @property
    def explained_told(self) -> float:
        """The same of the parts whose interval excludes no change alone."""
        return self._share([v for _, v in self.parts if v.rejected])

    def _share(self, parts: list[Verdict]) -> float:
        whole = self.whole.effect.log_ratio
        if not math.isfinite(whole) or abs(whole) < NO_GAP:
            return float("nan")
        return sum(v.effect.log_ratio for v in parts) / whole

    def strongest(self, n: int = 2) -> list[str]:
        """The n settings whose parts are largest (as log ratios)."""
        ranked = sorted(self.parts, key=lambda p: -abs(p[1].effect.log_ratio) if p[1].effect.tested else 0.0)
        return [name for name, _ in ranked[:n]]


def common_rounds(d: Mapping[str, Mapping[int, float]], envs: Sequence[str]) -> list[int]:
    """The rounds every one of ``envs`` has a log ratio in, ascending."""
    rounds = [set(d.get(env, {})) for env in envs]
    return sorted(set.intersection(*rounds)) if rounds else []


def contrast(
    values: Sequence[float], higher_is_better: bool, alpha: float = ALPHA, tol_pct: float = DEFAULT_TOL_PCT
) -> Verdict:
    """A paired t on per-round log contrasts, as the ratio exp(mean) with
    its interval at 1 - alpha (stats.compare_cell on the ratios against 1)."""
    return adjust([_effect(values, higher_is_better, alpha, tol_pct)], alpha)[0]


def _effect(values: Sequence[float], higher_is_better: bool, alpha: float, tol_pct: float) -> Effect:
    ratios = [math.exp(v) for v in values]
    ones = [1.0] * len(ratios)
    return compare_cell(ratios, ones, higher_is_better, pairs=list(zip(ratios, ones)), tol_pct=tol_pct, alpha=alpha)


def shares(
    d: Mapping[str, Mapping[int, float]],
    env: str,
    parts: Sequence[tuple[str, str]],
    joint: str | None,
    higher_is_better: bool,
    alpha: float = ALPHA,
    tol_pct: float = DEFAULT_TOL_PCT,
) -> Shares:
    """``d``: environment -> round -> its log ratio to the baseline;
    ``parts``: (setting, its variant's environment); ``joint``: the
    environment with every setting moved (None: not measured)."""
    envs = [env, *(v for _, v in parts), *([joint] if joint else [])]
    rounds = common_rounds(d, envs)
    de = np.array([d[env][r] for r in rounds])
    part_values = [de - np.array([d[v][r] for r in rounds]) for _, v in parts]
    total = np.sum(part_values, axis=0) if part_values else np.zeros(len(rounds))
    corrected = adjust([_effect(list(p), higher_is_better, alpha, tol_pct) for p in part_values], alpha)
    interaction = residual = None
    if joint is not None and len(parts) >= 2:
        dj = np.array([d[joint][r] for r in rounds])
        interaction = contrast(list(de - dj - total), higher_is_better, alpha, tol_pct)
        residual = contrast(list(dj), higher_is_better, alpha, tol_pct)
    return Shares(
        whole=contrast(list(de), higher_is_better, alpha, tol_pct),
        parts=tuple((name, v) for (name, _), v in zip(parts, corrected)),
        unexplained=contrast(list(de - total), higher_is_better, alpha, tol_pct),
        interaction=interaction,
        residual=residual,
        rounds=len(rounds),
    )
