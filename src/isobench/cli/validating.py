"""`isobench validate`: a study file checked without running anything, and
what its rounds can resolve on this host (--strict, --require-resolution:
exit 4 where the gate it precedes would be blind). Parsing and printing only."""

from __future__ import annotations

import click

from isobench.cli.common import (
    Failure,
    console,
    err_console,
    fold,
    shipped_or_path,
)
from isobench.cli.common import fail as _fail
from isobench.cli.output import (
    document,
    emit,
    error_document,
    gate_exit,
    output_option,
    table_format_option,
    to_stdout,
)
from isobench.core.numbers import plural


@click.command()
@click.argument("study_file", type=click.Path(dir_okay=False), callback=shipped_or_path)
@click.option("--allow-large", is_flag=True, help="Accept a study beyond the size limits (docs/reliability.md).")
@click.option(
    "--budget",
    metavar="DURATION",
    help="Check the study as `run --budget DURATION` would run it (30m, 1h30m, 90s or plain seconds).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 4 when the study can resolve nothing at its size on this host (only changes beyond "
    "+999% findable, ±tolerance equivalence beyond the planned rounds), or when the host's noise "
    "is not measured (`isobench doctor` measures it).",
)
@click.option(
    "--require-resolution",
    "require_pct",
    type=float,
    metavar="PCT",
    help="Exit 4 when the intervals that `compare A B --require-resolution PCT` would ask of two runs of "
    "this study are expected wider than ±PCT here (from the host's measured noise): the gate it precedes.",
)
@table_format_option("validate")
@output_option()
def validate(
    study_file: str,
    allow_large: bool,
    budget: str | None,
    strict: bool,
    require_pct: float | None,
    fmt: str,
    output: str | None,
) -> None:
    """Check a study file without running anything: its size, and what its
    rounds (or --budget) can resolve on this host, from the host's noise as
    `isobench doctor` last measured it. --json, the old spelling of
    --format json, works for one more release.

    \b
    Exit status (docs/output.md): 0 valid; 4 with --strict, a study that can
    resolve nothing at its size here (or a host whose noise is not
    measured); 2 a study that does not validate, or is too large.
    \b
    Example (CI): isobench validate studies/quick.toml --budget 30m --strict
    """
    try:
        _validate(study_file, allow_large, budget, (strict, require_pct), fmt, output)
    except Failure as exc:  # said on stderr already; a script reading stdout gets it as a document
        if fmt == "json":
            emit(error_document("validate", exc.message, {"study_file": study_file}), output)
        raise


def _validate(
    study_file: str, allow_large: bool, budget: str | None, strict: tuple[bool, float | None], fmt: str, output
) -> None:
    from isobench.study import StudyError, load_study, with_budget

    try:
        study = load_study(study_file)
        if budget is not None:
            study = with_budget(study, budget)
    except StudyError as exc:
        _fail(str(exc))
    from isobench.cli.execution import preflight_or_fail

    size = preflight_or_fail(study, allow_large, "--budget" if budget is not None else "study.budget")
    instances = sum(spec.instances for spec in study.environments.values())
    from isobench.checks.noisepilot import cached
    from isobench.cli.execution import study_outlook

    resolution, outlook = study_outlook(study, size, cached())  # the last pilot's figures: validate measures nothing
    unsupported = study.unsupported()
    from isobench.cli.execution import packages_or_fail

    packages = packages_or_fail(study, f"{study.path}: packages")
    explains = _explain_outlook(study)
    if fmt == "json":
        emit(
            document(
                "validate",
                {
                    "study_file": study_file,
                    "study": study.meta.name,
                    "ok": True,
                    "environments": list(study.environments),
                    "instances": instances,
                    "workloads": [w.workload for w in study.workloads],
                    "warmup": study.meta.warmup,
                    **_rounds(study.meta, study.budget_plan(), size),
                    "size": {
                        "cells": size.cells,
                        "rounds": size.rounds,
                        "samples": size.samples,
                        "estimated_s": round(size.estimated_s, 1),
                        "round_s": round(size.round_s, 3),
                        "budget_rounds": size.budget_rounds,  # a budget's measured rounds at this estimate
                        "periods": size.periods.as_json(),  # workloads in whole periods beyond `rounds`
                    },
                    "resolution": resolution,
                    "not_run": [
                        {"environment": env, "case": str(key), "reason": reason}
                        for (env, key), reason in unsupported.items()
                    ],
                    "packages_plan": packages.as_dict() if packages is not None else None,
                    "explain": _explain_json(explains, size.estimated_s),
                },
            ),
            output,
        )
        _strict(strict, outlook, study.meta.tolerance_pct)
        return
    lines = [
        f"{study_file}: ok \u2014 {plural(len(study.environments), 'environment')}"
        + (f" ({instances} instances)" if instances > len(study.environments) else "")
        + f", {plural(len(study.workloads), 'workload')}, "
        f"{study.meta.warmup} warm-up + {_repetitions_text(study.meta, study.budget_plan())}"
        + (
            f", {len(study.noise.steps)} {study.noise.stressor} noise steps {list(study.noise.steps)}"
            if study.noise
            else ""
        ),
        size.describe(),
        *resolution,
    ]
    lines += [f"not run: {key} in {env}: {reason}" for (env, key), reason in unsupported.items()]
    lines += [packages.line()] if packages is not None else []
    lines += _explain_lines(explains, size.estimated_s)
    if not to_stdout(output):
        emit("\n".join(lines), output)
    else:  # each fact folded to the terminal's width, its continuation indented
        fold(lines, console)
    _strict(strict, outlook, study.meta.tolerance_pct)


def _explain_outlook(study) -> list:
    """The study's [explain] at its most (run/explain.outlook); a follow-up
    that could not be built is refused here, as the run would refuse it."""
    from isobench.run.explain import ExplainError, outlook

    try:
        return outlook(study) if study.explain else []
    except ExplainError as exc:
        _fail(f"{study.path}: explain: {exc}")


def _explain_lines(explains: list, run_s: float) -> list[str]:
    from isobench.core.numbers import fmt_duration

    lines = [
        f"explain: after the run, each changed primary cell of {o.env} taken apart by {', '.join(o.settings)} "
        f"({o.environments} environments): at most about {fmt_duration(o.estimated_s)}, were every primary "
        "cell of it to change (docs/explain.md)"
        for o in explains
    ]
    if explains:
        total = run_s + sum(o.estimated_s for o in explains)
        lines.append(f"with the explains: at most about {fmt_duration(total)} in all")
    return lines


def _explain_json(explains: list, run_s: float) -> dict | None:
    if not explains:
        return None
    envs = [
        {
            "env": o.env,
            "settings": list(o.settings),
            "environments": o.environments,
            "estimated_s": round(o.estimated_s, 1),
        }
        for o in explains
    ]
    return {"envs": envs, "estimated_total_s": round(run_s + sum(o.estimated_s for o in explains), 1)}


def _strict(strict: tuple[bool, float | None], outlook, tol_pct: float) -> None:
    """validate --strict: exit 4 (output.EXIT_BLIND), saying why, when the
    study is blind at its size here or cannot tell (checks.resolution.Outlook);
    --require-resolution PCT: also when the gate it precedes would call two
    such runs blind."""
    strict_flag, pct = strict
    if not strict_flag and pct is None:
        return
    from isobench.results.suggestion import suggestion_text

    wide = outlook.blind(pct) if pct is not None else []
    if outlook.cells and not outlook.groups:
        why = (
            "the host's noise is not measured here lately, so what it can resolve is unknown; "
            "`isobench doctor` measures it"
        )
    elif outlook.resolves_nothing():
        said = [r for r, _, _ in outlook.groups if r.rounds_needed is not None and r.suggestion is not None]
        least = min(said, key=lambda r: r.rounds_needed or 0, default=None)
        more = suggestion_text(least.suggestion) if least is not None and least.suggestion is not None else ""
        why = (
            f"{outlook.at} it can resolve nothing here: only changes beyond +999% can be found and "
            f"\u00b1{tol_pct:g}% equivalence needs more rounds"
            + (f" ({more})" if more else "")
            + "; give it more rounds (repetitions, or --budget), or run it on a quieter host"
        )
    elif wide:
        named = "; ".join(f"{cells or 'its cells'} (at {noise}) about ±{w:.1f}%" for noise, cells, w in wide)
        why = (
            f"{outlook.at} the intervals a compare of two runs of it would have are expected wider than "
            f"±{pct:g}% here: {named}; give it more rounds (repetitions, or --budget), gate only the cells "
            "this host can resolve (the study's primary list), or a wider --require-resolution"
        )
    else:
        return
    err_console.print(f"blind: {why}", style="bold red", markup=False, highlight=False, soft_wrap=True)
    gate_exit(False, True)


def _rounds(meta, plan, size) -> dict:
    """validate's JSON rounds: `repetitions` the fixed count (null when
    adaptive or under a budget), `rounds` the bounds (a fixed study's: its
    workloads' fewest and most, checks.preflight.Periods), `repetitions_text` the words."""
    if plan is not None:
        mode, low, high = "budget", plan.first, plan.cap
    elif meta.adaptive:
        mode, low, high = "auto", meta.adaptive_schedule.min_rounds, meta.adaptive_schedule.max_rounds
    else:
        low = size.rounds - size.warmup
        mode, high = "fixed", max(low, size.periods.rounds)
    return {
        "repetitions": meta.repetitions if mode == "fixed" else None,
        "rounds_plan": {"mode": mode, "min": low, "max": high},
        "repetitions_text": _repetitions_text(meta, plan),
    }


def _repetitions_text(meta, plan=None) -> str:
    if plan is not None:
        return (  # its rounds are said once, in the size line (StudySize.budget_rounds)
            f"a {meta.budget} budget (a first block of every case, then blocks to the cases still "
            f"open, up to {plan.cap} rounds; {plan.looks} planned looks)"
        )
    if not meta.adaptive:
        return f"{meta.repetitions} repetitions"
    s = meta.adaptive_schedule
    return (
        f"auto repetitions ({s.min_rounds} to {s.max_rounds} rounds in blocks of {s.block}, "
        f"until every cell's 95% CI is within \u00b1{meta.target_ci_pct:g}%)"
    )
