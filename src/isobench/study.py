"""The study file: environments × workloads × repetitions, validated before
anything runs. Every error is one line naming the file, the field and what
is allowed."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from isobench.analysis.budget import Plan, make_plan, parse_duration
from isobench.analysis.order import balanced_rounds
from isobench.analysis.repetitions import AUTO_MIN, AUTO_TARGET_CI_PCT, Schedule, schedule_of
from isobench.analysis.stats import DEFAULT_TOL_PCT
from isobench.core import tomlbound
from isobench.core.ids import NAME_RE, NAME_RULE, shown
from isobench.core.plants import CannotPlant, plant_problem
from isobench.core.readbound import BoundedReadError, read_bounded
from isobench.core.strictmodel import StrictModel, fields_at
from isobench.envs.explainask import ExplainAsk, explain_targets
from isobench.envs.kinds import EnvSpec, kind_of, kinds, presets
from isobench.host.noise import NoiseSpec
from isobench.workloads import WORKLOADS, claiming_fields, table_kind
from isobench.workloads.base import NO_HOST, Workload, WorkloadParams


class StudyError(ValueError):
    """A study file that cannot run; str() is the one-line message."""


class StudyMeta(StrictModel):
    name: str
    description: str = ""
    # measured rounds, or "auto": blocks of rounds until every cell's 95% CI
    # half-width is within target_ci_pct, or max_repetitions (docs/statistics.md)
    repetitions: int | Literal["auto"] = Field(default=5)
    target_ci_pct: float = Field(default=AUTO_TARGET_CI_PCT, gt=0, lt=100)
    min_repetitions: int = Field(default=AUTO_MIN, ge=2, le=1000)
    block: int | None = Field(default=None, ge=1, le=1000)  # default: min_repetitions
    max_repetitions: int | None = Field(default=None, ge=2, le=1000)  # default: 4 x min_repetitions
    warmup: int = Field(default=1, ge=0, le=100)
    baseline: str = "native"
    # interleaved: A B A B per cell, rotating who goes first each round, so
    # drift does not masquerade as overhead; blocked: all of A then all of B.
    order: Literal["interleaved", "blocked"] = "interleaved"
    # sequential: one sample at a time; duet: each environment's sample runs
    # at the same time as the baseline's, each on its own host CPUs, so the
    # host's moods hit both (run/duet.py, docs/statistics.md#duet)
    schedule: Literal["sequential", "duet"] = "sequential"
    # a cell whose interval lies within ±tolerance_pct is "equivalent"
    tolerance_pct: float = Field(default=DEFAULT_TOL_PCT, gt=0, lt=100)
    # changes within ±pct of a workload ("fio") or one metric ("fio.iops") are
    # never "changed": the metric moves that much between runs anyway
    noise_floor_pct: dict[str, float] = Field(default_factory=dict)
    # "30m": after a first block of `repetitions` rounds, rounds go to the
    # workload cases that can still resolve in the time left (isobench.analysis.budget)
    budget: str | None = None
    # "3m": after the warm-up, as many measured rounds as fit in about this
    # long at the warm-up's pace, at least `repetitions` (run/looks.py
    # fitted_rounds): a short command gets more rounds than a long one, and
    # the rounds are fixed before any is measured (one test, at alpha)
    measure_for: str | None = None
    # environment -> planted slowdown, percent: its samples do that much more
    # of the same work, counted as the base work (Workload.planted; written
    # by isobench calibrate, docs/calibrate.md)
    plants: dict[str, float] = Field(default_factory=dict)

    @field_validator("plants")
    @classmethod
    def _plants(cls, v: dict[str, float]) -> dict[str, float]:
        for env, pct in v.items():
            if plant_problem(pct):
                raise ValueError(f"{env}: {plant_problem(pct)}")
        return v

    @field_validator("budget", mode="before")
    @classmethod
    def _budget(cls, v):
        if v is not None:
            parse_duration(v if isinstance(v, str) else repr(v))
        return v

    @property
    def budget_s(self) -> float | None:
        return parse_duration(self.budget) if self.budget is not None else None

    @field_validator("measure_for")
    @classmethod
    def _measure_for(cls, v):
        if v is not None:
            parse_duration(v if isinstance(v, str) else repr(v))
        return v

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, v):
        # before the union, so that true or "5" gets this line, not one per member
        if v != "auto" and (type(v) is not int or not 1 <= v <= 1000):
            raise ValueError('must be a whole number from 1 to 1000, or "auto"')
        return v

    @field_validator("noise_floor_pct")
    @classmethod
    def _floors(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k, pct in v.items() if not 0 <= pct < 100]
        if bad:
            raise ValueError(f"{bad[0]}: a noise floor is a percentage in [0, 100)")
        return v

    @model_validator(mode="after")
    def _schedule(self) -> StudyMeta:
        if self.budget is not None and self.adaptive:
            raise ValueError(
                'budget and repetitions = "auto" are two stopping rules: keep one '
                "(with a budget, repetitions is the first block)"
            )
        if self.measure_for is not None and (self.budget is not None or self.adaptive):
            raise ValueError(
                'measure_for fixes the rounds after the warm-up; a budget or repetitions = "auto" '
                "decides them as it measures: keep one"
            )
        if self.adaptive:
            try:
                _ = self.adaptive_schedule  # computing it is the check
            except ValueError:
                raise ValueError(
                    f"max_repetitions ({self.max_repetitions}) must be at least "
                    f"min_repetitions ({self.min_repetitions})"
                ) from None
        return self

    @property
    def adaptive(self) -> bool:
        return self.repetitions == "auto"

    @property
    def adaptive_schedule(self) -> Schedule:
        """The adaptive schedule (a fixed run: one look at its repetitions)."""
        if isinstance(self.repetitions, int):  # not adaptive
            return Schedule(max(self.repetitions, 2), 1, max(self.repetitions, 2))
        return schedule_of(self.model_dump())

    @property
    def planned_rounds(self) -> int:
        """Measured rounds a fixed run makes, the most an adaptive one may."""
        return self.repetitions if isinstance(self.repetitions, int) else self.adaptive_schedule.max_rounds

    def rounds_for(self, workload: Workload, envs: int) -> int:
        """A fixed run's measured rounds of this workload's cells over
        ``envs`` environments: its repetitions, rounded up to whole periods
        of the Williams rotation where they run one sample at a time, so
        that each environment is first in a round, and follows each other,
        equally often (docs/statistics.md#order), when that makes the run
        at most half again as long (analysis.order.balanced_rounds: 3 rounds
        of 5 environments stay 3; the report's position warning says where
        the order was not balanced). Not for a duet's cells (a pair's two
        samples share their place in the round, and its test averages the
        two CPU sides), the blocked order (no rotation), nor runs whose
        rounds are chosen as they go (adaptive, budgeted, measure_for: the
        position warning covers them; a budget's blocks are whole Latin
        squares already): ``planned_rounds``."""
        planned = self.planned_rounds
        fixed = not (self.adaptive or self.budget is not None or self.measure_for is not None)
        # a table its warm-up decides (a user's command) counts as the duet it
        # mostly becomes; decided otherwise, the position warning covers it
        paired = self.schedule == "duet" and workload.may_duet()
        if not fixed or paired or self.order == "blocked":
            return planned
        return balanced_rounds(planned, envs)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise ValueError(f"must be {NAME_RULE}")
        return v


@dataclass(frozen=True)
class WorkloadEntry:
    key: str  # the study's name for it (the table name)
    workload: str  # the workload kind, a key of WORKLOADS
    params: WorkloadParams


@dataclass(frozen=True)
class Study:
    path: str
    text: str
    meta: StudyMeta
    environments: dict[str, EnvSpec]  # each a registered kind's spec model (envs/kinds.py)
    workloads: list[WorkloadEntry]
    noise: NoiseSpec | None = None  # the stepped background load ([noise])
    # what paths in it (a command's files) are relative to: the study file's
    # directory; for a study made in memory (isobench try), the current one
    base_dir: str = "."
    # [explain]: environment -> the settings its explain moves after the run,
    # () for every one it differs in (explain's own default); {}: no [explain]
    explain: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def budget_plan(self) -> Plan | None:
        """A budgeted study's looks, fixed before it runs (isobench.analysis.budget)."""
        meta = self.meta
        if meta.budget_s is None:
            return None
        return make_plan(meta.budget_s, int(meta.repetitions), len(self.environments), meta.max_repetitions)

    def unsupported(self) -> dict[tuple[str, str], str]:
        """(environment, workload key) -> why that environment cannot run the
        workload at all (EnvKind.unsupported): those cells are never run."""
        out = {}
        for name, spec in self.environments.items():
            for entry in self.workloads:
                reason = kind_of(spec.kind).unsupported(spec, entry.workload)
                if reason:
                    out[(name, entry.key)] = reason
        return out


def _one_line(path: str, exc: ValidationError, prefix: tuple, model: type[BaseModel] | None) -> str:
    """pydantic's errors as one line: file: field: what is wrong (and what is allowed)."""
    msgs = []
    for err in exc.errors():
        loc = prefix + tuple(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            allowed = _fields_of(model, loc, len(prefix))
            msg = "unknown field" + (f"; allowed: {', '.join(allowed)}" if allowed else "")
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")  # pydantic's prefix says nothing to a user
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        msgs.append(f"{where}: {msg}")
    return f"{path}: " + "; ".join(msgs)


def _fields_of(model: type[BaseModel] | None, loc: tuple, skip: int) -> list[str]:
    """The allowed fields of the table holding loc's last part (the rejected one)."""
    if loc[:1] == ("study",):
        model, skip = StudyMeta, 1
    if loc[:1] == ("explain",):
        model, skip = ExplainAsk, 1
    return fields_at(model, loc[skip:-1]) if model is not None else []


def _expand_presets(path: str, raw_envs: Any) -> dict[str, Any]:
    if not isinstance(raw_envs, dict) or not raw_envs:
        raise StudyError(f"{path}: environments: at least one [environments.NAME] table is required")
    out = {}
    # Presets mirror the studies' configurations; a table named after a
    # preset needs no body, and any field given overrides the preset's.
    known, shorthands = list(kinds()), presets()
    for name, body in raw_envs.items():
        if not NAME_RE.fullmatch(name):
            raise StudyError(f"{path}: environments.{name}: bad name; use {NAME_RULE}")
        if not isinstance(body, dict):
            raise StudyError(f"{path}: environments.{name}: must be a table")
        body = dict(body)
        preset = body.pop("preset", None)
        if preset is None and "kind" not in body and name in shorthands:
            preset = name
        if preset is not None:
            if not isinstance(preset, str) or preset not in shorthands:
                raise StudyError(
                    f"{path}: environments.{name}.preset: unknown preset {preset!r}; allowed: {', '.join(shorthands)}"
                )
            body = {**shorthands[preset], **body}
        if not isinstance(body.get("kind"), str) or body.get("kind") not in known:
            raise StudyError(
                f"{path}: environments.{name}.kind: must be one of {', '.join(known)} "
                f"(or name a preset: {', '.join(shorthands)})"
            )
        out[name] = body
    return out


def _workload_entries(path: str, raw: Any, base_dir: str) -> list[WorkloadEntry]:
    if not isinstance(raw, dict) or not raw:
        raise StudyError(f"{path}: workloads: at least one [workloads.NAME] table is required")
    entries = []
    for key, body in raw.items():
        if not NAME_RE.fullmatch(key):
            raise StudyError(f"{path}: workloads.{key}: bad name; use {NAME_RULE}")
        if not isinstance(body, dict):
            raise StudyError(f"{path}: workloads.{key}: must be a table ([workloads.{key}])")
        body = dict(body)
        kind = body.pop("workload") if "workload" in body else table_kind(key, body) or key
        if not isinstance(kind, str) or kind not in WORKLOADS:
            own = "".join(f", or give {f} = [...] to measure your own program" for f in claiming_fields())
            raise StudyError(
                f"{path}: workloads.{key}: unknown workload {kind!r}; allowed: "
                f'{", ".join(sorted(WORKLOADS))} (or set workload = "..."{own})'
            )
        cls = WORKLOADS[kind]
        try:
            params = cls.Params.model_validate(body, context={"base_dir": base_dir})
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("workloads", key), cls.Params)) from None
        _check_primary(path, key, kind, params)
        entries.append(WorkloadEntry(key, kind, params))
    return entries


def _check_primary(path: str, key: str, kind: str, params: WorkloadParams) -> None:
    """Every name of a table's ``primary`` list is one its cases emit with
    these parameters (Workload.primary_problem), before anything starts."""
    problem = WORKLOADS[kind](params, NO_HOST).primary_problem() if params.primary else ""
    if problem:
        raise StudyError(f"{path}: workloads.{key}.primary: {problem}")


def _check_plants(path: str, meta: StudyMeta, envs: list[str], workloads: list[WorkloadEntry]) -> None:
    """Each planted environment is one of the study's other than the
    baseline, and every workload can do its planted share of extra work
    (Workload.planted)."""
    for env, pct in meta.plants.items():
        if env not in envs:
            raise StudyError(f"{path}: study.plants.{env}: not one of the environments ({', '.join(envs[:12])})")
        if env == meta.baseline:
            raise StudyError(
                f"{path}: study.plants.{env}: the baseline is what plants are measured against; plant another"
            )
        for entry in workloads:
            try:
                WORKLOADS[entry.workload](entry.params, NO_HOST).planted(pct)
            except CannotPlant as exc:
                raise StudyError(f"{path}: study.plants.{env}: workloads.{entry.key}: {exc}") from None


def _explain(path: str, raw: Any, specs: dict[str, EnvSpec], baseline: str) -> dict[str, tuple[str, ...]]:
    """[explain] read and checked against the environments (envs/explainask.py)."""
    try:
        return explain_targets(ExplainAsk.model_validate(raw), specs, baseline)
    except ValidationError as exc:
        raise StudyError(_one_line(path, exc, ("explain",), ExplainAsk)) from None
    except ValueError as exc:  # explain_targets' own: the field named
        raise StudyError(f"{path}: {exc}") from None


def parse_study(text: str, path: str = "<study>", base_dir: str | None = None) -> Study:
    """The study in ``text``, named ``path`` in every message; its relative
    paths resolve against ``base_dir`` (default: the current directory)."""
    base_dir = os.path.abspath(base_dir if base_dir is not None else ".")
    try:
        raw = tomlbound.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path}: not valid TOML: {exc}") from None
    except tomlbound.TomlBoundError as exc:  # before tomllib: its cost grows with depth times keys
        raise StudyError(f"{path}: {exc}") from None
    tables = ("study", "environments", "workloads", "noise", "explain")
    if unknown := sorted(set(raw) - set(tables)):
        raise StudyError(f"{path}: {unknown[0]}: unknown table; allowed: {', '.join(tables)}")
    if not isinstance(raw.get("study"), dict):
        raise StudyError(f'{path}: study: a [study] table with at least name = "..." is required')
    envs = _expand_presets(path, raw.get("environments"))
    workloads = _workload_entries(path, raw.get("workloads"), base_dir)
    specs: dict[str, EnvSpec] = {}
    for name, body in envs.items():
        spec_cls = kinds()[body["kind"]].spec
        try:
            specs[name] = spec_cls.model_validate(body)
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("environments", name), spec_cls)) from None
    try:
        meta = StudyMeta.model_validate(raw["study"])
    except ValidationError as exc:
        raise StudyError(_one_line(path, exc, ("study",), StudyMeta)) from None
    workload_keys = {e.key for e in workloads}
    unknown_floor = [k for k in meta.noise_floor_pct if k.split(".", 1)[0] not in workload_keys]
    if unknown_floor:
        raise StudyError(
            f"{path}: study.noise_floor_pct.{unknown_floor[0]}: no such workload in this study "
            f"({', '.join(sorted(workload_keys))}); write WORKLOAD or WORKLOAD.METRIC"
        )
    if meta.baseline not in specs:
        names = list(specs)
        shown = ", ".join(names[:12]) + (f", ... {len(names) - 12} more" if len(names) > 12 else "")
        raise StudyError(f"{path}: study.baseline: {meta.baseline!r} is not one of the environments ({shown})")
    _check_plants(path, meta, list(specs), workloads)
    noise = None
    if "noise" in raw and meta.budget is not None:
        raise StudyError(
            f"{path}: study.budget: not with a [noise] table (each noise step would need its own "
            "budget); remove one of them"
        )
    if "noise" in raw:
        try:
            noise = NoiseSpec.model_validate(raw["noise"])
        except ValidationError as exc:
            raise StudyError(_one_line(path, exc, ("noise",), NoiseSpec)) from None
    explain = _explain(path, raw["explain"], specs, meta.baseline) if "explain" in raw else {}
    return Study(path, text, meta, specs, workloads, noise, base_dir, explain)


def with_budget(study: Study, budget: str, label: str = "--budget") -> Study:
    """The study with a time budget given outside its file (``run --budget``,
    or the one a resumed run stored), checked as the file's would be."""
    if study.noise is not None:
        raise StudyError(
            f"{label} {shown(budget)}: not with the study's [noise] table (each noise step would need its own budget)"
        )
    try:
        meta = StudyMeta.model_validate({**study.meta.model_dump(), "budget": budget})
    except ValidationError as exc:
        msg = _one_line(study.path, exc, ("study",), StudyMeta).split(": ", 2)[-1]
        raise StudyError(f"{label} {shown(budget)}: {msg}") from None
    return dataclasses.replace(study, meta=meta)


def with_schedule(study: Study, schedule: str, label: str = "--schedule") -> Study:
    """The study under a schedule given outside its file (``run --schedule``,
    or the one a resumed run stored)."""
    try:
        meta = StudyMeta.model_validate({**study.meta.model_dump(), "schedule": schedule})
    except ValidationError as exc:
        msg = _one_line(study.path, exc, ("study",), StudyMeta).split(": ", 2)[-1]
        raise StudyError(f"{label} {shown(schedule)}: {msg}") from None
    return dataclasses.replace(study, meta=meta)


# A study is a page of TOML; this leaves room for generated ones and refuses
# a wrong file (a log, an image) in milliseconds instead of parsing it.
STUDY_CAP = 1 << 20


def load_study(path: str | Path) -> Study:
    p = Path(path)
    try:
        data = read_bounded(p, STUDY_CAP, "study file")
    except BoundedReadError as exc:
        raise StudyError(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StudyError(
            f"{p}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); "
            "a study is a TOML file saved as UTF-8"
        ) from None
    return parse_study(text, str(p), os.path.dirname(os.path.abspath(p)))
