"""The host's packages against the image's: the tools and what they depend
on directly, at the versions each side has installed. A native side and a
container run the same program only when these match (a `try` of the
host's python3 is refused when python3.11 differs by a security update),
so `setup --check` names each difference, and `setup --match-image`
brings the host's older ones to the image's version with apt."""

from __future__ import annotations

import subprocess

from isobench.core.proc import run_argv
from isobench.host.packages import depends_names

NAMED = 6  # a line names this many packages, then counts the rest


def installed_versions(names: list[str]) -> dict[str, str]:
    """name -> version of those installed on this host (dpkg's status ii)."""
    if not names:
        return {}
    r = run_argv(["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Version}\n", *names], timeout=60)
    out = {}
    for line in r.stdout.splitlines():
        status, _, rest = line.partition("\t")
        name, _, version = rest.partition("\t")
        if status.startswith("ii") and name and version:
            out[name] = version
    return out


def relevant(tools: list[str]) -> dict[str, str]:
    """The tools and their direct dependencies installed here, with versions."""
    r = run_argv(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}\n", *tools], timeout=60)
    return installed_versions(sorted({*tools, *depends_names(r.stdout)}))


def differing(host: dict[str, str], image: dict[str, str]) -> list[tuple[str, str, str]]:
    """Pure: (package, host's version, image's) for each package both have at another version."""
    return [(p, host[p], image[p]) for p in sorted(host.keys() & image.keys()) if host[p] != image[p]]


def older_on_host(found: list[tuple[str, str, str]], run=subprocess.run) -> list[tuple[str, str, str]]:
    """Those whose host version is older than the image's (dpkg --compare-versions)."""
    return [
        d
        for d in found
        if run(["dpkg", "--compare-versions", d[1], "lt", d[2]], capture_output=True, timeout=30).returncode == 0
    ]


def describe(found: list[tuple[str, str, str]]) -> str:
    """ "python3.11 3.11.2-6+deb12u6 here, 3.11.2-6+deb12u9 in the image; ... and 3 more"."""
    named = "; ".join(f"{p} {h} here, {i} in the image" for p, h, i in found[:NAMED])
    return named + (f"; and {len(found) - NAMED} more" if len(found) > NAMED else "")
