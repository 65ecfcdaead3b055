"""The base of every study-file model (the study, environment specs,
workload parameters, the noise table): unknown fields refused, values
frozen, types strict (true is not 1 and "5" is not 5), no NaN or
infinity. TOML arrays arrive as lists and every array field is a tuple:
they are converted before the strict check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict, model_validator


def arrays_as_tuples(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: arrays_as_tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(arrays_as_tuples(v) for v in value)
    return value


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _tuples(cls, data: Any) -> Any:
        return arrays_as_tuples(data) if isinstance(data, dict) else data


def fields_at(model: Any, path: tuple) -> list[str]:
    """The fields of the table at PATH inside MODEL (a pydantic error's
    location, the rejected field left off), for an "allowed:" list: the
    rejected table's own, not its parent's (`metrics.eps.units` lists a
    metric's fields). [] where PATH leads to no model."""
    for part in path:
        model = _step(model, str(part))
        if model is None:
            return []
    found = _model_in(model)
    return sorted(f.alias or name for name, f in found.model_fields.items()) if found is not None else []


def _step(t: Any, part: str) -> Any:
    """The type one location part down from T: a model's field, a dict's
    value, a sequence's item, or through each member of a union."""
    if isinstance(t, type) and issubclass(t, BaseModel):
        field = t.model_fields.get(part)
        return field.annotation if field is not None else None
    origin, args = get_origin(t), get_args(t)
    if origin is dict or origin is Mapping:
        return args[1] if len(args) == 2 else None
    if origin in (list, tuple, Sequence):
        return args[0] if args else None
    for arg in args:  # a union (Optional[...] among them)
        if isinstance(arg, type) and arg.__name__ == part:
            return arg  # pydantic names a union's member in the location
        inner = _step(arg, part)
        if inner is not None:
            return inner
    return None


def _model_in(t: Any) -> type[BaseModel] | None:
    if isinstance(t, type) and issubclass(t, BaseModel):
        return t
    for arg in get_args(t):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
