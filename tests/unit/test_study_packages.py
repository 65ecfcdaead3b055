"""A study's own Debian packages (a command workload's ``packages`` beyond
isobench's lists): the runner runs the study with them in the image's recipe
and asks every environment to provide them; a native environment installs
only what the host lacks, and a failed install is one line naming the
packages and the fix."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tests.unit.test_env_registry import fake  # noqa: F401 - the throwaway kind's fixture

from isobench import images
from isobench.core.errors import EnvironmentError_
from isobench.envs.native import NativeEnvironment
from isobench.host import packages
from isobench.workloads import command_params as command

DATA = Path(__file__).resolve().parents[1] / "data" / "packages"


def test_the_runner_provides_the_studys_packages_under_a_recipe_of_their_own(fake, tmp_path, monkeypatch):  # noqa: F811
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    monkeypatch.setattr(command, "debian_has", lambda name: True)  # no apt-cache in a unit test
    seen = []
    monkeypatch.setattr(
        fake.FakeEnvironment,
        "provide_packages",
        lambda self, names, log: seen.append((self.name, names, images.recipe().get("study_packages"))),
        raising=False,
    )
    base = images.recipe_hash()
    text = (
        '[study]\nname = "own"\nrepetitions = 1\nwarmup = 0\nbaseline = "fake"\n'
        '[environments.fake]\n[environments.other]\npreset = "fake"\n'
        '[workloads.mine]\ncommand = ["true"]\npackages = ["cowsay", "fio"]\n'
    )
    run_study(parse_study(text, "own.toml"), Store(str(tmp_path / "r.sqlite")), run_id="p0")
    # fio is isobench's own: only cowsay is the study's, and the recipe holds it while the run lasts
    assert seen == [("fake", ["cowsay"], ["cowsay"]), ("other", ["cowsay"], ["cowsay"])]
    assert images.recipe_hash() == base


def test_a_native_environment_installs_only_what_the_host_lacks(monkeypatch):
    from isobench.host import aptplan

    monkeypatch.setattr(aptplan, "still_safe", lambda names, needed: f"{names} {'docker.io' in needed}")
    installed = []
    monkeypatch.setattr(packages, "to_install", lambda names: [n for n in names if n != "fio"])
    checks = []

    def install(names, check):
        installed.append(names)
        checks.append(check)

    monkeypatch.setattr(packages, "install_on_host", install)
    notes = []
    env = NativeEnvironment("native")
    env.provide_packages(["fio", "cowsay"], notes.append)
    assert installed == [["cowsay"]]
    assert notes == ["native: installing the study's cowsay on this host (apt-get)"]
    # after apt-get update, apt's plan for those is judged again against what isobench needs
    assert checks[0]() == "['cowsay'] True"
    installed.clear()
    monkeypatch.setattr(packages, "to_install", lambda names: [])
    env.provide_packages(["fio", "cowsay"], notes.append)
    assert installed == []


def fake_apt(tmp_path, script: str) -> None:
    path = tmp_path / "bin" / "apt-get"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_an_install_that_fails_is_one_line_with_apts_last_line_and_the_fix(tmp_path, monkeypatch):
    # apt-get's own words when it is not root (stderr, exit 100)
    fake_apt(
        tmp_path,
        'echo "E: Could not open lock file /var/lib/apt/lists/lock - open (13: Permission denied)" >&2\n'
        'echo "E: Unable to lock directory /var/lib/apt/lists/" >&2\nexit 100\n',
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(packages, "to_install", lambda names: names)
    with pytest.raises(EnvironmentError_) as err:
        NativeEnvironment("native").provide_packages(["cowsay"], lambda line: None)
    line = str(err.value)
    assert "\n" not in line
    assert line == (
        "native: cannot install the study's packages: apt-get update exited 100 "
        "(E: Unable to lock directory /var/lib/apt/lists/): as root, apt-get install cowsay"
    )


def test_what_the_host_lacks_or_has_older_than_the_image_from_apt_cache_policy(monkeypatch):
    # real output of `apt-cache policy jq isobench-no-such-package coreutils cowsay` on this host
    text = (DATA / "apt-cache-policy.stdout").read_text()
    assert packages.policy_versions(text) == {
        "jq": ("1.6-2.1+deb12u1", "1.6-2.1+deb12u3"),
        "coreutils": ("9.1-1", "9.1-1"),
        "cowsay": (None, "3.03+dfsg2-8"),
    }
    # what to install: the missing, and the older than the candidate; an up-to-date one is left alone
    reply = type("R", (), {"stdout": text, "returncode": 0})()
    monkeypatch.setattr(packages.subprocess, "run", lambda argv, **kw: reply)
    assert packages.to_install(["jq", "coreutils", "cowsay"]) == ["jq", "cowsay"]
    assert packages.to_install([]) == []


def test_a_plan_that_turned_bad_after_apt_get_update_installs_nothing(tmp_path, monkeypatch):
    # the plan the user agreed to was judged on the old lists; the fresh ones are judged again before installing
    log = tmp_path / "argv"
    fake_apt(tmp_path, f'echo "$@" >> "{log}"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(packages.InstallError, match="^after apt-get update, podman-docker would remove docker.io"):
        packages.install_on_host(
            ["podman-docker"],
            check=lambda: "after apt-get update, podman-docker would remove docker.io, which isobench runs on",
        )
    assert log.read_text() == "update -q\n"  # updated, never installed
    packages.install_on_host(["cowsay"], check=lambda: "")
    assert log.read_text().splitlines()[-1].endswith("install --no-install-recommends cowsay")
