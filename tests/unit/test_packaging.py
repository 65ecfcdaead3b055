"""The package metadata declares every third-party module the code imports,
so `pip install isobench` gives a tool whose every environment can start."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "isobench"


def _imported_top_names() -> dict[str, str]:
    """Top-level module names imported anywhere in the package (function-level
    imports too), each with one file that imports it."""
    out: dict[str, str] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                out.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return out


def _normalise(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _declared() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_normalise(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in meta["dependencies"]}


def test_declared_dependencies_cover_every_third_party_import():
    dists = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = []
    for name, where in sorted(_imported_top_names().items()):
        if name in sys.stdlib_module_names or name in ("isobench", "__future__"):
            continue
        providers = {_normalise(d) for d in dists.get(name, [])}
        assert providers, f"{where} imports {name!r}, which no installed distribution provides"
        if not providers & declared:
            missing.append(f"{name} ({', '.join(sorted(providers))}, imported by {where})")
    assert not missing, "pyproject.toml [project] dependencies lack: " + "; ".join(missing)


def test_qemu_qmp_is_declared():
    # envs import qemu.qmp for the QMP and guest-agent sockets (the issue that found it missing)
    assert "qemu-qmp" in _declared()
