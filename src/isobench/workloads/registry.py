"""Workloads by name, as study files refer to them.

Every module of the workloads package is imported when the package is
(``discover``), and each concrete Workload subclass it defines is
registered under its ``name``: adding a workload is adding its module.
Nothing else keeps a list of them, and nothing depends on the order in
which they were found.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable
from types import ModuleType

from isobench.workloads.base import Workload

WORKLOADS: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    """Add a workload class under the name it defines; two classes under one name are refused."""
    name = vars(cls).get("name")
    if not isinstance(name, str) or not name:
        raise TypeError(f'{_where(cls)}: a workload class must set name = "..." itself')
    if WORKLOADS.get(name, cls) is not cls:
        raise TypeError(f"two workloads named {name!r}: {_where(WORKLOADS[name])} and {_where(cls)}")
    WORKLOADS[name] = cls
    return cls


def workloads_in(module: ModuleType) -> list[type[Workload]]:
    """The concrete Workload classes a module defines (not those it imports;
    abstract bases such as ServerWorkload are not workloads)."""
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Workload)
        and obj.__module__ == module.__name__
        and not inspect.isabstract(obj)
    ]


def register_module(module: ModuleType) -> list[type[Workload]]:
    return [register(cls) for cls in workloads_in(module)]


def discover(path: Iterable[str], prefix: str) -> list[type[Workload]]:
    """Import every module found on `path` (a package's __path__, names
    starting with `prefix`) and register the workloads each defines."""
    found: list[type[Workload]] = []
    for info in pkgutil.iter_modules(path, prefix):
        if not info.ispkg:
            found += register_module(importlib.import_module(info.name))
    return found


def table_kind(key: str, body: dict) -> str | None:
    """The workload a study's ``[workloads.KEY]`` table without a
    ``workload = "..."`` field is: the one claiming a field the table holds
    (Workload.claimed_by_field), else the one named KEY; None if neither."""
    claimed = sorted(n for n, cls in WORKLOADS.items() if cls.claimed_by_field and cls.claimed_by_field in body)
    if claimed:
        return claimed[0]
    return key if key in WORKLOADS else None


def claiming_fields() -> list[str]:
    """The fields that make a table a workload's whatever its name, sorted."""
    return sorted({cls.claimed_by_field for cls in WORKLOADS.values() if cls.claimed_by_field})


def get(name: str) -> type[Workload]:
    try:
        return WORKLOADS[name]
    except KeyError:
        known = ", ".join(sorted(WORKLOADS))
        raise KeyError(f"unknown workload {name!r}; known: {known}") from None


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
