"""A new workload is one module: a throwaway server workload
(workloadmodules/throwaway.py) put on the workloads package's path is
registered by name, accepted by the study model, planned by the runner, its
packages join the list the image recipe and the host install use, its
server executable is one clean kills, and its metrics reach a report with
their roles. Also: the package list read from the sources is exactly the
registered workloads' declarations."""

import os
import pathlib
import subprocess
import sys

import pytest

import isobench.workloads
from isobench import images
from isobench.core.proc import ExecResult
from isobench.host import packages
from isobench.host.hostinfo import HostInfo
from isobench.workloads import WORKLOADS, registry
from isobench.workloads.base import Workload
from isobench.workloads.leftovers import is_server_process, kill_leftover_servers

HERE = pathlib.Path(__file__).resolve().parent
MODULES = HERE / "workloadmodules"
ROOT = HERE.parent.parent
HOST = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)
STUDY = """[study]
name = "throwaway"
repetitions = 3
warmup = 0
baseline = "docker-host"

[environments.docker-nat]
[environments.docker-host]

[workloads.throwaway]
payload_bytes = 128
"""


@pytest.fixture
def throwaway(monkeypatch):
    """The throwaway module discovered from its own directory, and its
    directory among those the package list reads; forgotten afterwards."""
    monkeypatch.setattr(isobench.workloads, "__path__", [*isobench.workloads.__path__, str(MODULES)])
    monkeypatch.setattr(packages, "WORKLOAD_DIRS", (*packages.WORKLOAD_DIRS, MODULES))
    registry.discover(isobench.workloads.__path__, "isobench.workloads.")
    assert "throwaway" in WORKLOADS, "the registry did not find workloadmodules/throwaway.py"
    yield WORKLOADS["throwaway"]
    WORKLOADS.pop("throwaway", None)
    sys.modules.pop("isobench.workloads.throwaway", None)


def test_every_workload_module_registers_itself():
    names = {
        "api",
        "command",
        "compression",
        "fio",
        "hpcc",
        "netbw",
        "netlat",
        "oltp",
        "redis",
        "redis-scaleout",
        "startup",
        "webstore",
    }
    assert set(WORKLOADS) == names
    assert all(cls.name == name and issubclass(cls, Workload) for name, cls in WORKLOADS.items())
    with pytest.raises(KeyError, match="unknown workload 'nope'; known: api, command, compression"):
        isobench.workloads.get("nope")


def test_two_workloads_under_one_name_are_refused():
    class Impostor(WORKLOADS["fio"]):
        name = "fio"

    with pytest.raises(TypeError, match="two workloads named 'fio'"):
        registry.register(Impostor)
    assert WORKLOADS["fio"] is not Impostor


def test_throwaway_in_the_study_model_and_the_runners_plan(throwaway):
    from isobench.run.plan import plan
    from isobench.study import StudyError, parse_study

    study = parse_study(STUDY, "t.toml")
    (entry,) = study.workloads
    assert entry.workload == "throwaway" and entry.params.payload_bytes == 128
    with pytest.raises(StudyError, match=r"workloads\.throwaway\.size: unknown field; allowed: duet, payload_bytes"):
        parse_study(STUDY.replace("payload_bytes = 128", "size = 1"), "t.toml")
    (cell,) = plan(study, HOST)
    assert isinstance(cell.workload, throwaway) and cell.case == "default"


def test_throwaway_packages_reach_the_image_recipe_and_the_host_install(throwaway, capsys, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(packages, "WORKLOAD_DIRS", (packages.WORKLOADS_DIR,))
        shipped = images.recipe_hash()
    assert {"throwaway-server", "throwaway-client"} <= set(images.recipe()["packages"])
    assert images.recipe_hash() != shipped  # a new tool means a new image
    packages.main()  # what scripts/install-host.sh installs
    assert {"throwaway-server", "throwaway-client"} <= set(capsys.readouterr().out.split())


def test_throwaway_server_is_killed_by_clean_only_while_registered(throwaway, tmp_path):
    assert is_server_process(throwaway.server_exe, ["sleep", "600"])
    servers = tmp_path / "run1-native" / "servers"
    servers.mkdir(parents=True)
    leftover = subprocess.Popen([throwaway.server_exe, "600"])
    try:
        (servers / "throwaway.pid").write_text(f"{leftover.pid}\n")
        WORKLOADS.pop("throwaway")  # not a registered workload's server: left alone
        assert kill_leftover_servers(str(tmp_path), "run1") == []
        assert leftover.poll() is None
        WORKLOADS["throwaway"] = throwaway
        assert kill_leftover_servers(str(tmp_path), "run2") == []  # another run's
        killed = kill_leftover_servers(str(tmp_path), "run1")
        assert killed == [f"server process {leftover.pid} ({throwaway.server_exe})"]
        assert leftover.wait(10) == -9
    finally:
        leftover.kill()
        leftover.wait()


def test_throwaway_metrics_reach_a_report_with_their_roles(throwaway, tmp_path):
    """Table I lists its metrics; its latency role alone puts rtt_us (and
    not ops) in the NAT vs host comparison, which names no workload."""
    from isobench.report.markdown import render_markdown
    from isobench.run.plan import plan
    from isobench.store.db import Sample, Store
    from isobench.study import parse_study

    study = parse_study(STUDY, "t.toml")
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = "20260101-000000-throwaway-0001"
    store.create_run(run_id, study, {"cores": 2})
    store.set_env_facts(run_id, "docker-nat", {"kind": "docker", "options": {"network": "bridge"}})
    store.set_env_facts(run_id, "docker-host", {"kind": "docker", "options": {"network": "host"}})
    (cell,) = plan(study, HOST)
    store.define_metrics(run_id, cell.key, cell.case, cell.workload.metrics(cell.case))
    for round_ in range(3):
        for env, rtt in (("docker-nat", 60.0), ("docker-host", 40.0)):
            out = f"{1000 + round_} {rtt + round_ * 0.1}\n"
            m = cell.workload.parse(cell.case, ExecResult(["throwaway-client"], 0, out, "", 1.0))
            store.add_sample(
                Sample(
                    run_id,
                    env,
                    cell.key,
                    cell.case,
                    round_,
                    False,
                    "ok",
                    "2026-01-01T00:00:00+0000",
                    1.0,
                    m.values,
                    m.extra,
                    m.raw,
                )
            )
    store.finish_run(run_id, "complete")
    run = store.load_run(run_id)
    assert {k.metric: k.role for k in run.metrics} == {"ops": "throughput", "rtt_us": "latency"}
    md = render_markdown(run).replace("\\_", "_")  # Markdown escapes the underscore
    assert "| throwaway | ops (op/s) ↑ |" in md and "|  | rtt_us (µs) ↓ |" in md
    section = md.split("## NAT vs host networking", 1)[1].split("\n## ", 1)[0]
    assert "- throwaway rtt_us (µs) ↓: docker-nat 60.1 vs docker-host 40.1" in section
    assert "ops" not in section


def test_package_list_read_from_sources_is_the_registered_declarations():
    declared = {p for cls in WORKLOADS.values() for p in cls.packages}
    assert set(packages.workload_packages()) == declared
    base = set(packages.read_package_list(packages.BASE_PACKAGES_FILE))
    assert packages.tool_packages() == sorted(base | declared)
    assert not base & declared, "a workload's package is also in base-packages.txt"
    # libraries are recorded, never installed by name
    libraries = {p for cls in WORKLOADS.values() for p in cls.libraries}
    assert libraries == {"libopenmpi3", "libblas3"} and not libraries & set(packages.tool_packages())
    assert WORKLOADS["hpcc"].versioned_packages() == ("hpcc", "openmpi-bin", "libopenmpi3", "libblas3")


def test_a_computed_package_list_is_refused():
    src = "class W:\n    packages = tuple(['fio'])\n"
    with pytest.raises(ValueError, match=r"w\.py:2: W\.packages must be a literal tuple"):
        packages.declared_packages(src, "w.py")
    assert packages.declared_packages("class W:\n    packages: T = ('fio', 'pixz')\n") == ["fio", "pixz"]


def test_host_install_lists_packages_with_debians_python_alone():
    """install-host.sh runs before the venv exists: stdlib only (-S: no site packages)."""
    python = "/usr/bin/python3"
    if not os.access(python, os.X_OK):
        pytest.skip("no Debian python3")
    out = subprocess.run(
        [python, "-S", "-m", "isobench.host.packages"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    assert out.split() == packages.tool_packages()
    assert "-m isobench.host.packages" in (ROOT / "scripts" / "install-host.sh").read_text()
