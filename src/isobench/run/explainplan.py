"""`isobench explain`'s follow-up study, built from a stored run's study
(docs/explain.md). Pure: the settings in which an environment differs from
the run's baseline (its kind's EnvKind.settings), one variant of it per
setting with just that setting moved to the baseline's side, one with all
of them moved when there are two or more (the interaction check), and the
study that measures them beside the baseline and the environment itself.

The baseline's side of a setting (envs/kinds.baseline_side): the baseline's
own value when it is of the same kind; else the value in the kind's
``host_side`` preset, the one nearest the host itself (Docker's placebo:
host namespaces, no profile, a volume, no limit)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from isobench.core import tomlbound
from isobench.core.ids import NAME_MAX
from isobench.envs.kinds import EnvSpec, differing, kind_of
from isobench.study import Study, StudyError, parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import NO_HOST

ARROW = "\u2192"
JOINT = "all-back"  # the variant with every setting moved


class ExplainError(ValueError):
    """Bad input to explain: str() is the one line naming the field and the fix."""


@dataclass(frozen=True)
class Move:
    """One setting moved: its fields' values on the baseline's side
    (``there``) and in the environment (``here``), and the variant that
    measures the environment with it moved."""

    setting: str
    there: tuple[tuple[str, Any], ...]
    here: tuple[tuple[str, Any], ...]
    variant: str = ""

    @property
    def label(self) -> str:
        """ "network host→bridge": from the baseline's side to the environment's."""
        return f"{self.setting} {value_text(self.there)}{ARROW}{value_text(self.here)}"

    def fact(self) -> dict:
        return {
            "setting": self.setting,
            "variant": self.variant,
            "label": self.label,
            "from": dict(self.there),
            "to": dict(self.here),
        }


def value_text(pairs: tuple[tuple[str, Any], ...]) -> str:
    """A setting's value as a study file spells it; its other fields after a
    '/' (runsc/systrap); "none" for an unset limit."""
    words = [str(v).lower() if isinstance(v, bool) else str(v) for _, v in pairs if v is not None]
    return "/".join(words) or "none"


@dataclass(frozen=True)
class Source:
    """The run being explained: its id, its study rebuilt, the study's tables."""

    run_id: str
    study: Study
    raw: dict


def source_of(run_id: str, text: str, base_dir: str) -> Source:
    """The stored study of ``run_id``, rebuilt; ExplainError where it cannot be."""
    try:
        study = parse_study(text, f"run {run_id}'s stored study", base_dir)
        raw = tomlbound.loads(text)
    except (StudyError, tomllib.TOMLDecodeError, tomlbound.TomlBoundError) as exc:
        raise ExplainError(
            f"run {run_id}: its stored study cannot be rebuilt here ({exc}); explain measures the environment "
            "again from it: run the study here, then explain that run"
        ) from None
    return Source(run_id, study, raw)


def moves(env: str, spec: EnvSpec, baseline: str, base_spec: EnvSpec, names: tuple[str, ...] = ()) -> list[Move]:
    """The settings ``env`` differs from ``baseline`` in (only ``names``,
    when given), in its kind's order; ExplainError for a name its kind has
    no notion of, or one it does not differ in."""
    kind = kind_of(spec.kind)
    unknown = [n for n in names if n not in kind.settings]
    if unknown:
        known = ", ".join(kind.settings) or "none"
        raise ExplainError(
            f"--setting {unknown[0]}: a {kind.name} environment has no such setting; its settings: {known}"
        )
    found = [Move(name, there, here) for name, there, here in differing(spec, base_spec)]
    differ = {m.setting for m in found}
    same = [n for n in names if n not in differ]
    if same:
        raise ExplainError(
            f"--setting {same[0]}: {env} does not differ from {baseline} in it; it differs in: "
            f"{', '.join(sorted(differ)) or 'no setting explain can move'}"
        )
    return [m for m in found if not names or m.setting in names]


def moved(spec: EnvSpec, chosen: list[Move]) -> EnvSpec:
    """``spec`` with the chosen settings on the baseline's side, validated
    as a study's would be; ExplainError naming the setting where not valid."""
    body = spec.model_dump()
    for m in chosen:
        body.update(dict(m.there))
    try:
        return type(spec).model_validate(body)
    except ValidationError as exc:
        what = ", ".join(m.setting for m in chosen)
        raise ExplainError(
            f"--setting {what}: moved, the environment is not valid ({exc.errors()[0]['msg']})"
        ) from None


def spec_table(spec: EnvSpec) -> dict:
    """A study's table for ``spec``: its kind and every field not at its default."""
    body = {k: v for k, v in spec.model_dump(mode="json", exclude_defaults=True).items() if v is not None}
    return {"kind": spec.kind, **body}


def narrowed(source: Source, key: str, cases: list[str]) -> dict:
    """The study's table ``key`` measuring only ``cases`` where one of its
    fields can say so (fio's cases = [...], a sweep's clients = [...]: the
    workload's own cases() decides), else the table as it is."""
    body = dict(source.raw["workloads"][key])
    entry = next(e for e in source.study.workloads if e.key == key)
    cls = WORKLOADS[entry.workload]
    for field, values in _narrowings(cases):
        if field not in cls.Params.model_fields:
            continue
        table = {**body, field: values}
        try:
            params = cls.Params.model_validate(
                {k: v for k, v in table.items() if k != "workload"}, context={"base_dir": source.study.base_dir}
            )
        except ValidationError:
            continue
        if sorted(cls(params, NO_HOST).cases()) == sorted(cases):
            return table
    return body


def _narrowings(cases: list[str]) -> list[tuple[str, list]]:
    """The fields that might name these cases alone: cases = [...], or the
    swept parameter of cases named NAME=N (clients = [...], rates = [...])."""
    out: list[tuple[str, list]] = [("cases", list(cases))]
    split = [c.partition("=") for c in cases]
    names = {name for name, _, _ in split}
    if len(names) == 1 and all(sep and value.isdigit() for _, sep, value in split):
        name, values = names.pop(), [int(value) for _, _, value in split]
        out += [(name, values), (f"{name}s", values)]
    return out


@dataclass(frozen=True)
class ExplainPlan:
    """One environment's explain: its follow-up study and what each of its
    environments stands for (kept with the run as its ``explain`` fact)."""

    explains: str
    env: str
    baseline: str
    cells: tuple[tuple[str, str], ...]  # (workload key, case) explained
    moves: tuple[Move, ...]
    joint: str | None  # the variant with every setting moved; None with one setting
    study: Study

    def fact(self) -> dict:
        return {
            "explains": self.explains,
            "env": self.env,
            "baseline": self.baseline,
            "cells": [list(c) for c in self.cells],
            "settings": [m.fact() for m in self.moves],
            "joint": self.joint,
        }


def _free(name: str, taken: dict) -> str:
    while name in taken:
        name = f"x-{name}"[:NAME_MAX]
    return name


def variants(env: str, specs: dict[str, EnvSpec], chosen: list[Move]) -> tuple[list[Move], str | None]:
    """Each move named and its variant added to ``specs`` (after the baseline
    and ``env``), then the joint variant when there are two or more."""
    named = []
    for m in chosen:
        variant = _free(f"{m.setting}-back", specs)
        specs[variant] = moved(specs[env], [m])
        named.append(Move(m.setting, m.there, m.here, variant))
    joint = None
    if len(named) >= 2:
        joint = _free(JOINT, specs)
        specs[joint] = moved(specs[env], named)
    return named, joint


def study_text(source: Source, name: str, specs: dict[str, EnvSpec], tables: dict, meta: dict) -> str:
    """The follow-up study as TOML: ``meta`` over the source's analysis
    settings (tolerance, the noise floors of the tables kept)."""
    import tomli_w

    given = source.raw.get("study", {})
    floors = {k: v for k, v in given.get("noise_floor_pct", {}).items() if k.split(".", 1)[0] in tables}
    study: dict = {"name": name, **meta}
    if "tolerance_pct" in given:
        study["tolerance_pct"] = given["tolerance_pct"]
    if floors:
        study["noise_floor_pct"] = floors
    doc = {"study": study, "environments": {n: spec_table(s) for n, s in specs.items()}, "workloads": tables}
    return f"# Made by `isobench explain {source.run_id}`: docs/explain.md\n" + tomli_w.dumps(doc)


def build_plan(
    source: Source,
    env: str,
    cells: list[tuple[str, str]],
    chosen: list[Move],
    *,
    rounds: int,
    warmup: int,
    schedule: str,
) -> ExplainPlan:
    """The follow-up study of ``env``'s ``cells`` (their tables narrowed to
    them), with one variant per chosen move; validated as any study is."""
    study = source.study
    baseline = study.meta.baseline
    if not chosen:
        kind = kind_of(study.environments[env].kind)
        raise ExplainError(
            f"{env} differs from {baseline} in no setting explain can move (a {kind.name} environment's: "
            f"{', '.join(kind.settings) or 'none'}): its whole gap is its kind's own"
        )
    specs = {baseline: study.environments[baseline], env: study.environments[env]}
    named, joint = variants(env, specs, chosen)
    keys = list(dict.fromkeys(key for key, _ in cells))
    tables = {key: narrowed(source, key, [c for k, c in cells if k == key]) for key in keys}
    meta: dict = {
        "description": f"isobench explain {source.run_id}: {env} against {baseline}, one setting at a time",
        "baseline": baseline,
        "repetitions": max(rounds, 2),
        "warmup": warmup,
        "schedule": schedule,
    }
    name = f"explain-{env}"[:NAME_MAX].rstrip("-")
    text = study_text(source, name, specs, tables, meta)
    try:
        follow = parse_study(text, f"the explain of run {source.run_id}", study.base_dir)
    except StudyError as exc:
        raise ExplainError(str(exc)) from None
    assert follow.environments == specs, "a variant did not survive its study table"  # spec_table's round trip
    return ExplainPlan(source.run_id, env, baseline, tuple(cells), tuple(named), joint, follow)
