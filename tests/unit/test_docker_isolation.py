"""A Docker environment's isolation options (envs/docker_isolation.py):
validated in the study file, passed to the engine only when not Docker's
default, read back from the engine after start (a mismatch refuses the
start in one line and leaves nothing), recorded in its facts, and judged
against the engine's `docker info` SecurityOptions before anything starts.
No engine: its answers are stood in for."""

from __future__ import annotations

import pytest
from tests.unit.test_env_specs import FakeEngine, engine_attrs, fake_engine  # noqa: F401 - the fixture

from isobench.checks.preflight import preflight
from isobench.core.errors import EnvironmentError_
from isobench.envs import docker_isolation as iso
from isobench.envs.docker import DockerEnvironment, DockerKind, DockerSpec
from isobench.host.hostinfo import HostInfo
from isobench.study import StudyError, parse_study

PLACEBO = DockerSpec(**DockerKind.presets["docker-placebo"])
# `docker info`'s SecurityOptions as real engines report them: this host's
# (Docker 20.10.24 as root, cgroup v1, no AppArmor), Ubuntu's Docker 24+, a
# rootless engine, one with userns-remap, and one without seccomp or AppArmor
THIS_HOST = ["name=seccomp,profile=default"]
UBUNTU = ["name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"]
ROOTLESS = ["name=seccomp,profile=builtin", "name=rootless", "name=cgroupns"]
USERNS = ["name=apparmor", "name=seccomp,profile=default", "name=userns"]
BARE: list[str] = []


def test_the_preset_asks_for_the_least_isolation_and_nothing_else_does():
    assert PLACEBO.least_isolation
    assert (PLACEBO.network, PLACEBO.pid, PLACEBO.ipc, PLACEBO.storage) == ("host", "host", "host", "volume")
    assert (PLACEBO.seccomp, PLACEBO.apparmor, PLACEBO.cpus, PLACEBO.memory_mb) == (
        "unconfined",
        "unconfined",
        None,
        None,
    )
    for other in ("docker-nat", "docker-host", "docker-crun", "docker-gvisor"):
        assert not DockerSpec(**DockerKind.presets[other]).least_isolation, other
    # a limit, a private namespace or another runtime is isolation; placement is not
    for change in ({"cpus": 1.0}, {"memory_mb": 512}, {"ipc": "private"}, {"seccomp": "default"}, {"runtime": "crun"}):
        assert not PLACEBO.model_copy(update=change).least_isolation, change
    assert PLACEBO.model_copy(update={"pin": True}).least_isolation
    assert DockerKind.placebo == "docker-placebo"


def test_a_study_names_the_preset_or_sets_the_fields():
    study = parse_study(
        '[study]\nname = "p"\n[environments.native]\n[environments.docker-placebo]\n[workloads.startup]\n'
    )
    assert study.environments["docker-placebo"] == PLACEBO
    spec = parse_study(
        '[study]\nname = "p"\n[environments.native]\n[environments.c]\nkind = "docker"\npid = "host"\n'
        'seccomp = "unconfined"\n[workloads.startup]\n'
    ).environments["c"]
    assert (spec.pid, spec.ipc, spec.seccomp, spec.apparmor) == ("host", "private", "unconfined", "default")


def test_only_what_differs_from_dockers_default_reaches_the_engine():
    assert iso.run_options(DockerSpec()) == {}  # every existing preset starts as it did
    assert iso.run_options(PLACEBO) == {
        "pid_mode": "host",
        "ipc_mode": "host",
        "security_opt": ["seccomp=unconfined", "apparmor=unconfined"],
    }
    assert iso.run_options(DockerSpec(apparmor="unconfined")) == {"security_opt": ["apparmor=unconfined"]}


def test_the_engines_answer_is_read_in_the_specs_words():
    # container inspect as Docker 20.10 answers it (integration: tests/integration/test_placebo.py)
    placebo = {
        "HostConfig": {
            "NetworkMode": "host",
            "PidMode": "host",
            "IpcMode": "host",
            "SecurityOpt": ["seccomp=unconfined", "apparmor=unconfined"],
        },
        "Mounts": [{"Type": "volume", "Name": "x-data", "Destination": "/isobench/data"}],
        "AppArmorProfile": "",
    }
    got = iso.read_back(placebo, "/isobench/data")
    assert got == {**iso.asked(PLACEBO), "apparmor_applied": "none"}
    plain = {"HostConfig": {"NetworkMode": "bridge", "PidMode": "", "IpcMode": "shareable", "SecurityOpt": None}}
    assert iso.read_back(plain, "/isobench/data") == {**iso.asked(DockerSpec()), "apparmor_applied": "none"}
    # Docker's old spelling, and an AppArmor host's own profile
    old = {"HostConfig": {"SecurityOpt": ["seccomp:unconfined"]}, "AppArmorProfile": "docker-default"}
    assert iso.read_back(old, "/d")["seccomp"] == "unconfined" and iso.read_back(old, "/d")["apparmor_applied"] == (
        "docker-default"
    )


def test_storage_tmpfs_puts_the_data_directory_in_ram_and_reads_back(fake_engine):  # noqa: F811 - the fixture
    spec = parse_study(
        '[study]\nname = "p"\n[environments.native]\n[environments.r]\nkind = "docker"\nstorage = "tmpfs"\n'
        "tmpfs_mb = 64\n[workloads.startup]\n"
    ).environments["r"]
    env = DockerEnvironment(name="r", spec=spec, image="img")
    env.start()
    [run] = fake_engine.runs
    size = f"size={64 * 2**20}"
    assert run["tmpfs"] == {"/isobench/tmp": size, "/isobench/data": size} and "volumes" not in run
    assert env.facts()["isolation"]["storage"] == "tmpfs"
    # as Docker 20.10 inspects such a container: the data directory is among HostConfig.Tmpfs
    inspected = {"HostConfig": {"Tmpfs": {"/isobench/data": size, "/isobench/tmp": size}}, "Mounts": []}
    assert iso.read_back(inspected, "/isobench/data")["storage"] == "tmpfs"
    assert iso.read_back({"HostConfig": {"Tmpfs": {"/isobench/tmp": size}}}, "/isobench/data")["storage"] == "overlay"
    ignored = engine_attrs({"network_mode": "bridge", "tmpfs": {"/isobench/tmp": size}})
    with pytest.raises(EnvironmentError_, match="storage = \"tmpfs\" but the engine reports 'overlay'"):
        iso.verified(spec, ignored, "/isobench/data")
    with pytest.raises(StudyError, match="environments.r.storage: Input should be 'overlay', 'volume' or 'tmpfs'"):
        parse_study('[study]\nname = "p"\n[environments.r]\nkind = "docker"\nstorage = "ram"\n[workloads.startup]\n')


def test_what_the_engine_did_not_give_refuses_the_start_in_one_line():
    ignored = engine_attrs({"network_mode": "host", "volumes": {"v": {"bind": "/isobench/data"}}})
    with pytest.raises(EnvironmentError_) as err:
        iso.verified(PLACEBO, ignored, "/isobench/data")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("the engine did not give what was asked: ")
    assert "pid = \"host\" but the engine reports 'private'" in msg and 'seccomp = "unconfined"' in msg
    assert "network" not in msg and "storage" not in msg  # those it gave


def test_start_passes_reads_back_and_records_the_isolation(fake_engine):  # noqa: F811 - the fixture
    env = DockerEnvironment(name="p", spec=PLACEBO, image="img")
    env.start()
    [run] = fake_engine.runs
    assert run["pid_mode"] == run["ipc_mode"] == "host" and run["network_mode"] == "host"
    assert run["security_opt"] == ["seccomp=unconfined", "apparmor=unconfined"]
    assert "nano_cpus" not in run and "mem_limit" not in run
    facts = env.facts()
    assert facts["placebo"] is True and facts["isolation"]["pid"] == "host"
    assert facts["options"]["seccomp"] == "unconfined"
    plain = DockerEnvironment(name="d", image="img")
    plain.start()
    assert "placebo" not in plain.facts() and plain.facts()["isolation"]["pid"] == "private"


def test_a_start_the_engine_did_not_honour_is_refused_and_removed(monkeypatch):
    # an engine that drops the namespaces it was asked to share
    deaf = FakeEngine(
        lambda kwargs: engine_attrs({k: v for k, v in kwargs.items() if k not in ("pid_mode", "ipc_mode")})
    )
    monkeypatch.setattr("isobench.envs.docker.engine", lambda timeout=None: deaf)
    env = DockerEnvironment(name="docker-placebo", spec=PLACEBO, image="img")
    with pytest.raises(EnvironmentError_) as err:
        env.start()
    msg = str(err.value)
    assert msg.startswith("docker-placebo: cannot start container from img: the engine did not give what was asked: ")
    assert "pid = \"host\" but the engine reports 'private'; ipc = " in msg and "\n" not in msg
    assert deaf.removed == ["c1", f"{env.container_name}-data"]  # its container and volume, at once


@pytest.mark.parametrize(
    "options, fields",
    [
        (THIS_HOST, []),
        (UBUNTU, []),
        (BARE, []),  # no seccomp: a container has none anyway; no AppArmor: none applies, asked or not
        (ROOTLESS, ["pid", "ipc"]),
        (USERNS, ["pid"]),  # its containers may join the host's IPC namespace
    ],
    ids=["this-host", "ubuntu", "no-seccomp-no-apparmor", "rootless", "userns-remap"],
)
def test_the_engines_security_options_decide_whether_the_placebo_can_run(options, fields):
    problems = iso.engine_problems(PLACEBO, options)
    assert [f for f, _ in problems] == fields
    for _, line in problems:
        assert "\n" not in line and line.startswith('"host" would not be this host\'s own namespace')
    # Docker's defaults ask nothing of an engine; seccomp or AppArmor alone neither
    assert iso.engine_problems(DockerSpec(), options) == []
    assert iso.engine_problems(DockerSpec(seccomp="unconfined", apparmor="unconfined"), options) == []


def test_a_rootless_engine_is_named_and_what_would_work_said():
    [(field, line), _] = iso.engine_problems(PLACEBO, ROOTLESS)
    assert field == "pid"
    assert line == (
        '"host" would not be this host\'s own namespace: this Docker Engine is rootless (SecurityOptions '
        'name=rootless); run a rootful dockerd without userns-remap, or pid = "private"'
    )


class InfoOnly:
    def __init__(self, options):
        self.options = options

    def info(self):
        return {"SecurityOptions": self.options, "Runtimes": {}}

    def close(self):
        pass


def test_the_placebo_on_a_rootless_engine_is_refused_before_anything_starts(monkeypatch):
    monkeypatch.setattr("isobench.core.dockerclient.engine_or_none", lambda timeout=30: InfoOnly(ROOTLESS))
    study = parse_study(
        '[study]\nname = "p"\n[environments.native]\n[environments.docker-placebo]\n[workloads.startup]\n', "s.toml"
    )
    problems = preflight(study, HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30))
    assert problems[0].startswith('s.toml: environments.docker-placebo.pid: "host" would not be')
    assert problems[1].startswith("s.toml: environments.docker-placebo.ipc: ") and len(problems) == 2
    monkeypatch.setattr("isobench.core.dockerclient.engine_or_none", lambda timeout=30: InfoOnly(THIS_HOST))
    assert preflight(study, HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)) == []
    # no engine: nothing to say before start (its own error comes then)
    monkeypatch.setattr("isobench.core.dockerclient.engine_or_none", lambda timeout=30: None)
    assert DockerKind().check(PLACEBO) == []
