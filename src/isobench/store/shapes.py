"""The one declared shape of what a store keeps beside its columns: the
run's host facts, each environment's facts and each sample's extra, as
pydantic models of the keys some reader reads (other keys are kept and shown
as text). `import` refuses what does not fit, naming the field; readers of a
store written before (or by hand) drop a value that does not fit, treat it
as absent and say so once (``readable``).

Every number is finite; every name is bounded (NAME_LIMIT)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from isobench.core.ids import printable
from isobench.core.metric import value_problem

# metric, case and workload names, counter names, fact keys a renderer shows
NAME_LIMIT = 128

Finite = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(max_length=NAME_LIMIT)]
Scalar = bool | int | Finite | str | None


class _Part(BaseModel):
    # unknown keys are facts too (shown as text); declared ones must fit
    model_config = ConfigDict(extra="allow", strict=False)


class Finding(_Part):
    """One `isobench doctor` check kept with the run."""

    check: Name
    status: Name
    value: Scalar = None
    fix: str | None = None


class BudgetCase(_Part):
    state: Name = "?"


class Budget(_Part):
    budget_s: Count = 0.0
    spent_s: Count | None = None
    looks: Annotated[int, Field(ge=1, le=1000)] = 1
    points: list[Annotated[int, Field(ge=0, le=1000)]] = []
    cases: dict[Name, BudgetCase] = {}


class Look(_Part):
    rounds: Annotated[int, Field(ge=0, le=1000)]
    text: str


class ExplainSetting(_Part):
    setting: Name
    variant: Name
    label: str


class Explain(_Part):
    """An explain run's link to the run it explains (run/explainplan.py)."""

    explains: Name
    env: Name
    baseline: Name
    cells: list[tuple[Name, Name]] = []
    settings: list[ExplainSetting] = []
    joint: Name | None = None


class HostFacts(_Part):
    cores: Count | None = None
    mem_bytes: Count | None = None
    hostname: str | None = None
    cpu_model: str | None = None
    hypervisor: Name | None = None  # "none" on bare metal (host/facts.py)
    doctor: list[Finding] = []
    adaptive: dict[Name, list[Look]] = {}
    budget: Budget | None = None
    fleet: dict[Name, Any] | None = None
    imported: dict[Name, Any] | None = None  # set by `isobench import` (store/transfer.py): a stranger's run
    explain: Explain | None = None  # `isobench explain`: what this run explains


class DensityPoint(_Part):
    n: Annotated[int, Field(ge=1, le=100_000)]
    startup_s: Count
    # a difference of two MemAvailable readings: negative when the host freed
    # more than the instance took (a busy host's page cache moving)
    mem_per_instance_bytes: Finite
    vmm_pss_bytes: Count | None = None


class EnvFacts(_Part):
    kind: Name | None = None
    options: dict[Name, Any] = {}
    tool_versions: dict[Name, Scalar] = {}
    library_versions: dict[Name, Scalar] = {}  # the tools' libraries (envs/base.library_versions)
    density: list[DensityPoint] = []
    unsupported: dict[Name, str] = {}
    emulated: bool | str | None = None
    placebo: bool | None = None  # the least isolation its kind allows (results/placebo.py)


HIST_SUFFIX = "_hist"


class SampleExtra(_Part):
    units: tuple[Name, Count] | None = None
    counters: dict[Name, Finite | None] = {}
    validity: dict[Name, str] | list[str] = {}
    duet: dict[Name, Any] | None = None  # run/duet.py: partner, skew, overlap

    @field_validator("units", mode="before")
    @classmethod
    def _units(cls, v):
        if v is not None and not (isinstance(v, list) and len(v) == 2):
            raise ValueError("must be [unit, count]")
        return v

    @model_validator(mode="after")
    def _histograms(self):
        """``<name>_hist``: [[latency, count], ...] of finite, non-negative numbers."""
        for name, hist in (self.model_extra or {}).items():
            if name.endswith(HIST_SUFFIX) and not _histogram(hist):
                raise ValueError(f"{name}: a histogram is [[value, count], ...] of finite numbers")
        return self


def _histogram(hist) -> bool:
    """[[value, count], ...] of finite, non-negative numbers (numpy: a
    histogram has thousands of bins, a run thousands of them)."""
    if not isinstance(hist, list):
        return False
    if not hist:
        return True
    import numpy as np  # here: opening a store (`isobench runs`) need not load numpy

    try:
        a = np.asarray(hist, dtype=float)
    except (ValueError, TypeError):  # ragged, or not numbers
        return False
    return a.ndim == 2 and a.shape[1] == 2 and bool(np.isfinite(a).all() and (a >= 0).all())


class ShapeError(ValueError):
    """str() names the field: ``facts.density[0].startup_s: Field required``."""


def _where(err: Mapping[str, Any], prefix: str) -> str:
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
    return f"{prefix}{loc}"


def check(model: type[_Part], value: dict, where: str) -> None:
    """At import: VALUE fits MODEL, or ShapeError naming the first field that does not."""
    try:
        model.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        raise ShapeError(f"{_where(err, where)}: {msg}") from None


_said: set[str] = set()


def readable(model: type[_Part], value, where: str) -> dict:
    """For readers: VALUE with every top-level key that does not fit MODEL
    dropped (treated as absent), said once per WHERE on stderr."""
    if not isinstance(value, dict):
        _say(where, ["(the whole value)"])
        return {}
    value, dropped = dict(value), []
    for _ in range(len(value) + 1):
        try:
            model.model_validate(value)
            break
        except ValidationError as exc:
            keys = {e["loc"][0] for e in exc.errors() if e["loc"]} or set(value)
            for k in keys:
                value.pop(k, None)
                dropped.append(str(k))
    if dropped:
        _say(where, dropped)
    return value


def _say(where: str, keys: list[str]) -> None:
    if where in _said:
        return
    _said.add(where)
    print(
        printable(
            f"note: {where}: unreadable stored value(s) {', '.join(sorted(set(keys))[:5])} "
            "treated as absent (a store written by hand or by another version)"
        ),
        file=sys.stderr,
    )


def stored(model: type[_Part], text, where: str) -> dict:
    """A stored JSON column read for a renderer: ``readable`` of its value
    (JSON that does not parse is absent too)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        value = None
    return readable(model, value, where)


def explains_of(text) -> str | None:
    """The run a stored ``host_facts`` column says this run explains (its
    ``explain`` fact, Explain), control characters escaped; None for another
    run, or a fact that does not read (a store written by hand)."""
    value = _json(text)
    fact = value.get("explain") if isinstance(value, dict) else None
    if fact is None:
        return None
    try:
        return printable(Explain.model_validate(fact).explains)
    except ValidationError:
        return None


def printable_facts(value):
    """Facts as read back for reports: every string with its control
    characters escaped (a fact or a tool's output may hold ESC or OSC)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(k)): printable_facts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_facts(v) for v in value]
    return value


def _json(text):
    try:
        return json.loads(text) if text else None
    except (ValueError, TypeError, RecursionError):
        return None


def stored_values(text, where: str) -> dict:
    """A sample's stored values for a reader: the measured ones (finite,
    core.metric.value_problem), anything else absent and said once."""
    value = _json(text)
    if not isinstance(value, dict):
        _say(where, ["(the whole value)"])
        return {}
    bad = [k for k, v in value.items() if v is not None and value_problem(v)]
    if bad:
        _say(where, bad)
    return {k: v for k, v in value.items() if k not in bad}


def stored_instant(text, where: str) -> str | None:
    """A stored time for a reader: its UTC instant (core/instants.py), or
    None when it is no time (a store written by hand or before times were
    checked), said once."""
    from isobench.core.instants import utc

    if text is None:
        return None
    try:
        return utc(text)
    except ValueError:
        _say(where, ["started_at"])
        return None


def stored_names(text, where: str) -> list:
    """A run's stored environment names for a reader; unreadable: none, said once."""
    value = _json(text)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    _say(where, ["environments"])
    return []
