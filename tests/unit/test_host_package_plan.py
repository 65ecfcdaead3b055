"""A study's packages on the host, planned before anything changes: apt's
simulation (real `apt-get -s install --no-install-recommends NAME` outputs
of this host, tests/data/packages/apt-get-s-*) parsed into what would be
installed, upgraded and removed; a plan that removes a package or touches
one isobench needs refused in one line naming both; the others installed
only with --allow-packages or a yes at a prompt, and kept with the run."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from isobench.cli import execution
from isobench.cli.common import Failure
from isobench.host import aptplan, debservices
from isobench.host.aptplan import Change, PlanError, describe, parse_simulation, simulate, touched
from isobench.host.prepare import needed_packages
from isobench.run import hostpackages
from isobench.workloads import command_params

DATA = Path(__file__).resolve().parents[1] / "data" / "packages"


@pytest.fixture(autouse=True)
def _fresh_plans():
    """hostpackages asks apt once per process per package list: each test here
    puts its own apt in place."""
    hostpackages._planned.cache_clear()
    yield
    hostpackages._planned.cache_clear()


def real(name: str) -> str:
    return (DATA / f"apt-get-s-{name}.stdout").read_text()


def listing(name: str) -> str:
    path = DATA / f"dpkg-deb-c-{name}.stdout"
    return path.read_text() if path.exists() else ""


PODMAN = "1:4.13+dfsg1-1+deb12u1", "1:4.13+dfsg1-1+deb12u2"


def test_podman_docker_installs_eight_upgrades_two_and_removes_docker_io():
    plan = parse_simulation(real("podman-docker"))
    assert [c.package for c in plan.install] == [
        "conmon",
        "containernetworking-plugins",
        "golang-github-containers-image",
        "golang-github-containers-common",
        "libgpgme11",
        "libsubid4",
        "podman",
        "podman-docker",
    ]
    assert plan.install[0] == Change("conmon", None, "2.1.6+ds1-1")
    assert plan.upgrade == (Change("login", *PODMAN), Change("passwd", *PODMAN))
    assert plan.remove == (Change("docker.io", "20.10.24+dfsg1-1+deb12u1+b6", None),)
    assert plan.as_dict()["remove"] == [{"package": "docker.io", "version": "20.10.24+dfsg1-1+deb12u1+b6"}]


def test_texlive_full_is_355_new_packages_and_one_upgrade():
    plan = parse_simulation(real("texlive-full"))
    assert len(plan.install) == 355 and "texlive-full" in {c.package for c in plan.install}
    assert plan.upgrade == (Change("libpcre2-8-0", "10.42-1", "10.42-1+deb12u2"),) and plan.remove == ()
    assert describe(plan).startswith("adds 355 (fonts-arphic-bkai00mp, ") and ", and 345 more), upgrades 1 (" in (
        describe(plan)
    )


def test_a_package_installed_at_the_candidate_changes_nothing():
    plan = parse_simulation(real("jq"))  # "jq is already the newest version"
    assert not plan.changes and plan.as_dict() == {
        "install": [],
        "upgrade": [],
        "remove": [],
        "services": None,
        "services_unknown": None,
    }


def test_openssh_server_in_words():
    plan = parse_simulation(real("openssh-server"))
    assert describe(plan) == (
        "adds 3 (openssh-sftp-server, runit-helper, openssh-server), "
        "upgrades 1 (openssh-client 1:9.2p1-2+deb12u6 -> 1:9.2p1-2+deb12u10), removes none"
    )


def test_what_isobench_needs_is_what_setup_installs():
    needed = needed_packages()
    # the engine, its runtimes, QEMU, a base tool (base-packages.txt) and a workload's
    assert {"docker.io", "containerd", "runc", "crun", "runsc", "qemu-system-x86", "qemu-utils"} <= needed
    assert {"stress-ng", "procps", "fio", "sysbench"} <= needed and "login" not in needed


def test_a_removal_or_an_upgrade_of_what_isobench_needs_is_touched():
    needed = needed_packages()
    assert touched(parse_simulation(real("podman-docker")), needed) == ("remove", "docker.io")
    assert touched(parse_simulation(real("openssh-server")), needed) is None  # openssh-client: not isobench's
    assert touched(parse_simulation(real("openssh-server")), {"openssh-client"}) == ("upgrade", "openssh-client")
    assert touched(parse_simulation(real("texlive-full")), needed) is None
    # a removal of a package isobench does not need is refused too; its own first
    both = aptplan.AptPlan(remove=(Change("login", "1", None), Change("runc", "1", None)))
    assert touched(both, needed) == ("remove", "runc")
    assert touched(aptplan.AptPlan(remove=(Change("login", "1", None),)), needed) == ("remove", "login")


def fake_apt(tmp_path, monkeypatch, script: str) -> None:
    path = tmp_path / "bin" / "apt-get"
    path.parent.mkdir(exist_ok=True)
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def test_simulate_reads_apts_output_and_says_why_it_has_none(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, f'[ "$1" = -s ] || exit 9\ncat "{DATA / "apt-get-s-podman-docker.stdout"}"\n')
    assert simulate(["podman-docker"]) == parse_simulation(real("podman-docker"))
    # apt's own refusal (real stderr of an unknown name): the install would fail the same way
    fake_apt(tmp_path, monkeypatch, f'cat "{DATA / "apt-get-s-no-such-package.stderr"}" >&2\nexit 100\n')
    with pytest.raises(PlanError) as err:
        simulate(["isobench-no-such-package"])
    assert err.value.refused and str(err.value) == (
        "apt-get -s install isobench-no-such-package: E: Unable to locate package isobench-no-such-package"
    )
    fake_apt(tmp_path, monkeypatch, "sleep 5\n")
    with pytest.raises(PlanError, match="took over 0 s") as err:
        simulate(["cowsay"], timeout_s=0.2)
    assert not err.value.refused  # not asked: cannot tell
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(PlanError, match="cannot run apt-get") as err:
        simulate(["cowsay"])
    assert not err.value.refused


def test_after_apt_get_update_the_plan_is_checked_again(tmp_path, monkeypatch):
    fake_apt(tmp_path, monkeypatch, f'cat "{DATA / "apt-get-s-podman-docker.stdout"}"\n')
    assert aptplan.still_safe(["podman-docker"], needed_packages()) == (
        "after apt-get update, podman-docker would remove docker.io, which isobench runs on: drop it from "
        "packages; nothing was installed"
    )
    fake_apt(tmp_path, monkeypatch, f'cat "{DATA / "apt-get-s-openssh-server.stdout"}"\n')
    assert aptplan.still_safe(["openssh-server"], needed_packages()) == ""


STUDY = """
[study]
name = "pk"
repetitions = 2
warmup = 0
ENVS
[workloads.mine]
command = ["true"]
packages = PACKAGES
"""


def study(packages: str, envs: str = "[environments.native]\n[environments.docker-nat]\n"):
    from isobench.study import parse_study

    return parse_study(STUDY.replace("ENVS", envs).replace("PACKAGES", packages), "study.toml")


@pytest.fixture
def apt(monkeypatch):
    """apt as captured: each package's real simulation; to_install: all of them but jq."""
    monkeypatch.setattr(command_params, "debian_has", lambda name: True)
    monkeypatch.setattr(hostpackages, "to_install", lambda names: [n for n in names if n != "jq"])
    asked: list[list[str]] = []

    def sim(names):
        asked.append(names)
        plans = [parse_simulation(real(n)) for n in names if (DATA / f"apt-get-s-{n}.stdout").exists()]
        return aptplan.AptPlan(
            *(tuple(c for p in plans for c in getattr(p, f)) for f in ("install", "upgrade", "remove"))
        )

    def services(plan):  # the new packages' real dpkg-deb -c listings where captured, else none
        found = [(c.package, u) for c in plan.install for u in debservices.services_in(listing(c.package))]
        return replace(plan, services=tuple(found)) if plan.install else plan

    monkeypatch.setattr(hostpackages, "simulate", sim)
    monkeypatch.setattr(hostpackages, "with_services", services)
    return asked


def test_podman_docker_is_refused_naming_docker_io(apt):
    found = hostpackages.host_packages(study('["podman-docker"]'))
    assert found is not None and found.environments == ("native",) and found.missing == ("podman-docker",)
    assert hostpackages.refusal(found) == (
        "podman-docker would remove docker.io, which isobench runs on: drop it from packages"
    )


def test_of_several_packages_the_one_that_removes_is_named(apt):
    found = hostpackages.host_packages(study('["openssh-server", "podman-docker"]'))
    assert found is not None
    assert hostpackages.refusal(found).startswith("podman-docker would remove docker.io")
    assert apt == [["openssh-server", "podman-docker"], ["openssh-server"], ["podman-docker"]]


def test_packages_only_in_the_image_or_isobench_s_own_plan_nothing_on_the_host(apt):
    assert (
        hostpackages.host_packages(study('["podman-docker"]', 'baseline = "docker-nat"\n[environments.docker-nat]\n'))
        is None
    )
    assert hostpackages.host_packages(study('["fio"]')) is None  # isobench's own
    assert apt == []


def test_the_plan_in_words_and_as_the_run_fact(apt):
    found = hostpackages.host_packages(study('["openssh-server"]'))
    assert found is not None and hostpackages.refusal(found) == ""
    assert found.line() == (
        "packages on this host (native): installing openssh-server (apt-get update, then install) adds 3 "
        "(openssh-sftp-server, runit-helper, openssh-server), upgrades 1 (openssh-client 1:9.2p1-2+deb12u6 -> "
        "1:9.2p1-2+deb12u10), removes none, starts services: ssh.service (openssh-server), ssh.socket (openssh-server)"
    )
    fact = found.fact("prompt")
    assert fact["consent"] == "prompt" and fact["asked"] == ["openssh-server"] and fact["services_unknown"] is None
    assert fact["services"] == [
        {"package": "openssh-server", "unit": "ssh.service"},
        {"package": "openssh-server", "unit": "ssh.socket"},
    ]
    assert fact["upgrade"] == [{"package": "openssh-client", "from": "1:9.2p1-2+deb12u6", "to": "1:9.2p1-2+deb12u10"}]
    nothing = hostpackages.host_packages(study('["jq"]'))
    assert nothing is not None and not nothing.changes and apt[-1] == []
    assert nothing.line() == "packages on this host (native): jq installed already: nothing changes on this host"


class Tty:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def agree(monkeypatch, packages: str, allow=False, tty=False, answer=None):
    monkeypatch.setattr(execution.sys, "stdin", Tty(tty))
    asked = []

    def confirm(text, **kw):
        asked.append(text)
        return answer

    monkeypatch.setattr("click.confirm", confirm)
    fact = execution.agree_to_packages(study(packages), allow, "study.toml: packages")
    return fact, asked


def test_without_a_terminal_or_the_flag_nothing_is_installed(apt, monkeypatch):
    with pytest.raises(Failure) as err:
        agree(monkeypatch, '["openssh-server"]')
    assert err.value.code == 2 and err.value.message == (
        "study.toml: packages: installing openssh-server would change this host (3 new, 1 upgraded packages: "
        "`isobench validate` lists them); give --allow-packages to install them (no terminal to ask); "
        "nothing was changed"
    )


def test_the_flag_or_a_yes_at_the_prompt_agrees(apt, monkeypatch, capsys):
    fact, asked = agree(monkeypatch, '["openssh-server"]', allow=True)
    assert fact is not None and fact["consent"] == "--allow-packages" and asked == []
    fact, asked = agree(monkeypatch, '["openssh-server"]', tty=True, answer=True)
    assert fact is not None and fact["consent"] == "prompt" and asked == ["Install them on this host?"]
    said = " ".join(capsys.readouterr().err.split())  # folded to the terminal's width
    assert "installing openssh-server (apt-get update, then install) adds 3" in said
    with pytest.raises(Failure) as err:
        agree(monkeypatch, '["openssh-server"]', tty=True, answer=False)
    assert err.value.message == "study.toml: packages: not installed (you said no); nothing was changed"


def test_a_refused_plan_is_refused_even_with_the_flag_and_nothing_needs_no_consent(apt, monkeypatch):
    with pytest.raises(Failure) as err:
        agree(monkeypatch, '["podman-docker"]', allow=True, tty=True, answer=True)
    assert err.value.message == (
        "study.toml: packages: podman-docker would remove docker.io, which isobench runs on: drop it from "
        "packages; nothing was changed"
    )
    fact, asked = agree(monkeypatch, '["jq"]')
    assert fact is not None and fact["consent"] == "nothing to install" and asked == []
    assert agree(monkeypatch, '["jq"]', tty=True)[0] == fact
    assert agree(monkeypatch, '["fio"]')[0] is None  # isobench's own: nothing to ask


def test_when_apt_cannot_be_asked_the_run_is_refused(apt, monkeypatch):
    def no_apt(names):
        raise PlanError("cannot run apt-get ([Errno 2] No such file or directory: 'apt-get')", refused=False)

    monkeypatch.setattr(hostpackages, "simulate", no_apt)
    with pytest.raises(Failure) as err:
        agree(monkeypatch, '["cowsay"]', allow=True)
    assert err.value.message.startswith(
        "study.toml: packages: cannot tell what installing cowsay would change on this host (cannot run apt-get"
    )


def test_the_plan_is_kept_with_the_run_and_a_resume_keeps_the_first(tmp_path):
    from isobench.store.db import Store

    store = Store(str(tmp_path / "r.sqlite"))
    store.create_run("r1", study('["fio"]'), {"cores": 2})
    first = {"asked": ["cowsay"], "consent": "prompt"}
    execution.keep_packages_plan(store, "r1", first)
    assert store.run_facts("r1") == {"cores": 2, "packages_plan": first}
    execution.keep_packages_plan(store, "r1", {"asked": ["cowsay"], "consent": "nothing to install"})
    assert store.run_facts("r1")["packages_plan"] == first  # what changed the host for this run
    again = {"asked": ["cowsay"], "consent": "--allow-packages"}
    execution.keep_packages_plan(store, "r1", again)
    assert store.run_facts("r1")["packages_plan"] == again


def test_run_agrees_before_the_lock_the_pilot_and_any_environment_and_keeps_the_plan(apt, tmp_path, monkeypatch):
    from tests.unit.test_noisepilot import pilot

    import isobench.run.runner
    from isobench.checks import noisepilot
    from isobench.core import lock
    from isobench.results.runfacts import host_facts
    from isobench.store.db import Store

    monkeypatch.setattr(lock.RunLock.__init__, "__defaults__", (str(tmp_path / "run.lock"),))
    monkeypatch.setattr(execution.os, "geteuid", lambda: 0)
    monkeypatch.setattr(execution.sys, "stdin", Tty(False))
    monkeypatch.setattr(noisepilot, "host_noise", lambda **kw: pytest.fail("the pilot ran before the consent"))
    monkeypatch.setattr(isobench.run.runner, "run_study", lambda *a, **kw: pytest.fail("the run started"))
    store = Store(str(tmp_path / "r.sqlite"))
    native = study('["openssh-server"]', "[environments.native]\n")
    with pytest.raises(Failure) as err:
        execution.execute(native, store, progress=False)
    assert "give --allow-packages to install them" in err.value.message
    with pytest.raises(Failure) as err:
        execution.execute(
            study('["podman-docker"]', "[environments.native]\n"), store, progress=False, allow_packages=True
        )
    assert "podman-docker would remove docker.io" in err.value.message

    def run_study(study, store, bar, on_run_id, **kw):
        store.create_run("r1", study, {"cores": 2})
        on_run_id("r1")  # as the runner does, before any environment starts
        return "r1"

    monkeypatch.setattr(noisepilot, "host_noise", lambda **kw: pilot(0.0))
    monkeypatch.setattr(isobench.run.runner, "run_study", run_study)
    assert execution.execute(native, store, progress=False, allow_packages=True) == "r1"
    kept = store.run_facts("r1")["packages_plan"]
    assert kept["consent"] == "--allow-packages" and kept["install"][0]["package"] == "openssh-sftp-server"
    assert ("Study's packages", f"{kept['line']}; consent: --allow-packages") in host_facts(store.load_run("r1"))


def test_validate_shows_the_plan_and_refuses_what_run_refuses(apt, tmp_path):
    import json

    from click.testing import CliRunner

    from isobench.cli.main import main

    path = tmp_path / "study.toml"
    path.write_text(STUDY.replace("ENVS", "[environments.native]\n").replace("PACKAGES", '["openssh-server"]'))
    text = CliRunner().invoke(main, ["validate", str(path)])
    assert text.exit_code == 0 and "packages on this host (native): installing openssh-server" in text.stdout
    doc = json.loads(CliRunner().invoke(main, ["validate", str(path), "--format", "json"]).stdout)
    assert doc["packages_plan"]["to_install"] == ["openssh-server"] and len(doc["packages_plan"]["install"]) == 3
    path.write_text(path.read_text().replace("openssh-server", "podman-docker"))
    refused = CliRunner().invoke(main, ["validate", str(path), "--format", "json"])
    assert refused.exit_code == 2 and json.loads(refused.stdout)["error"] == (
        f"{path}: packages: podman-docker would remove docker.io, which isobench runs on: drop it from packages"
    )
    path.write_text(path.read_text().replace('["podman-docker"]', '["fio"]'))  # isobench's own: no plan
    doc = json.loads(CliRunner().invoke(main, ["validate", str(path), "--format", "json"]).stdout)
    assert doc["ok"] and doc["packages_plan"] is None
