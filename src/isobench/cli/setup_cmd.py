"""`isobench setup`: the host preparation of scripts/setup.sh as a command
of the installed tool. It says what it will change first, asks (or takes
--yes), then runs the same shipped scripts setup.sh runs (install-host.sh,
start-dockerd.sh) and builds the image; `--check` changes nothing and says
what is missing or differs (docs/install.md). Parsing and printing only."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from isobench.cli.common import console, err_console, fold
from isobench.cli.common import fail as _fail

STEPS = ("packages and services", "Docker Engine", "the image")


def _say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def _state():
    from isobench.core.shipped import script
    from isobench.host.prepare import read_state
    from isobench.images import image_tag
    from isobench.images.definition import image_dir
    from isobench.images.versions import read_packages_tsv

    try:  # the built image's packages, as its build recorded them
        image = read_packages_tsv(os.path.join(image_dir(), "packages.tsv"))
    except OSError:
        image = None
    return read_state(script("install-host.sh").read_text(encoding="utf-8"), image_tag(), image)


def _match_image(yes: bool) -> None:
    """The host's packages older than the image's brought to the image's
    versions (apt-get install NAME=VERSION; apt upgrades what they need)."""
    from isobench.host.imagematch import describe, older_on_host
    from isobench.host.packages import InstallError, install_on_host

    older = older_on_host(_state().unlike_image)
    if not older:
        console.print("match-image: no package here is older than the image's; nothing to do", highlight=False)
        return
    console.print(f"setup --match-image will upgrade {len(older)} host packages: {describe(older)}", highlight=False)
    if not yes:
        if not _can_ask():
            _fail("no terminal to ask whether to go on: give --yes to upgrade them; nothing was changed")
        click.confirm("Upgrade them?", abort=True)
    try:
        install_on_host([f"{p}={image}" for p, _, image in older])
    except InstallError as exc:
        _fail(f"setup --match-image: {exc}")
    console.print("match-image: done; `isobench setup --check` confirms", highlight=False)


def _script_step(name: str, **env: str) -> None:
    """A shipped script, as setup.sh runs it; its own lines say what it does."""
    from isobench.core.shipped import package_parent, script

    argv = ["bash", str(script(name))]
    code = subprocess.run(argv, env={**os.environ, "ISOBENCH_PYTHONPATH": package_parent(), **env}).returncode
    if code != 0:
        raise StepFailed(f"{name} exited {code} (its lines above say why)")


def _image_step() -> None:
    from isobench.core.dockerclient import engine
    from isobench.core.errors import IsobenchError
    from isobench.images import ensure_image

    try:
        tag = ensure_image(engine(), log=_say)
    except IsobenchError as exc:
        raise StepFailed(str(exc)) from None
    _say(f"image ready: {tag}")


class StepFailed(RuntimeError):
    pass


def _can_ask() -> bool:
    return sys.stdin.isatty()


def _run_steps() -> None:
    actions = (
        lambda: _script_step("install-host.sh", ISOBENCH_NO_DOCKERD="1"),
        lambda: _script_step("start-dockerd.sh"),
        _image_step,
    )
    for i, (name, action) in enumerate(zip(STEPS, actions), 1):
        _say(f"setup: step {i} of {len(STEPS)}: {name}")
        try:
            action()
        except StepFailed as exc:
            _fail(
                f"setup: step {i} of {len(STEPS)} ({name}) failed: {exc}; fix that and run `isobench setup --yes` "
                "again: the steps done stay done, and each step is safe to repeat"
            )


@click.command("setup")
@click.option("--yes", "-y", is_flag=True, help="Make the changes without asking (CI, install.sh).")
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing: list what is missing or differs from what setup makes; exit 0 when nothing, 1 otherwise.",
)
@click.option(
    "--match-image",
    is_flag=True,
    help="Upgrade the host's tool packages and their dependencies that are older than the built image's "
    "to the image's versions, so both sides run the same programs (asks first; --yes does not).",
)
def setup(yes: bool, check: bool, match_image: bool) -> None:
    """Prepare this host (Debian 12, as root) for isobench: packages, the
    services the workloads replace, Docker Engine and its daemon.json,
    cgroup controllers, the Docker network range and the image. It prints
    every change it will make first, then asks (--yes: it does not).
    Each step is idempotent: a failed step is named, and running setup
    again resumes. The same scripts as the clone's scripts/setup.sh.

    \b
    Exit status: 0 done (--check: nothing missing); 1 --check found
    something (listed); 2 not root, not Debian 12, or a step failed.
    """
    if check:
        _check()
        return
    if os.geteuid() != 0:
        _fail("setup changes this host: run it as root (sudo isobench setup); `isobench setup --check` changes nothing")
    from isobench.host.prepare import change_lines, not_debian_12

    problem = not_debian_12()
    if problem:
        _fail(f"{problem}; nothing was changed (`isobench setup --check` says what differs here)")
    if match_image:
        _match_image(yes)
        return
    state = _state()
    if state.refused:  # before anything starts: one line each, the resource and what would work
        _fail("; ".join(state.refused) + "; nothing was changed")
    console.print("isobench setup will change this host:", markup=False, highlight=False)
    fold(change_lines(state), console)
    if not yes:
        if not _can_ask():
            _fail("no terminal to ask whether to go on: give --yes to make these changes; nothing was changed")
        click.confirm("Make these changes?", abort=True)
    _run_steps()
    console.print("setup: done; `isobench setup --check` confirms, `isobench run quick` measures", highlight=False)


def _check() -> None:
    from isobench.host.prepare import check_lines

    found = check_lines(_state())
    if not found:
        console.print("host ready: nothing missing or different from what `isobench setup` makes", highlight=False)
        return
    fold(found, console)
    console.print("`isobench setup` (as root) makes them so", markup=False, highlight=False)
    sys.exit(1)
