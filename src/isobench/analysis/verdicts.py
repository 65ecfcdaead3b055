"""Verdicts over a whole table or compare: false-discovery control, three
verdicts, and the regression gate. Pure functions over ``stats.Effect``.

The rules (docs/statistics.md explains them for users):

* **Benjamini-Hochberg** over the m tested cells of one table or compare
  (cells whose test is "none" are left out of m). A cell is *rejected* when
  its BH-adjusted p is <= alpha; the adjusted p is
  ``scipy.stats.false_discovery_control(ps, method="bh")``.

* **The printed interval** of every tested cell is at the false coverage-
  statement rate (FCR) level of Benjamini & Yekutieli (2005),
  ``level = 1 - max(R, 1) * alpha / m`` with R the number of BH rejections.
  With it, "the interval excludes 1" holds exactly for the rejected cells.
  Proof: BH is a step-up procedure, R = max{k : p_(k) <= k·alpha/m}, and it
  rejects the R smallest p's. (a) A rejected cell has p <= p_(R) <= R·alpha/m.
  (b) A cell that is not rejected has p > R·alpha/m: if some p_(j), j > R,
  were <= R·alpha/m it would also be <= j·alpha/m, so j would qualify and
  contradict the maximality of R (ties with p_(R) are rejected together for
  the same reason). When R = 0, p_(1) > alpha/m, so every p > alpha/m.
  The interval at level 1 - q excludes 1 iff |t| > t_df(1 - q/2) iff p < q,
  with q = max(R, 1)·alpha/m: so it excludes 1 iff the cell is rejected (the
  boundary p = q, of probability zero, is resolved in favour of the
  decision by ``stats.ratio_interval``). For a single cell (m = 1) the level
  is simply 1 - alpha.

* **Three verdicts**, never a bare "no significant difference":
  - *changed*: rejected, and the interval reaches outside ±noise_pct (the
    per-metric noise floor, 0 by default, so changed == rejected);
  - *equivalent*: otherwise, when the interval lies inside ±margin, with
    margin = max(tol_pct, noise_pct). This is a TOST at least as strict as
    the usual 90% one: the printed level is >= 1 - alpha = 95% (R <= m), so
    the interval contains the 90% interval, and "inside ±margin" for it
    implies it for the 90% one. Each equivalence claim is a TOST at size
    (1 - level)/2 <= alpha/2, Bonferroni-strict (alpha/2m) when nothing
    changed;
  - *inconclusive*: neither; ``callable_pct`` says the smallest change this
    run could have called at its n and level (found 4 times in 5, see
    ``detectable_change``), and ``rounds_needed`` how many rounds per side
    a fixed run needs to resolve it 4 times in 5, allowing for the observed
    noise's own uncertainty (``settle``; a budget's: ``suggest``).

* **Noise floor** (``noise_pct``, per cell, Firecracker's noise threshold):
  a statistically real change whose whole interval lies within ±noise_pct
  is smaller than what this metric is known to move between runs (reboots,
  placement, firmware): it is not reported as changed and cannot fail the
  gate; it reads "equivalent within ±noise_pct". Changes reaching beyond the
  floor are unaffected.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# the cap lives with the rule that reaches it; every verdict reader takes it from here
from isobench.analysis.settle import ROUNDS_NEEDED_CAP as ROUNDS_NEEDED_CAP
from isobench.analysis.settle import SETTLE_TEXT, rounds_to_settle
from isobench.analysis.stats import ALPHA, Effect, ratio_interval, t_critical
from isobench.analysis.summary import scipy_stats
from isobench.core.numbers import MINUS

CHANGED = "changed"
EQUIVALENT = "equivalent"
INCONCLUSIVE = "inconclusive"


# A lower bound of the change below this many percent is printed as "<-99.9%":
# the ratio's bound is positive, but at a strict corrected level and two or
# three rounds it can be so near 0 that one decimal would read -100%.
SHOWN_PCT_LOW = -99.9
SHOWN_PCT_HIGH = 999.0  # and an upper bound beyond this, as ">+999%" (it may be inf)


@dataclass(frozen=True)
class Verdict:
    effect: Effect
    verdict: str  # changed | equivalent | inconclusive
    p_adjusted: float  # BH over the table's tested cells; nan when untested
    rejected: bool  # BH-rejected at alpha (== changed unless the noise floor holds it back)
    level: float  # confidence level of the printed interval (FCR-adjusted)
    low: float  # ratio interval at ``level``; nan when untested
    high: float
    margin_pct: float  # equivalence margin used: max(tol_pct, noise_pct)
    noise_pct: float
    m: int  # tested cells corrected together
    reason: str  # for inconclusive/untested and noise-floor cases; "" otherwise
    # inconclusive only: the smallest change (percent, upward) this run could have
    # called at its n and level; None when untested or no change could be
    callable_pct: float | None = None
    # the planned looks the level was divided by (an adaptive or budgeted run's
    # K; a compare's K_A·K_B): rounds_needed is at the level without them
    looks: int = 1

    @property
    def fixed_q(self) -> float:
        """1 - level of a fixed run of the same cells (no looks): the level
        ``rounds_needed`` is said at (``analysis.suggest``)."""
        return (1 - self.level) * self.looks

    @functools.cached_property
    def rounds_needed(self) -> int | None:
        """Inconclusive only: the rounds a fixed run needs to settle the cell
        4 times in 5 (module-level ``rounds_needed`` at ``fixed_q``); > ROUNDS_NEEDED_CAP
        means "more than the cap". Computed when first asked: a table's
        cells are judged by the thousand, their suggestions read by few."""
        if self.verdict != INCONCLUSIVE or not self.effect.tested:
            return None
        return rounds_needed(self.effect, self.fixed_q, self.margin_pct)

    @property
    def changed(self) -> bool:
        return self.verdict == CHANGED

    @property
    def open(self) -> bool:
        """Inconclusive at this n: tested, neither changed nor equivalent. A
        cell its data cannot test (values <= 0, n < 2) is not open but not
        tested, and every count of open cells leaves it out (issue 55: the
        report counted sys_s cells of 0 s as inconclusive, the answer not)."""
        return self.verdict == INCONCLUSIVE and self.effect.tested

    @property
    def pct(self) -> float:
        return self.effect.pct

    @property
    def overhead_pct(self) -> float:
        return self.effect.overhead_pct

    @property
    def pct_low(self) -> float:
        return (self.low - 1) * 100

    @property
    def pct_high(self) -> float:
        return (self.high - 1) * 100

    @property
    def direction(self) -> str:
        """better | worse | "" by the point estimate and the metric's direction."""
        o = self.effect.overhead_pct
        return "" if not o or math.isnan(o) else ("worse" if o > 0 else "better")

    @property
    def rounds_needed_text(self) -> str:
        n = self.rounds_needed
        if n is None:
            return ""
        return f">{ROUNDS_NEEDED_CAP}" if n > ROUNDS_NEEDED_CAP else str(n)

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width in percent; nan when untested."""
        return (self.pct_high - self.pct_low) / 2 if self.effect.tested else math.nan

    def resolves(self, pct: float) -> bool:
        """Resolved (changed or equivalent), or its interval narrow enough
        (half-width at most ``pct`` percent) to have seen a change of ``pct``."""
        return self.verdict in (CHANGED, EQUIVALENT) or self.half_width_pct <= pct

    @property
    def callable_text(self) -> str:
        """ "this run could call changes of about 31% or more"; "" when unknown."""
        if self.callable_pct is None:
            return ""
        return f"this run could call {findable(self.callable_pct)}"

    @property
    def text(self) -> str:
        """One line for a person, e.g. "worse: -26.2% [-45.0%, -1.1%] at 95%,
        significant after correction (BH p = 0.045, welch-log)"."""
        e = self.effect
        if not e.tested:
            return f"inconclusive: {e.reason}"
        low = f"<{SHOWN_PCT_LOW:+.1f}" if self.pct_low < SHOWN_PCT_LOW else f"{self.pct_low:+.1f}"
        # an upper bound this far out says only "unbounded at this n" (and may be inf)
        high = f">+{SHOWN_PCT_HIGH:.0f}" if not self.pct_high <= SHOWN_PCT_HIGH else f"{self.pct_high:+.1f}"
        # the typographic minus, as every table prints a change
        where = f"{e.pct:+.1f}% [{low}%, {high}%]".replace("-", MINUS) + f" at {fmt_level(self.level)}"
        if self.changed:
            return f"{self.direction}: {where}, significant after correction (BH p = {self.p_adjusted:.3g}, {e.test})"
        if self.verdict == EQUIVALENT:
            extra = f" ({self.reason})" if self.reason else ""
            return f"equivalent within ±{self.margin_pct:g}%: {where}{extra}"
        could = f"; {self.callable_text}" if self.callable_text else ""
        # "more than 1000", not "about >1000" (the figure past the cap is no estimate)
        beyond = self.rounds_needed is not None and self.rounds_needed > ROUNDS_NEEDED_CAP
        rounds = f"more than {ROUNDS_NEEDED_CAP}" if beyond else f"about {self.rounds_needed_text}"
        return (
            f"inconclusive at n = {_n_text(e)}: {where}{could}; {rounds} rounds would resolve "
            f"±{self.margin_pct:g}% {SETTLE_TEXT}"
        )


def change_text(pct: float) -> str:
    """A change found 4 times in 5, as printed: ">+999%" beyond SHOWN_PCT_HIGH
    (at 2 rounds and a strict level the exact figure, a many-fold change,
    says only "nothing"), whole percent from 10%, one decimal below."""
    return f">+{SHOWN_PCT_HIGH:.0f}%" if not pct <= SHOWN_PCT_HIGH else f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"


def findable(pct: float) -> str:
    """ "changes of about 31% or more", or "only changes beyond +999%" when
    the figure is past what is printed (">+999% or more" read as a typo)."""
    text = change_text(pct)
    return f"only changes beyond {text[1:]}" if text.startswith(">") else f"changes of about {text} or more"


def fmt_level(level: float) -> str:
    """A confidence level as a percentage, "99.92%", with the digits that keep
    it below 100%: a level corrected for many cells and looks (1 - 0.05/1344)
    reads 99.9963%, never "100%"."""
    text = f"{level * 100:.4g}"
    if 0 < level < 1 and float(text) >= 100:
        decimals = 1 - math.floor(math.log10((1 - level) * 100))
        text = f"{level * 100:.{decimals}f}".rstrip("0").rstrip(".")
    return text + "%"


def _n_text(e: Effect) -> str:
    return str(e.n_pairs) if e.n_pairs else (str(e.n_c) if e.n_c == e.n_b else f"{e.n_c}/{e.n_b}")


def rounds_needed(effect: Effect, q: float, margin_pct: float, cap: int = ROUNDS_NEEDED_CAP) -> int | None:
    """Rounds per side after which a run tested at level 1 - q would settle
    the cell (changed or equivalent) 4 times in 5, whatever the true change,
    allowing for the observed noise's own uncertainty
    (``settle.rounds_to_settle`` with the cell's noise, the df it was
    estimated on and its test's df at n rounds; never fewer than the rounds
    it has plus one). Returns cap + 1 beyond the cap, None when the cell is
    untested or the margin is 0 (nothing can be shown equivalent to ±0).
    """
    if not effect.tested:
        return None
    now = effect.n_pairs or min(effect.n_c, effect.n_b)
    return rounds_to_settle(effect.noise_sd, effect.df, q, margin_pct, effect.df_factor, effect.df_lost, cap, now=now)


def callable_change(effect: Effect, q: float) -> float | None:
    """The smallest change, in percent, this cell's own test could have
    called at its n and level 1 - q, at its observed noise: the change a
    test of that many rounds and the cell's own degrees of freedom finds 4
    times in 5 (``detectable_change``), as (e^delta - 1)·100: n - 1 for the
    paired test, n - 2 for the crossover, Welch's for a Welch cell (with
    n = min(n_c, n_b)). None when the cell is untested or no change could be called
    (under 2 rounds, a critical value beyond a float's precision, a change
    too large for exp).
    """
    if not effect.tested:
        return None
    df = effect.df if math.isfinite(effect.df) and effect.df > 0 else None
    delta = detectable_change(effect.noise_sd, effect.n_pairs or min(effect.n_c, effect.n_b), q, df=df)
    if not math.isfinite(delta) or delta >= 700:  # exp would overflow: "no change could be"
        return None
    return math.expm1(delta) * 100


# "Can find a change": the paired test at the corrected level rejects it this
# often (the power the calibration's detection columns use, docs/statistics.md).
DETECT_POWER = 0.8


def detectable_change(
    noise_sd: float, rounds: int, q: float, power: float = DETECT_POWER, df: float | None = None
) -> float:
    """The smallest true log ratio a paired t-test of ``rounds`` rounds,
    two-sided at level 1 - q, finds (rejects in its direction) with
    probability ``power``, at per-round log-ratio SD ``noise_sd``; ``df``
    the test's degrees of freedom when not n - 1 (the crossover's n - 2).

    With n rounds the statistic is noncentral t with n - 1 df and
    noncentrality delta·sqrt(n)/noise_sd; it rejects upward when it exceeds
    c = t_{n-1}(1 - q/2). So delta = nc·noise_sd/sqrt(n), with nc solving
    P(T'(n - 1, nc) > c) = power. (The rejections in the wrong direction,
    below q/2, are not a finding and are left out.) Exact where the usual
    (c + t_power)·sd/sqrt(n) is not: at 5 rounds and q = 0.05/99 that
    shortcut has 68% power, not 80%. inf when no change can be found (under
    2 rounds, or a critical value beyond any float's precision).
    """
    if rounds < 2 or math.isnan(noise_sd) or not 0 < power < 1:
        return math.inf
    if noise_sd == 0:
        return 0.0
    nc = _noncentrality(float(rounds - 1 if df is None else df), float(q), float(power))
    return nc * noise_sd / math.sqrt(rounds) if math.isfinite(nc) else math.inf


@functools.lru_cache(maxsize=4096)
def _noncentrality(df: float, q: float, power: float) -> float:
    """nc of ``detectable_change``: it depends on the df, level and power
    only, so every inconclusive cell of a table (one n, one level) solves it
    once."""
    import warnings

    from scipy import optimize

    if not df > 0:
        return math.inf
    c = float(t_critical(q, df))
    if not math.isfinite(c):
        return math.inf

    # the noncentral t's own survival function: what nct.sf returns for these
    # finite arguments, without the argument handling that cost ten times the
    # function (ten calls a solve, a solve per cell's df)
    sf = scipy_stats().nct._sf

    def shortfall(nc: float) -> float:
        return float(sf(c, df, nc)) - power

    # At 2 rounds and a strict level (c in the thousands) the noncentral t's
    # series warns it is approximate: the answer is then "a many-fold change",
    # which no digit of it changes.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        hi = c + 2.0
        while not shortfall(hi) >= 0:  # sf grows with nc: double until the root is bracketed
            hi *= 2
            if hi > 1e12:
                return math.inf
        return float(optimize.brentq(shortfall, 0.0, hi, xtol=1e-10, rtol=1e-12))


def _per_cell(value: float | Sequence[float] | None, effects: list[Effect], field: str) -> list[float]:
    if value is None:
        return [getattr(e, field) for e in effects]
    values = (
        [float(value)] * len(effects) if isinstance(value, (int, float, numbers.Real)) else [float(v) for v in value]
    )
    if len(values) != len(effects):
        raise ValueError(f"{field}: {len(values)} values for {len(effects)} cells")
    if not all(0 <= v < 100 for v in values):
        raise ValueError(f"{field} must be in [0, 100), not {values}")
    return values


def adjust(
    effects: Iterable[Effect],
    alpha: float | None = None,
    *,
    tol_pct: float | Sequence[float] | None = None,
    noise_pct: float | Sequence[float] | None = None,
    looks: int = 1,
) -> list[Verdict]:
    """The final verdicts of one table or compare, in the order given.

    ``alpha`` defaults to the effects' own (they must agree). ``tol_pct`` and
    ``noise_pct`` override the effects' own, as one value or one per cell.
    Untested cells are excluded from m and come back inconclusive with the
    effect's reason. ``looks``: the planned looks ``alpha`` was divided by
    (``repetitions.sequential_alpha``); a cell's ``rounds_needed`` is a fixed
    run's, at the level without them.
    """
    if looks < 1:
        raise ValueError(f"looks must be >= 1, not {looks}")
    effects = list(effects)
    if alpha is None:
        alphas = {e.alpha for e in effects}
        if len(alphas) > 1:
            raise ValueError(f"effects disagree on alpha ({sorted(alphas)}): pass alpha")
        alpha = alphas.pop() if alphas else ALPHA
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha!r}")
    tols, noises = _per_cell(tol_pct, effects, "tol_pct"), _per_cell(noise_pct, effects, "noise_pct")

    tested = [i for i, e in enumerate(effects) if e.tested]
    m = len(tested)
    p_adj = np.full(len(effects), np.nan)
    if m:
        p_adj[tested] = scipy_stats().false_discovery_control([effects[i].p for i in tested], method="bh")
    rejected = np.zeros(len(effects), dtype=bool)
    rejected[tested] = p_adj[tested] <= alpha
    r = int(rejected.sum())
    q = max(r, 1) * alpha / max(m, 1)  # FCR level 1 - q, see the module docstring

    return [
        _verdict(e, float(p_adj[i]), bool(rejected[i]), q, tols[i], noises[i], m, looks) for i, e in enumerate(effects)
    ]


def _verdict(
    e: Effect, p_adj: float, rejected: bool, q: float, tol: float, noise: float, m: int, looks: int = 1
) -> Verdict:
    margin = max(tol, noise)
    nan = float("nan")
    if not e.tested:
        return Verdict(e, INCONCLUSIVE, nan, False, nan, nan, nan, margin, noise, m, e.reason, None, looks)
    lo, hi = ratio_interval(e.log_ratio, e.se, e.df, q, exclude=rejected)

    def inside(pct: float) -> bool:
        return 1 - pct / 100 <= lo and hi <= 1 + pct / 100

    within_noise = inside(noise)  # with noise 0: only [1, 1], never a rejected cell
    if rejected and not within_noise:
        return Verdict(e, CHANGED, p_adj, True, 1 - q, lo, hi, margin, noise, m, "", None, looks)
    if inside(margin):
        reason = f"significant, but inside the noise floor ±{noise:g}%" if rejected else ""
        return Verdict(e, EQUIVALENT, p_adj, rejected, 1 - q, lo, hi, margin, noise, m, reason, None, looks)
    return Verdict(
        e,
        INCONCLUSIVE,
        p_adj,
        rejected,
        1 - q,
        lo,
        hi,
        margin,
        noise,
        m,
        f"the interval holds both no change and changes beyond ±{margin:g}%",
        callable_change(e, q),
        looks,
    )


def at_level(e: Effect, q: float, tol_pct: float, m: int) -> Verdict:
    """One cell's verdict at a table's level 1 - q, its decision p <= q (the
    same interval the table printed, for the cell re-tested on other data)."""
    return _verdict(e, float("nan"), e.tested and e.p <= q, q, tol_pct, e.noise_pct, m)


def judge(effect: Effect) -> Verdict:
    """The verdict of a cell on its own (m = 1: interval at 1 - alpha)."""
    return adjust([effect])[0]


def regressions(verdicts: Iterable[Verdict], pct: float) -> list[Verdict]:
    """The gate (``--fail-on-change PCT``): cells changed for the worse
    (BH-significant, beyond the noise floor) whose point change is more than
    ``pct`` percent worse than the baseline (``overhead_pct > pct``)."""
    return [v for v in verdicts if v.changed and v.overhead_pct > pct]
