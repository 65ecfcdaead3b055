"""Two runs compared: how an environment's within-run ratio to its
baseline moved from one run to another (``overhead_change``, for
``isobench compare --overhead``), and the spread between runs added to such
a compare (``add_between_runs``). Pure functions on ``stats.Effect``, whose
results go through the same verdicts as a within-run cell."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from isobench.analysis.stats import TEST_CROSSOVER, TEST_NONE, TEST_PAIRED, Effect, ratio_fields, t_pvalue

TEST_WELCH_DIFF = "welch-diff"  # Welch-type t on the difference of two runs' mean log ratios
# Two log ratios of the same ratio computed from differently scaled values
# differ by a few ulps of the logs (|log| <= 710): far below any real change.
NOISELESS_ATOL = 1e-12


def _rounds(e: Effect) -> int:
    return e.n_pairs or min(e.n_c, e.n_b)


def overhead_change(a: Effect, b: Effect) -> Effect:
    """How an environment's ratio to its run's baseline moved from run A to
    run B: ``a`` and ``b`` are the within-run effects (``compare_cell`` of the
    environment against the baseline of the same run, paired by round where
    the run allows), the result is the ratio of ratios on the log scale.

    Estimate D = mean log ratio in B - mean log ratio in A; standard error
    sqrt(se_A² + se_B²) (the runs are independent); Welch-Satterthwaite df
    se⁴ / (se_A⁴/df_A + se_B⁴/df_B). A run's own df is itself Satterthwaite's
    when it was tested by Welch, and se_X⁴/df_X is then exactly the sum of its
    components' w²/ν, so this is Satterthwaite over every variance component
    of both runs. A drift of the host between the runs scales the baseline
    and the environment of a run alike, so it cancels in each run's ratio.

    ``candidate``/``baseline`` summarise the environment's raw values in B
    and A; n_c/n_b are the rounds each run's ratio rests on. Untested when
    either run's ratio is, with that run's reason. ``tol_pct``, ``noise_pct``
    and ``alpha`` are b's (the caller computes both with the same settings).
    """
    if a.alpha != b.alpha or a.higher_is_better != b.higher_is_better:
        raise ValueError("the two runs' effects disagree on alpha or direction")
    nan = float("nan")
    estimate = b.log_ratio - a.log_ratio
    common: dict[str, Any] = dict(
        higher_is_better=b.higher_is_better,
        candidate=b.candidate,
        baseline=a.candidate,
        n_c=_rounds(b),
        n_b=_rounds(a),
        n_pairs=0,
        tol_pct=b.tol_pct,
        noise_pct=b.noise_pct,
        alpha=b.alpha,
        **ratio_fields(estimate, b.higher_is_better),
    )
    if not (a.tested and b.tested):
        why = "; ".join(f"{run}: {e.reason}" for run, e in (("A", a), ("B", b)) if not e.tested)
        return Effect(TEST_NONE, why, log_ratio=estimate, se=nan, df=nan, p=nan, noise_sd=nan, df_factor=nan, **common)
    wa, wb = a.se**2, b.se**2
    se2 = wa + wb
    if se2 == 0 and abs(estimate) <= NOISELESS_ATOL:
        # Two noise-free runs with the same ratio (every value scaled alike):
        # log(0.8x) - log(0.8y) and log(x) - log(y) differ by rounding, which
        # with se 0 would read as a certain change.
        estimate = 0.0
        common.update(ratio_fields(0.0, b.higher_is_better))
    # A run without noise (se 0) adds nothing to either sum; with no noise at
    # all the df is irrelevant (t_pvalue decides exactly) and is kept finite.
    df = se2**2 / (wa**2 / a.df + wb**2 / b.df) if se2 > 0 else a.df + b.df
    p = float(t_pvalue(estimate, math.sqrt(se2), df))
    # At n rounds in each run the se would be sqrt(va + vb)/sqrt(n) with
    # (n - 1)·df_factor df: the per-run predictions combined the same way.
    va, vb = a.noise_sd**2, b.noise_sd**2
    df_factor = (va + vb) ** 2 / (va**2 / a.df_factor + vb**2 / b.df_factor) if va + vb > 0 else 1.0
    reason = "" if {a.test, b.test} <= {TEST_PAIRED, TEST_CROSSOVER} else f"within-run tests: A {a.test}, B {b.test}"
    return Effect(
        TEST_WELCH_DIFF,
        reason,
        log_ratio=estimate,
        se=math.sqrt(se2),
        df=float(df),
        p=p,
        noise_sd=math.sqrt(va + vb),
        df_factor=df_factor,
        **common,
    )


BETWEEN = "+between"  # a test's name with the between-run spread of both runs added


def add_between_runs(e: Effect, tau2: float, df_tau: float, runs: int) -> Effect:
    """A compare of two runs (``compare_cell`` unpaired, A's values against
    B's, or ``overhead_change``) with the spread between runs added: each
    run's mean log value (or log ratio) carries its own run's shift, of
    variance ``tau2`` estimated from ``runs`` stored runs with ``df_tau``
    degrees of freedom. Standard error sqrt(se² + 2·tau2), the
    Welch-Satterthwaite df over both components, at most ``df_tau``.
    More rounds shrink se, not tau2: ``noise_sd`` and ``df_factor`` keep
    the within-run noise, and the reason says the between-run part.
    Unchanged when untested or tau2 is 0."""
    if not e.tested or not tau2 > 0 or not df_tau > 0:
        return e
    w = 2.0 * tau2
    se2 = e.se**2 + w
    # Never more df than the spread's own: when tau2 comes out small by
    # chance, Satterthwaite's df would follow the within-run part and the
    # interval narrow just when it should not (13% A/A at 2 df without this,
    # benchmarks/between_calibration.py).
    df = min(se2**2 / ((e.se**4 / e.df if e.df > 0 else 0.0) + w**2 / df_tau), df_tau)
    p = float(t_pvalue(e.log_ratio, math.sqrt(se2), df))
    why = (
        f"between runs ±{math.expm1(math.sqrt(tau2)) * 100:.1f}% (SD of a run's mean, {df_tau:g} df "
        f"from {runs}+ runs) added"
    )
    return replace(
        e,
        test=e.test + BETWEEN,
        reason="; ".join(x for x in (e.reason, why) if x),
        se=math.sqrt(se2),
        df=float(df),
        p=p,
    )
