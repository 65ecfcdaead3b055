"""An `isobench explain` run read back: which of its environments is the one
explained and which are its variants (its ``explain`` fact, written by
run/explainplan.py), each explained cell's gap taken apart
(analysis/shares.py), and the sentences every format says it in
(docs/explain.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from isobench.analysis.repetitions import sequential_alpha
from isobench.analysis.shares import Shares, shares
from isobench.analysis.stats import ALPHA
from isobench.analysis.verdicts import Verdict
from isobench.results.analysis import interval_text, round_pairs, settings_of
from isobench.results.model import MetricKey, RunData
from isobench.results.primary import primary_keys

FACT = "explain"  # the host fact that makes a run an explain, and says of which run


@dataclass(frozen=True)
class Setting:
    name: str  # "storage"
    label: str  # "storage volume→overlay": the baseline's side → the environment's
    variant: str  # the environment that measured it moved back


@dataclass(frozen=True)
class Explained:
    """What an explain run explains (its fact, checked)."""

    explains: str
    env: str
    baseline: str
    cells: tuple[tuple[str, str], ...]
    settings: tuple[Setting, ...]
    joint: str | None


@dataclass(frozen=True)
class CellAnswer:
    key: MetricKey
    explained: Explained
    shares: Shares
    several: bool  # the case has more than one primary metric: name it

    @property
    def name(self) -> str:
        k = self.key
        case = "" if k.case == "default" else f" {k.case}"
        return f"{self.explained.env} {k.workload}{case}" + (f" {k.metric}" if self.several else "")

    def parts(self) -> list[tuple[Setting, Verdict]]:
        """The settings and their parts, the largest first."""
        by_name = {s.name: s for s in self.explained.settings}
        ranked = sorted(self.shares.parts, key=lambda p: -abs(_log(p[1])))
        return [(by_name[name], v) for name, v in ranked]


def _log(v: Verdict) -> float:
    x = v.effect.log_ratio
    return x if math.isfinite(x) else 0.0


def explained_of(run: RunData) -> Explained | None:
    """The run's explain fact, or None when it is no explain run (or the fact
    does not read: a store written by hand)."""
    facts = run.host_facts if isinstance(run.host_facts, dict) else {}
    fact: Any = facts.get(FACT)
    try:
        settings = tuple(Setting(str(s["setting"]), str(s["label"]), str(s["variant"])) for s in fact["settings"])
        cells = tuple((str(w), str(c)) for w, c in fact["cells"])
        joint = fact.get("joint")
        return Explained(
            str(fact["explains"]), str(fact["env"]), str(fact["baseline"]), cells, settings, joint and str(joint)
        )
    except (TypeError, KeyError, ValueError, AttributeError):
        return None


def log_ratios(run: RunData, key: MetricKey, env: str) -> dict[int, float]:
    """Round -> log(env's value / the baseline's beside it), positive values only."""
    return {r: math.log(v) - math.log(b) for r, (v, b) in round_pairs(run, key, env, run.baseline).items() if v > 0 < b}


def answers(run: RunData) -> list[CellAnswer]:
    """Every explained primary cell's gap, taken apart; [] for another run."""
    ex = explained_of(run)
    if ex is None:
        return []
    settings = settings_of(run)
    alpha = sequential_alpha(settings.looks, alpha=ALPHA)
    keys = [k for k in primary_keys(run) if (k.workload, k.case) in ex.cells]
    envs = [ex.env, *(s.variant for s in ex.settings), *([ex.joint] if ex.joint else [])]
    out = []
    for key in keys:
        d = {env: log_ratios(run, key, env) for env in envs}
        parts = [(s.name, s.variant) for s in ex.settings]
        found = shares(d, ex.env, parts, ex.joint, key.higher_is_better, alpha, settings.tolerance_pct)
        several = sum((k.workload, k.case) == (key.workload, key.case) for k in keys) > 1
        out.append(CellAnswer(key, ex, found, several))
    return out


def answer_line(a: CellAnswer) -> str:
    """ "docker-nat fio randwrite −27.5% [..]: storage volume→overlay −26.1% [..], …, unexplained −1.0% [..]" """
    parts = [f"{s.label} {interval_text(v)}" for s, v in a.parts()]
    parts.append(f"unexplained {interval_text(a.shares.unexplained)}")
    return f"{a.name} {interval_text(a.shares.whole)}: " + ", ".join(parts)


def notes(a: CellAnswer) -> list[str]:
    """What the answer line needs said beside it: how the parts add, whether
    they interact (and the factorial that would say how), what is left."""
    sh, ex = a.shares, a.explained
    if sh.rounds < 2:
        return [f"Only {sh.rounds} round(s) held every environment: nothing could be tested."]
    share, told = sh.explained, sh.explained_told
    said = (
        f"; the named settings hold {share * 100:.0f}% of its log ratio, those told apart from no change "
        f"{told * 100:.0f}%"
        if math.isfinite(share)
        else ""
    )
    out = [
        f"Each part is {ex.env} against itself with that setting on {ex.baseline}'s side, corrected over the "
        f"{len(sh.parts)} settings (Benjamini-Hochberg). Ratios multiply, so the parts add up as log ratios: "
        f"the whole = the parts + the unexplained part{said}."
    ]
    if not sh.adds_up and sh.interaction is not None:
        first, second = sh.strongest(2)
        cell = a.key.workload if a.key.case == "default" else f"{a.key.workload}/{a.key.case}"
        out.append(
            f"The parts do not add up: the settings interact ({interval_text(sh.interaction)} beyond their sum). "
            f"`isobench explain {ex.explains} --cell {cell} --env {ex.env} --factorial --setting {first} "
            f"--setting {second}` crosses the two strongest."
        )
    residual = sh.residual
    if residual is not None and residual.effect.tested and not residual.low <= 1.0 <= residual.high:
        out.append(
            f"With every setting moved, {ex.env} still differs from {ex.baseline} by {interval_text(residual)}: "
            "what no setting moves (its kind's own)."
        )
    return out


def answer_json(a: CellAnswer) -> dict[str, Any]:
    """One cell's answer as data (docs/output.md#isobench.explain)."""

    def ratio(v: Verdict | None) -> dict[str, Any] | None:
        if v is None:
            return None
        tested = v.effect.tested
        return {
            "pct": v.pct,
            "pct_low": v.pct_low if tested else None,
            "pct_high": v.pct_high if tested else None,
            "log_ratio": v.effect.log_ratio,
            "level": v.level,
            "p_adjusted": v.p_adjusted,
        }

    sh = a.shares
    return {
        "workload": a.key.workload,
        "case": a.key.case,
        "metric": a.key.metric,
        "higher_is_better": a.key.higher_is_better,
        "rounds": sh.rounds,
        "whole": ratio(sh.whole),
        "parts": [
            {"setting": s.name, "label": s.label, "variant": s.variant, **(ratio(v) or {})} for s, v in a.parts()
        ],
        "unexplained": ratio(sh.unexplained),
        "interaction": ratio(sh.interaction),
        "residual": ratio(sh.residual),
        "adds_up": sh.adds_up,
        "explained_share": sh.explained,
        "explained_share_told": sh.explained_told,
        "line": answer_line(a),
        "notes": notes(a),
    }


def run_json(run: RunData) -> dict[str, Any] | None:
    """An explain run as data: `explain --format json`'s runs, and `report
    --format json`'s explain_runs of the run it explains; None for another run."""
    ex = explained_of(run)
    if ex is None:
        return None
    return {
        "run_id": run.run_id,
        "status": run.status,
        "env": ex.env,
        "baseline": ex.baseline,
        "answers": [answer_json(a) for a in answers(run)],
    }


def answer_lines(run: RunData) -> tuple[str, ...]:
    """An explain run's answer line per cell, as a listing of it says them."""
    return tuple(answer_line(a) for a in answers(run)) or ("no explained cell has a primary metric in it",)


def explaining(run: RunData, others: list[RunData]) -> list[RunData]:
    """The explain runs among ``others`` that explain ``run``, oldest first."""
    mine = [o for o in others if (ex := explained_of(o)) is not None and ex.explains == run.run_id]
    return sorted(mine, key=lambda o: (o.started_at, o.run_id))


@dataclass(frozen=True)
class Step:
    """One bar of the waterfall, on the log-ratio axis: from ``start`` to
    ``end`` (the running sum), ``low``..``high`` its own interval's reach."""

    label: str
    start: float
    end: float
    low: float
    high: float
    total: bool = False  # the whole gap, drawn from 0


def steps(a: CellAnswer) -> list[Step]:
    """The parts, largest first, then the unexplained part, each from where
    the sum so far ends; last the whole, from 0: it ends where they do."""
    out, at = [], 0.0
    named = [(s.label, v) for s, v in a.parts()] + [("unexplained", a.shares.unexplained)]
    for label, v in named:
        x = _log(v)
        lo, hi = (math.log(v.low), math.log(v.high)) if v.effect.tested and v.low > 0 else (x, x)
        out.append(Step(label, at, at + x, at + lo, at + hi))
        at += x
    whole = a.shares.whole
    lo, hi = (math.log(whole.low), math.log(whole.high)) if whole.effect.tested and whole.low > 0 else (at, at)
    out.append(Step(f"{a.explained.env} (whole)", 0.0, _log(whole), lo, hi, total=True))
    return out
