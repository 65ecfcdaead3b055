"""What would settle an inconclusive cell, said one way wherever it is said
(the answer, the gates, validate, the export): ``analysis.suggest``'s
figures, a fixed run's rounds at the fixed run's level and a `--budget`
run's at its looks' level, at a run's own wall pace, in one sentence."""

from __future__ import annotations

import tomllib

from isobench.analysis.settle import SETTLE_TEXT
from isobench.analysis.suggest import Looks, Noise, Pace, Suggestion, looks_of, suggest
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP, Verdict
from isobench.core import tomlbound
from isobench.core.numbers import fmt_duration
from isobench.results.model import RunData

DEFAULT_REPETITIONS = 5  # study.StudyMeta's


def budget_looks(run: RunData) -> Looks | None:
    """The looks a `--budget` run of RUN's study would take (its
    repetitions the first block, its max_repetitions the cap); None when
    the study cannot take a budget (repetitions = "auto", a [noise] table:
    ``study.with_budget`` refuses them). A measure_for study can: `isobench
    try --budget` runs its study with the budget in measure_for's place
    (`run --budget` asks to keep one of them, in one line)."""
    try:
        doc = tomlbound.loads(run.study_text or "")
    except (tomllib.TOMLDecodeError, tomlbound.TomlBoundError):
        doc = {}
    raw = doc.get("study")
    meta: dict[str, object] = raw if isinstance(raw, dict) else {}
    repetitions = meta.get("repetitions", DEFAULT_REPETITIONS)
    cap = meta.get("max_repetitions")
    if "noise" in doc or type(repetitions) is not int:
        return None
    return looks_of(repetitions, len(run.environments), cap if type(cap) is int else None)


def run_pace(run: RunData | None) -> Pace | None:
    """RUN's own wall pace (``RunData.seconds_per_round``) and warm-up
    rounds; None when the store kept no times."""
    seconds = run.seconds_per_round() if run is not None else None
    return Pace(seconds, run.warmup_rounds) if run is not None and seconds else None


def cell_suggestion(verdict: Verdict, run: RunData | None, budget: bool = True) -> Suggestion:
    """What would settle VERDICT's cell at RUN's pace: its ``rounds_needed``
    (the same function, at the level without the run's looks) and, with
    ``budget`` and a study that can take one, the `--budget` run. ``budget``
    is False for a cell between two runs: a budgeted run stops when its own
    cells resolve, whatever a compare of it asks."""
    e = verdict.effect
    if not e.tested or verdict.rounds_needed is None:
        return Suggestion(None, None, None)
    noise = Noise(e.noise_sd, e.df, e.df_factor, e.df_lost, e.n_pairs or min(e.n_c, e.n_b))
    looks = budget_looks(run) if budget and run is not None else None
    return suggest(noise, verdict.fixed_q, verdict.margin_pct, looks, run_pace(run))


def suggestion_text(s: Suggestion) -> str:
    """ "about 13 rounds (4 times in 5, about 20 min here), or --budget 40m
    (its 8 looks test at alpha/8: 18 rounds, reached at its look at 24)";
    "more than 1000 rounds" beyond the cap. The one sentence every place
    says a suggestion with."""
    if s.rounds is None:
        return "more rounds than can be said"
    if s.beyond_cap:
        return f"more than {ROUNDS_NEEDED_CAP} rounds"
    when = f", about {fmt_duration(s.wall_s)} here" if s.wall_s is not None else ""
    # inside the parentheses: the sentence goes on ("... would settle it")
    beyond = (
        f"; more than {ROUNDS_NEEDED_CAP} in a budgeted run" if s.wall_s and not s.budget and s.budget_beyond else ""
    )
    return f"about {s.rounds} rounds ({SETTLE_TEXT}{when}{beyond})" + budget_clause(s)


def budget_clause(s: Suggestion) -> str:
    """ ", or --budget 40m (...)": the budgeted run, at a pace known; "" else."""
    b = s.budget
    if s.wall_s is None or b is None:  # none, or beyond the cap: suggestion_text says so
        return ""
    if b.budget is None:
        return f", or a budgeted run to its look at {b.look}: more than any --budget (24h)"
    cap = f" with max_repetitions = {b.max_repetitions}" if b.max_repetitions else ""
    return (
        f", or --budget {b.budget}{cap} (its {b.looks} looks test at alpha/{b.looks}: "
        f"{b.rounds} rounds, reached at its look at {b.look})"
    )


def budget_fields(verdict: Verdict | None, run: RunData) -> dict[str, int | str | None]:
    """An inconclusive cell's `--budget` run as the export holds it: the
    rounds at its looks' level, the look reaching them, the budget at the
    run's pace and the max_repetitions it needs; null where there is none
    (docs/export.md)."""
    b = cell_suggestion(verdict, run).budget if verdict is not None and verdict.rounds_needed is not None else None
    return {
        "budget_rounds_needed": b.rounds if b else None,
        "budget_look": b.look if b else None,
        "budget": b.budget if b else None,
        "budget_max_repetitions": b.max_repetitions if b else None,
    }
