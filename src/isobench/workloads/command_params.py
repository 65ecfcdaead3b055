"""A command table's parameters as the study file gives them, each field
checked before anything runs (workloads/command.py runs them): argv lists,
not shell lines; files inside the study; Debian package names; metric
rules; whether the table runs as a duet (workloads/duetcall.py)."""

from __future__ import annotations

import json
import os
import posixpath
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from isobench.host.packages import debian_has, tool_packages
from isobench.workloads import command_files as cf
from isobench.workloads.base import WorkloadParams
from isobench.workloads.command_rules import (
    OutputMetric,
    Units,
    rule_regex,
    value_group,
)

# The PATH every environment resolves the command with (the image's own,
# images/definition.py): natively, a shell's PATH (a virtualenv, pyenv
# shims, ~/bin) would run another program than the containers do.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BUILTIN = ("wall_s", "user_s", "sys_s", "peak_rss_mib")
_METRIC_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_DEBIAN_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]{1,99}")  # Debian policy 5.6.1
# A stored sample keeps at most this much of each stream (the tail): enough
# for any summary a rule reads, bounded for a command that prints a lot.
KEEP_CHARS = 1 << 20


def _argv(v: Any, empty_ok: bool) -> Any:
    if isinstance(v, str):
        raise ValueError(
            f'must be an argv list such as ["make", "-j1"], not a string (for a shell line write '
            f'["sh", "-c", {json.dumps(v)[:60]}])'
        )
    if isinstance(v, (list, tuple)):
        if not v and not empty_ok:
            raise ValueError('must name a program: an argv list such as ["make", "-j1"]')
        if not all(isinstance(a, str) for a in v):
            raise ValueError('every argument must be a string (quote numbers: "1")')
        if v and not v[0]:
            raise ValueError("the program's name is empty")
        if any("\0" in a for a in v):
            raise ValueError("an argument holds a NUL byte")
    return v


def _inside(given: str) -> str:
    why = cf.outside_reason(given)
    if why:
        raise ValueError(f"{given} {why}")
    return given


class CommandParams(WorkloadParams):
    command: tuple[str, ...]
    setup: tuple[str, ...] = ()
    cleanup: tuple[str, ...] = ()
    workdir: str = ""  # relative to the scratch directory, or absolute
    env: dict[str, str] = Field(default_factory=dict)
    repeat: int = Field(1, ge=1, le=10_000)
    files: tuple[Annotated[str, AfterValidator(_inside)], ...] = ()
    metrics: dict[str, OutputMetric] = Field(default_factory=dict)
    # Debian packages the command runs (the one behind a wrapper script):
    # their versions recorded in every environment and compared
    packages: tuple[str, ...] = ()
    # false: measure even when an environment runs other bytes than the
    # baseline (its executable, a copied file, a package version), and say so
    same_program: bool = True
    units: Units | None = None  # default: the run
    # Under schedule = "duet": "auto" runs the table as a duet when its
    # warm-up, run alone, used at most a side's CPUs and little disk
    # (workloads/duetcall.py); true and false force it either way.
    duet: bool | Literal["auto"] = "auto"  # type: ignore[assignment]

    @field_validator("duet", mode="before")
    @classmethod
    def _duet(cls, v: Any) -> Any:
        if isinstance(v, bool) or v == "auto":
            return v
        raise ValueError(
            f"{json.dumps(v) if isinstance(v, (str, int, float)) else type(v).__name__} is not one of true, false "
            'or "auto" (the default: decided from the warm-up sample, docs/workloads/command.md#duet)'
        )

    _base: str = PrivateAttr(".")  # what files are relative to: the study file's directory

    @model_validator(mode="after")
    def _where(self, info: ValidationInfo) -> CommandParams:
        self._base = os.path.abspath((info.context or {}).get("base_dir") or ".")
        return self

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, v: Any) -> Any:
        return _argv(v, empty_ok=False)

    @field_validator("setup", "cleanup", mode="before")
    @classmethod
    def _steps(cls, v: Any) -> Any:
        return _argv(v, empty_ok=True)

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [k for k in v if not _ENV_NAME.fullmatch(k)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a variable name (letters, digits, '_', not starting with a digit)")
        if any("\0" in x for x in v.values()):
            raise ValueError("a value holds a NUL byte")
        return v

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if "\0" in v or ".." in v.split("/"):
            raise ValueError("must stay inside the scratch directory (no '..'), or be an absolute path")
        return v

    @field_validator("files")
    @classmethod
    def _files(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        names = [posixpath.basename(f.rstrip("/")) for f in v]
        if any(not f or not n or n in (".", "..") for f, n in zip(v, names)):
            raise ValueError("name a file or directory (not '', '.' or '..')")
        twice = [n for n in names if names.count(n) > 1]
        if twice:
            raise ValueError(f"two entries are named {twice[0]!r} in the scratch directory; copy their parent")
        return v

    @field_validator("packages")
    @classmethod
    def _packages(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if not _DEBIAN_NAME.fullmatch(p)]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a Debian package name (lower-case letters, digits, '+', '-', '.')")
        if len(set(v)) != len(v):
            raise ValueError("names a package twice")
        # isobench's own need no asking; the others are added to the study's
        # image and installed on the host (images.study_packages)
        held = tool_packages()
        unknown = next((p for p in v if p not in held and debian_has(p) is False), None)
        if unknown:
            raise ValueError(f"{unknown!r} is not a Debian package (apt-cache on this host knows no such name)")
        return v

    @field_validator("units")
    @classmethod
    def _units(cls, v: Units | None, info: ValidationInfo) -> Units | None:
        metrics = info.data.get("metrics") or {}
        if v is not None and v.metric is not None and v.metric not in metrics:
            raise ValueError(
                f"metric {v.metric!r} is not one of this table's metrics ("
                + (", ".join(sorted(metrics)) or "it reads none from the output")
                + ")"
            )
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: dict[str, OutputMetric]) -> dict[str, OutputMetric]:
        for name, rule in v.items():
            if not _METRIC_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r}: a metric name is lower-case letters, digits and '_', starting with "
                    "a letter, at most 40 characters"
                )
            if name in BUILTIN:
                raise ValueError(f"{name!r} is a built-in metric ({', '.join(BUILTIN)}); choose another name")
            if rule.regex is not None:
                try:
                    value_group(rule_regex(rule.regex), name)
                except ValueError as exc:
                    raise ValueError(f"{name}.regex {exc}") from None
        return v
