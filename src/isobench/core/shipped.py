"""What the package carries besides code (pyproject.toml's package data):
the shipped studies, run by name from any directory (a bare name is
always a shipped study's, never a file there), and the host
preparation scripts `isobench setup` runs. In a clone, data/studies and
data/scripts are links to studies/ and scripts/; in a wheel, copies."""

from __future__ import annotations

import os
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
STUDIES = DATA / "studies"
SCRIPTS = DATA / "scripts"


class NotAStudy(ValueError):
    """A study argument that is neither a file nor a shipped study's name (one line)."""


def shipped_studies() -> dict[str, Path]:
    """Name -> file of each shipped study (studies/*.toml; ab/ is research, not listed)."""
    return {p.stem: p for p in sorted(STUDIES.glob("*.toml"))}


def study_path(arg: str) -> str:
    """ARG as a study file: a path (it holds a `/`, or ends in .toml) as
    given (it may not exist: the study loader says so), else a shipped
    study's name (`quick`). A bare name never means a file of the working
    directory (issue 55: `cd /tmp/x; isobench run quick` ran a stranger's
    /tmp/x/quick): one that is not shipped raises NotAStudy listing the
    shipped names, and says `./NAME` when such a file is there."""
    if os.sep in arg or arg.endswith(".toml"):
        return arg
    found = shipped_studies().get(arg)
    if found is not None:
        return str(found)
    names = ", ".join(shipped_studies()) or "none"
    here = f"; to run the file {arg} here, write ./{arg}" if os.path.lexists(arg) else ""
    raise NotAStudy(
        f"{arg}: neither a study file nor a shipped study; shipped: {names} (`isobench studies` lists them){here}"
    )


def script(name: str) -> Path:
    """A host preparation script shipped with the package (install-host.sh, start-dockerd.sh)."""
    return SCRIPTS / name


def package_parent() -> str:
    """The directory holding the isobench package: what the scripts put on
    Debian's python3's path (ISOBENCH_PYTHONPATH) where there is no src/."""
    return str(DATA.parents[1])
