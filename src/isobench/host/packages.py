"""The Debian packages isobench installs: on the host for native runs and in
the image for every other environment, the same list for both.

The workload tools come from the workloads themselves: each workload
module's ``packages = (...)`` class attribute is the one place a tool is
named. This module reads those attributes from the modules' source (a
literal tuple, parsed with ``ast``) instead of importing the workloads,
for two reasons: scripts/install-host.sh runs it with Debian's python3
before the venv (pydantic, docker) exists, and the image recipe, which
sits below the workloads, must not import them. A unit test checks that
what is read here equals the registered workloads' attributes.

``python3 -m isobench.host.packages`` prints the host's list, one per line
(stdlib only; it imports no other isobench module).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # src/isobench
DATA_DIR = ROOT / "data"
WORKLOADS_DIR = ROOT / "workloads"
# Packages of neither a workload nor the image alone (stressor, utilities, guest agent).
BASE_PACKAGES_FILE = DATA_DIR / "base-packages.txt"
# Kernel, init and Docker Engine for the VM guest; never on the host.
IMAGE_ONLY_PACKAGES_FILE = DATA_DIR / "image-only-packages.txt"
ATTRIBUTE = "packages"
# Where workload modules live (the directories the workload registry loads).
WORKLOAD_DIRS: tuple[str | os.PathLike, ...] = (WORKLOADS_DIR,)


def read_package_list(path: str | os.PathLike) -> list[str]:
    """Package names from a list file: one per line, '#' starts a comment,
    blank lines ignored, duplicates dropped, order kept."""
    names: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            name = line.split("#", 1)[0].strip()
            if name and name not in names:
                names.append(name)
    return names


def declared_packages(source: str, filename: str = "<source>") -> list[str]:
    """The ``packages`` class attributes of every class in a module's source,
    in order. Each must be a literal tuple of strings, so that it can be
    read without running the module."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            target, value = _assignment(stmt)
            if target != ATTRIBUTE or value is None:
                continue
            try:
                names = ast.literal_eval(value)
            except ValueError:
                names = None
            if not isinstance(names, tuple) or not all(isinstance(n, str) for n in names):
                raise ValueError(
                    f"{filename}:{stmt.lineno}: {node.name}.{ATTRIBUTE} must be a literal tuple of package names"
                )
            found += [n for n in names if n not in found]
    return found


def _assignment(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    return None, None


@functools.lru_cache(maxsize=512)
def _declared_in(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    """A module's declared packages, parsed once per version of its file (a
    run asks for them several times: the image recipe, the VM's host
    readings, the plan; parsing every workload module took about 1 s)."""
    return tuple(declared_packages(Path(path).read_text(encoding="utf-8"), path))


def workload_packages() -> list[str]:
    """Every package a workload module declares."""
    found: list[str] = []
    for d in WORKLOAD_DIRS:
        for path in sorted(Path(d).glob("*.py")):
            st = path.stat()
            found += [n for n in _declared_in(str(path), st.st_mtime_ns, st.st_size) if n not in found]
    return found


def depends_names(depends: str) -> list[str]:
    """Pure: every package named in dpkg's Depends fields, one or more
    joined by commas or lines; alternatives too, version and architecture
    qualifiers dropped."""
    names = set()
    for part in depends.replace("\n", ",").replace("|", ",").split(","):
        name = part.split("(")[0].strip().split(":")[0]
        if name:
            names.add(name)
    return sorted(names)


def library_names(depends: str) -> list[str]:
    """Pure: the library packages among them (Debian names them lib*, and zlib1g)."""
    return [name for name in depends_names(depends) if name.startswith(("lib", "zlib"))]


def tool_packages() -> list[str]:
    """What the host and the image both install: the base list and every
    workload's tools, sorted (the order installs nothing differently)."""
    return sorted({*read_package_list(BASE_PACKAGES_FILE), *workload_packages()})


def image_only_packages() -> list[str]:
    return read_package_list(IMAGE_ONLY_PACKAGES_FILE)


@functools.lru_cache(maxsize=256)
def debian_has(name: str, timeout_s: float = 30.0) -> bool | None:
    """Does this host's apt know a package of that name (``apt-cache show``,
    from the lists scripts/install-host.sh fetched)? None where it cannot
    tell: no apt-cache, an error other than "No packages found", a timeout.
    ``name`` must already be a Debian package name (it is an argv entry).
    Asked once per name in a process (apt-cache takes 0.5 to 3 s to load its
    cache, and a study names the same packages in every command table)."""
    try:
        r = subprocess.run(
            ["apt-cache", "show", "--no-all-versions", name], capture_output=True, text=True, timeout=timeout_s
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode == 0:
        return True
    return False if "No packages found" in r.stderr else None


PROGRAM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")


def owners_of(program: str, dpkg_s: str) -> list[str]:
    """The packages ``dpkg-query -S`` output names for ``program`` in one of
    PROGRAM_DIRS (a merged /usr lists /bin/bzip2 for /usr/bin/bzip2), sorted. Pure."""
    found: set[str] = set()
    for line in dpkg_s.splitlines():
        names, sep, path = line.partition(": ")
        if sep and path.strip() in {f"{d}/{program}" for d in PROGRAM_DIRS}:
            found.update(n.strip().split(":")[0] for n in names.split(","))
    return sorted(n for n in found if re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", n))  # not "diversion by ..."


def package_of(program: str, timeout_s: float = 10.0) -> str | None:
    """The Debian package that installs ``program`` on this host (as
    dpkg knows it), None where none or more than one does or dpkg cannot tell."""
    if not program or "/" in program or program.startswith("-"):
        return None
    try:
        r = subprocess.run(["dpkg-query", "-S", f"*bin/{program}"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return None
    owners = owners_of(program, r.stdout)
    return owners[0] if len(owners) == 1 else None


def policy_versions(text: str) -> dict[str, tuple[str | None, str | None]]:
    """(installed, candidate) version of each package in ``apt-cache
    policy`` output; None for "(none)". A name apt does not know is absent."""
    found: dict[str, tuple[str | None, str | None]] = {}
    name = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
            found[name] = (None, None)
        elif name is not None and line.strip().startswith(("Installed:", "Candidate:")):
            key, _, value = line.strip().partition(":")
            version = None if value.strip() == "(none)" else value.strip()
            installed, candidate = found[name]
            found[name] = (version, candidate) if key == "Installed" else (installed, version)
    return found


def to_install(names: list[str], timeout_s: float = 30.0) -> list[str]:
    """Those of ``names`` the host lacks, or has at another version than
    apt's candidate (what an image built now installs), in order."""
    if not names:
        return []
    try:
        r = subprocess.run(["apt-cache", "policy", *names], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return list(names)  # cannot tell: apt-get then installs them, or says in one line why not
    versions = policy_versions(r.stdout)
    return [n for n in names if n not in versions or versions[n][0] is None or versions[n][0] != versions[n][1]]


class InstallError(RuntimeError):
    """apt-get could not install a study's packages on the host (one line)."""


def install_on_host(names: list[str], timeout_s: float = 900.0, check: Callable[[], str] | None = None) -> None:
    """``apt-get update`` (the image's build fetches the current lists too,
    so both install the same versions), then install ``names`` without
    recommends, as scripts/install-host.sh installs isobench's own. Raises
    InstallError with apt's last line and the fix. ``check``, between the
    two, says in one line why not to install after all ("" to go on)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    opts = ["-y", "-q", "-o", "Dpkg::Options::=--force-confold", "-o", "Dpkg::Options::=--force-confdef"]
    for argv in (
        ["apt-get", "update", "-q"],
        ["apt-get", *opts, "install", "--no-install-recommends", *names],
    ):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            raise InstallError(
                f"{' '.join(argv[:2])} took over {timeout_s:.0f} s (a slow mirror?): as root, "
                f"apt-get install {' '.join(names)}, then run again"
            ) from None
        except OSError as exc:
            raise InstallError(f"cannot run apt-get ({exc.strerror}): install {' '.join(names)} by hand") from None
        if r.returncode != 0:
            last = next((ln.strip() for ln in reversed(r.stderr.splitlines()) if ln.strip()), "")
            raise InstallError(
                f"{' '.join(argv[:2])} exited {r.returncode} ({last[:200]}): as root, apt-get install {' '.join(names)}"
            )
        why = check() if check is not None and argv[1] == "update" else ""
        if why:
            raise InstallError(why)


def main() -> None:
    sys.stdout.write("".join(f"{name}\n" for name in tool_packages()))


if __name__ == "__main__":
    main()
