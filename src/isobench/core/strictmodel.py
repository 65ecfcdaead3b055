"""The base of every study-file model (the study, environment specs,
workload parameters, the noise table): unknown fields refused, values
frozen, types strict (true is not 1 and "5" is not 5), no NaN or
infinity. TOML arrays arrive as lists and every array field is a tuple:
they are converted before the strict check."""

from __future__ import annotations

from typing import Any

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
