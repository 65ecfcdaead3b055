"""`isobench setup` (docs/install.md): the changes listed before any is
made; --check changes nothing and exits 0 or 1 with the list; not root or
not Debian 12 is one line before anything changes; a failed step is named;
the steps are the shipped scripts setup.sh runs, then the image."""

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from isobench.cli import setup_cmd
from isobench.cli.main import main
from isobench.core import shipped
from isobench.host import prepare

ROOT = Path(__file__).resolve().parents[2]
READY = prepare.HostState("", 40, [], [], [], [], True, True, "isobench/debian:abc")


def invoke(*args, input=None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, input=input)


def test_the_infrastructure_list_is_install_host_shs_own():
    names = prepare.infra_packages(shipped.script("install-host.sh").read_text())
    assert {"docker.io", "debootstrap", "qemu-system-x86", "crun", "runsc"} <= set(names)
    assert prepare.infra_packages("no array here") == []


@pytest.mark.parametrize(
    ("flags", "wanted"),
    [
        ({}, set()),
        ({"/sys/module/apparmor/parameters/enabled": "Y"}, {"apparmor"}),
        ({"/sys/module/apparmor/parameters/enabled": "N"}, set()),
        ({"/proc/1/comm": "systemd"}, {"dbus"}),
        ({"/proc/1/comm": "systemd", "/sys/module/apparmor/parameters/enabled": "Y"}, {"apparmor", "dbus"}),
    ],
)
def test_the_check_asks_for_what_setup_adds_on_this_host(flags, wanted):
    """`setup --check` reads the list setup installs, with what install-host.sh
    adds where the kernel has AppArmor on or systemd is PID 1: the host lane's
    guest had neither apparmor_parser nor a system bus, and the check asked
    for neither."""
    names = prepare.infra_packages(shipped.script("install-host.sh").read_text(), read=flags.get)
    assert {"apparmor", "dbus"} & set(names) == wanted and "docker.io" in names


def test_the_scripts_find_the_package_where_there_is_no_src(tmp_path):
    """What install-host.sh runs with Debian's python3, on the path setup gives it."""
    r = subprocess.run(
        ["python3", "-S", "-m", "isobench.host.packages"],
        env={**os.environ, "PYTHONPATH": shipped.package_parent()},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 0 and "fio" in r.stdout.split(), r.stderr
    for name in ("install-host.sh", "start-dockerd.sh"):
        assert 'PYTHONPATH="${ISOBENCH_PYTHONPATH:-$ROOT/src}"' in shipped.script(name).read_text()


def test_daemon_json_changes_name_the_keys(tmp_path, monkeypatch):
    monkeypatch.setattr(prepare.daemonconf, "runtime_entries", lambda: {})
    path = tmp_path / "daemon.json"
    lines = prepare.daemon_json_changes(str(path))
    assert any(ln.startswith('bip: (unset) -> "198.18.0.1/24"') for ln in lines)
    path.write_text(json.dumps({**prepare.daemonconf.BASE_KEYS, "debug": True}))
    assert prepare.daemon_json_changes(str(path)) == []
    path.write_text("[1]")
    assert prepare.daemon_json_changes(str(path)) == []  # refused before anything starts, not a change
    assert "not an object" in prepare.daemon_json_problem(str(path))


@pytest.mark.parametrize(
    "text,ok",
    [
        ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n', True),
        ('PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nVERSION_CODENAME=noble\n', False),
    ],
)
def test_debian_12_or_one_line(tmp_path, text, ok):
    (tmp_path / "os-release").write_text(text)
    problem = prepare.not_debian_12(str(tmp_path / "os-release"))
    assert (problem == "") is ok
    if not ok:
        assert problem.startswith("this is Ubuntu 24.04 LTS; ")


def test_the_changes_are_listed_with_what_they_touch():
    state = prepare.HostState(
        "", 40, ["fio", "crun"], ["redis-server"], ['bip: (unset) -> "198.18.0.1/24"'], ["hugetlb"], True, False, "t:1"
    )
    text = "\n".join(prepare.change_lines(state))
    for said in (
        "installs 2 of 40: fio, crun",
        "stopped and disabled (the workloads start their own): redis-server",
        "/etc/docker/daemon.json rewritten, other keys kept: bip",
        "restarted (running containers stop)",
        "v1 hierarchies of their own (crun needs them off cgroup2): hugetlb",
        "198.18.0.0/15",
        "the image t:1: built",
    ):
        assert said in text, said
    found = prepare.check_lines(state)
    assert len(found) == 5 and prepare.check_lines(READY) == []


@pytest.fixture
def host(monkeypatch):
    """setup_cmd with the host read from READY and every command it would run recorded, not run."""
    calls = []
    monkeypatch.setattr(setup_cmd, "_state", lambda: READY)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(prepare, "not_debian_12", lambda: "")

    def run(argv, env=None, **kw):
        calls.append((Path(argv[-1]).name, env.get("ISOBENCH_NO_DOCKERD"), env.get("ISOBENCH_PYTHONPATH")))
        return SimpleNamespace(returncode=calls_fail.get(Path(argv[-1]).name, 0))

    calls_fail: dict[str, int] = {}
    monkeypatch.setattr(setup_cmd.subprocess, "run", run)
    built = []
    monkeypatch.setattr(setup_cmd, "_image_step", lambda: built.append(True))
    return SimpleNamespace(calls=calls, fail=calls_fail, built=built)


def test_check_exits_0_on_a_ready_host_and_1_with_the_list(host, monkeypatch):
    r = invoke("setup", "--check")
    assert r.exit_code == 0 and "host ready" in r.stdout and host.calls == []
    monkeypatch.setattr(setup_cmd, "_state", lambda: prepare.HostState("", 40, ["fio"], [], [], [], False, False, "t"))
    r = invoke("setup", "--check")
    assert r.exit_code == 1 and host.calls == [] and not host.built
    assert "packages missing (1 of 40): fio" in r.stdout and "Docker Engine does not answer" in r.stdout


def test_not_root_or_not_debian_12_is_one_line_before_any_change(host, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    r = invoke("setup", "--yes")
    assert r.exit_code == 2 and "run it as root" in r.stderr and r.stdout == ""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(prepare, "not_debian_12", lambda: "this is Ubuntu 24.04 LTS; made for Debian 12")
    r = invoke("setup", "--yes")
    assert r.exit_code == 2 and "Ubuntu 24.04" in r.stderr and "nothing was changed" in r.stderr
    assert host.calls == [] and not host.built


def test_the_list_comes_first_then_it_asks(host, monkeypatch):
    r = invoke("setup")  # no terminal: it cannot ask, and says --yes
    assert r.exit_code == 2 and "give --yes" in r.stderr and host.calls == []
    monkeypatch.setattr(setup_cmd, "_can_ask", lambda: True)
    r = invoke("setup", input="n\n")
    assert r.exit_code == 1 and host.calls == []  # declined: nothing ran
    assert r.stdout.index("will change this host") < r.stdout.index("Make these changes?")
    assert "198.18.0.0/15" in r.stdout


def test_yes_runs_the_shipped_scripts_then_the_image(host):
    r = invoke("setup", "--yes")
    assert r.exit_code == 0, r.output
    parent = shipped.package_parent()
    assert host.calls == [("install-host.sh", "1", parent), ("start-dockerd.sh", None, parent)] and host.built
    assert "will change this host" in r.stdout and "Make these changes?" not in r.stdout


def test_a_failed_step_is_named_and_the_rest_waits(host):
    host.fail["start-dockerd.sh"] = 1
    r = invoke("setup", "--yes")
    assert r.exit_code == 2 and not host.built
    line = " ".join(r.stderr.split())
    assert "setup: step 2 of 3 (Docker Engine) failed: start-dockerd.sh exited 1" in line
    assert "run `isobench setup --yes` again" in line


@pytest.mark.parametrize(
    ("apparmor", "pid1"), [("Y\n", "init\n"), ("N\n", "systemd\n"), (None, None), ("Y\n", "systemd\n")]
)
def test_install_host_adds_apparmor_and_dbus_as_the_check_reads_it(tmp_path, apparmor, pid1):
    """The host lane's Debian 12 guest: AppArmor on in the kernel and systemd
    as PID 1, with no apparmor_parser (no container started) and no system
    bus (no scope for a native side). install-host.sh's list, run as written
    with the host's files swapped for the test's, is what `setup --check`
    reads from the script."""
    text = shipped.script("install-host.sh").read_text(encoding="utf-8")
    start = text.index("INFRA=(")
    block = text[start : text.index("\n# No service starts", start)]
    assert "POLICY" not in block and "apt-get" not in block
    files = {"/sys/module/apparmor/parameters/enabled": apparmor, "/proc/1/comm": pid1}
    for i, (path, content) in enumerate(files.items()):
        swapped = tmp_path / f"flag{i}"
        if content is not None:
            swapped.write_text(content)
        block = block.replace(path, str(swapped))
    out = subprocess.run(["bash", "-c", block + 'echo "${INFRA[@]}"'], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    read = {path: content.strip() for path, content in files.items() if content is not None}.get
    assert out.stdout.split() == prepare.infra_packages(text, read=read)
    assert ("apparmor" in out.stdout.split()) is (apparmor == "Y\n")
    assert ("dbus" in out.stdout.split()) is (pid1 == "systemd\n")
