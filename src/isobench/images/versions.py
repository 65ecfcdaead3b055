"""Versions of the tool packages: in a built image (its packages.tsv, no
container needed) and on this host (native runs)."""

from __future__ import annotations

import os

from isobench.core.proc import run_argv
from isobench.host import packages
from isobench.images.definition import image_dir


def read_packages_tsv(path: str) -> dict[str, str]:
    """package -> version of a packages.tsv (dpkg-query output with a header)."""
    versions: dict[str, str] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and parts[0] != "package":
                versions[parts[0]] = parts[1]
    return versions


def tool_versions(h: str | None = None) -> dict[str, str | None]:
    """Versions of the tool packages in the built image; None for a package
    that is not installed."""
    try:
        installed = read_packages_tsv(os.path.join(image_dir(h), "packages.tsv"))
    except FileNotFoundError:  # not built on this host
        installed = {}
    return {name: installed.get(name) for name in packages.tool_packages()}


def host_tool_versions() -> dict[str, str | None]:
    """Versions of the tool packages installed on this host (native runs)."""
    names = packages.tool_packages()
    out = run_argv(
        ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Abbrev}\n", *names], timeout=60
    ).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].startswith("ii"):
            found[parts[0]] = parts[1]
    return {name: found.get(name) for name in names}
