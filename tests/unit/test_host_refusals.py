"""A systemd host's refusals, one line before anything starts (issue 54):
a daemon.json setup cannot merge, a masked docker.service, and systemd's
AllowedCPUs leaving a duet one CPU. The cgroup files are the Debian 12
systemd guest's, captured by the host lane (tests/data/hosts/)."""

import json
import os
import subprocess

import pytest
from click.testing import CliRunner

from isobench.cli import setup_cmd
from isobench.cli.main import main
from isobench.host import prepare, samplecgroup

SYSTEMD = os.path.join(os.path.dirname(__file__), "..", "data", "hosts", "debian12-systemd", "layout")


def _read(name: str) -> str:
    with open(os.path.join(SYSTEMD, name)) as fh:
        return fh.read()


def test_a_daemon_json_setup_cannot_merge_is_named_with_what_would_work(tmp_path):
    path = tmp_path / "daemon.json"
    assert prepare.daemon_json_problem(str(path)) == ""  # none yet: setup writes it
    path.write_text('{"bip": "198.18.0.1/24",}')
    assert prepare.daemon_json_problem(str(path)).startswith(f"{path} cannot be merged: not readable JSON (")
    path.write_text("[1, 2]")
    assert "a JSON list, not an object" in prepare.daemon_json_problem(str(path))
    path.write_text(json.dumps({"runtimes": ["crun"]}))
    assert '"runtimes" is a list, not an object' in prepare.daemon_json_problem(str(path))
    path.write_text(json.dumps({"log-driver": "journald", "runtimes": {"kata": {"path": "/usr/bin/kata"}}}))
    assert prepare.daemon_json_problem(str(path)) == ""
    assert prepare.daemon_json_changes(str(path))  # a mergeable one lists its changes


def test_a_masked_docker_unit_is_named_with_unmask(monkeypatch):
    monkeypatch.setattr(prepare, "_systemd", lambda: True)

    def run(argv, **kw):
        assert argv == ["systemctl", "is-enabled", "docker.service"]
        return subprocess.CompletedProcess(argv, 1, "masked\n", "")

    line = prepare.docker_unit_problem(run=run)
    assert line.startswith("docker.service is masked (systemd): setup cannot start Docker Engine;")
    assert "systemctl unmask docker.service" in line
    enabled = lambda argv, **kw: subprocess.CompletedProcess(argv, 0, "enabled\n", "")  # noqa: E731
    assert prepare.docker_unit_problem(run=enabled) == ""
    monkeypatch.setattr(prepare, "_systemd", lambda: False)
    assert prepare.docker_unit_problem(run=run) == ""


def test_setup_refuses_before_it_changes_anything(monkeypatch):
    state = prepare.HostState("", 1, [], [], [], [], True, True, "isobench/debian:x")
    state.refused = ["docker.service is masked (systemd): setup cannot start Docker Engine; `systemctl unmask ...`"]
    monkeypatch.setattr(setup_cmd, "_state", lambda: state)
    monkeypatch.setattr(setup_cmd, "_run_steps", lambda: (_ for _ in ()).throw(AssertionError("a step ran")))
    monkeypatch.setattr(setup_cmd.os, "geteuid", lambda: 0)
    monkeypatch.setattr(prepare, "not_debian_12", lambda: "")
    r = CliRunner().invoke(main, ["setup", "--yes"])
    assert r.exit_code == 2
    assert "docker.service is masked" in r.output and "nothing was changed" in r.output
    assert "will change this host" not in r.output
    assert prepare.check_lines(state)[0].startswith("docker.service is masked")


def unified_root(tmp_path, unit_cpus: str | None):
    """The guest's cgroup root (its files as captured), the agent's unit with
    systemd's AllowedCPUs= written to its cpuset.cpus when given."""
    for name in ("cgroup.controllers", "cgroup.subtree_control"):
        (tmp_path / name).write_text(_read(f"root-{name}"))
    unit = tmp_path / samplecgroup.own_cgroup(_read("proc-self-cgroup")).strip("/")
    unit.mkdir(parents=True)
    if unit_cpus is not None:
        (unit / "cpuset.cpus").write_text(unit_cpus + "\n")
    return unit


def test_systemds_allowed_cpus_leaving_one_cpu_is_named_with_its_unit(tmp_path):
    text = _read("proc-self-cgroup")
    assert samplecgroup.own_cgroup(text) == "/system.slice/qemu-guest-agent.service"
    unit = unified_root(tmp_path, "0")
    limit = samplecgroup.cpus_limited_by(str(tmp_path), text)
    assert limit == "AllowedCPUs=0 of system.slice/qemu-guest-agent.service"
    remedy = samplecgroup.duet_cpus_remedy(limit)
    assert "`systemctl set-property qemu-guest-agent.service AllowedCPUs=`" in remedy
    (unit / "cpuset.cpus").write_text("")  # no AllowedCPUs=: nothing to name
    assert samplecgroup.cpus_limited_by(str(tmp_path), text) == ""
    assert samplecgroup.duet_cpus_remedy("") == ""


def test_a_slice_above_the_unit_is_named_when_it_confines(tmp_path):
    unified_root(tmp_path, None)
    (tmp_path / "system.slice" / "cpuset.cpus").write_text("1")
    text = _read("proc-self-cgroup")
    assert samplecgroup.cpus_limited_by(str(tmp_path), text) == "AllowedCPUs=1 of system.slice"


def test_the_hybrid_layout_names_nothing(tmp_path):
    (tmp_path / "unified").mkdir()
    assert samplecgroup.cpus_limited_by(str(tmp_path), "0::/init.scope\n1:cpuset:/\n") == ""


def test_under_systemd_isobench_asks_for_a_delegated_scope_and_stands_in_its_leaf(tmp_path):
    """Debian 12's root hands down only memory and pids (the captured
    subtree_control): a cgroup isobench made at the root could not have a
    cpuset. A scope systemd delegates to it has every controller."""
    assert _read("root-cgroup.subtree_control").split() == ["memory", "pids"]
    pid = os.getpid()
    unit = f"isobench-{pid}.scope"
    where = [_read("proc-self-cgroup")[3:].strip()]
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        where[0] = f"/system.slice/{unit}"  # the job moved this process
        (tmp_path / "system.slice" / unit).mkdir(parents=True)
        return subprocess.CompletedProcess(argv, 0, "o /org/freedesktop/systemd1/job/1\n", "")

    scope = samplecgroup.delegated_parent(str(tmp_path), run=run, own=lambda: where[0])
    assert scope == f"{tmp_path}/system.slice/{unit}"
    assert calls == [samplecgroup.start_scope_argv(unit, pid)]
    assert calls[0][-5:] == [str(pid), "Delegate", "b", "true", "0"]
    assert (tmp_path / "system.slice" / unit / "harness" / "cgroup.procs").read_text() == str(pid)
    where[0] += "/harness"  # the kernel moved it there: asked again, nothing more is started
    assert samplecgroup.delegated_parent(str(tmp_path), run=run, own=lambda: where[0]) == scope
    assert len(calls) == 1
    (tmp_path / "cgroup.controllers").write_text(_read("root-cgroup.controllers"))
    (tmp_path / "system.slice" / unit / "r1-native.1").mkdir()
    assert samplecgroup.leftovers(str(tmp_path)) == {"r1-native.1": [f"{scope}/r1-native.1"]}


def test_systemd_refusing_the_scope_is_an_oserror_the_native_side_falls_back_on(tmp_path):
    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, 1, "", "Access denied\n")

    try:
        samplecgroup.delegated_parent(str(tmp_path), run=run, own=lambda: "/system.slice/x.service")
    except OSError as exc:
        assert "systemd gave isobench no scope of its own" in str(exc) and "Access denied" in str(exc)
    else:
        raise AssertionError("no OSError")


def test_no_system_bus_names_setup_which_installs_it(tmp_path):
    """The host lane's guest had systemd but no dbus: busctl could not connect,
    and the native sides fell back to sched_setaffinity."""

    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, 1, "", "Failed to connect to bus: No such file or directory\n")

    with pytest.raises(OSError, match="no system bus: `isobench setup` installs and starts dbus"):
        samplecgroup.delegated_parent(str(tmp_path), run=run, own=lambda: "/system.slice/x.service")
