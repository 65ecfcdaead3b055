"""A study's [explain] table (docs/explain.md): which environments the run
goes on to explain, moving which settings, checked against the study's
environments when the study is parsed (study.py says where). Each refusal
is a ValueError whose text names the field; study.py prefixes the file."""

from __future__ import annotations

from pydantic import field_validator

from isobench.core.ids import shown
from isobench.core.strictmodel import StrictModel
from isobench.envs.kinds import EnvSpec, differing, kind_of


class ExplainAsk(StrictModel):
    """[explain]: after the run, `isobench explain` of each changed primary
    cell of these environments, moving these settings (docs/explain.md).
    Left out: every environment other than the baseline that differs from
    it in a setting asked; every setting its kind has."""

    envs: tuple[str, ...] | None = None
    settings: tuple[str, ...] | None = None

    @field_validator("envs", "settings")
    @classmethod
    def _some(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is not None and not v:
            raise ValueError("name at least one, or leave the field out for every one")
        return v


def explain_targets(ask: ExplainAsk, specs: dict[str, EnvSpec], baseline: str) -> dict[str, tuple[str, ...]]:
    """[explain] checked against the environments: each one named is another
    than the baseline and of a kind with settings, each setting one its kind
    has; then each environment's settings to move (checked by _moved)."""
    others = [e for e in specs if e != baseline and kind_of(specs[e].kind).settings]
    for env in ask.envs or ():
        if env not in others:
            why = _not_explainable(env, specs, baseline)
            raise ValueError(f"explain.envs: {why}; name one of: {', '.join(others) or 'none'}")
    envs = list(dict.fromkeys(ask.envs or others))
    for name in ask.settings or ():
        for env in envs:
            kind = kind_of(specs[env].kind)
            if name not in kind.settings:
                hint = "" if ask.envs else "; or name the environments to explain, explain.envs = [...]"
                raise ValueError(
                    f"explain.settings: {shown(name)}: a {kind.name} environment ({env}) has no such setting; "
                    f"its settings: {', '.join(kind.settings)}{hint}"
                )
    return _moved(ask, envs, specs, baseline)


def _not_explainable(env: str, specs: dict[str, EnvSpec], baseline: str) -> str:
    if env not in specs:
        return f"{shown(env)} is not one of the environments"
    if env == baseline:
        return f"{env} is the baseline, what explain measures against"
    return f"{env} is a {specs[env].kind} environment, which has no setting explain can move"


def _moved(ask: ExplainAsk, envs: list[str], specs: dict[str, EnvSpec], baseline: str) -> dict[str, tuple[str, ...]]:
    """Each environment's settings to move: those asked that it differs from
    the baseline in (all: ``()``). One named that differs in none of them is
    refused; one left to the default is left out."""
    out = {}
    for env in envs:
        differ = [name for name, _, _ in differing(specs[env], specs[baseline])]
        moved = [n for n in ask.settings or differ if n in differ]
        if moved:
            out[env] = tuple(moved) if ask.settings else ()
        elif ask.envs:
            asked = f" asked ({', '.join(ask.settings)})" if ask.settings else ""
            what = ", ".join(differ) or "none (its whole gap is its kind's own)"
            raise ValueError(
                f"explain.envs: {env} differs from {baseline} in no setting{asked} explain can move; "
                f"it differs in: {what}"
            )
    if not out:
        raise ValueError(
            f"explain: no environment differs from {baseline} in a setting explain can move"
            + (f" of those asked ({', '.join(ask.settings)})" if ask.settings else "")
            + "; remove [explain] or change explain.settings"
        )
    return out
