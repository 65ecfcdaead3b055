"""docker-placebo against the real engine: its container shares the host's
network, PID and IPC namespaces and runs without seccomp and AppArmor
profiles, its workload's files on a volume, as the engine reports it
(container inspect) and as the environment records it in its facts; from
inside, the host's processes are visible and no seccomp filter applies.
Docker's defaults read back as before. Nothing is left behind."""

import os

import pytest

from isobench.core.dockerclient import engine
from isobench.core.workspace import GUEST_DATA_DIR, LABEL
from isobench.envs.docker import DockerKind, DockerSpec
from isobench.host.hostinfo import host_info
from isobench.images import image_tag

pytestmark = pytest.mark.integration
RUN_ID = "itest-placebo"


@pytest.fixture(scope="module")
def image():
    tag = image_tag()
    if not engine().images.list(name=tag):
        pytest.skip(f"image {tag} not built (isobench images build)")
    return tag


@pytest.fixture
def started(image):
    """An environment of the given spec, started; stopped and checked gone after."""
    client = engine()
    envs = []

    def start(spec: DockerSpec):
        env = DockerKind().make(f"e{len(envs)}", spec, run_id=RUN_ID, host=host_info(), image=image, index=0)
        envs.append(env)
        env.start()
        return env, client.api.inspect_container(env.container_name)

    yield start
    for env in envs:
        env.stop()
    label = {"label": f"{LABEL}.run={RUN_ID}"}
    assert client.containers.list(all=True, filters=label) == []
    assert client.volumes.list(filters=label) == []


def seccomp_mode(env) -> str:
    """The Seccomp line of /proc/self/status inside: 0 none, 2 a filter."""
    result = env.exec(["grep", "^Seccomp:", "/proc/self/status"], timeout=30)
    assert result.ok, result
    return result.stdout.split()[1]


def test_the_placebo_runs_with_the_least_isolation_the_engine_allows(started):
    env, attrs = started(DockerSpec(**DockerKind.presets["docker-placebo"]))
    host = attrs["HostConfig"]
    assert host["PidMode"] == "host" and host["IpcMode"] == "host" and host["NetworkMode"] == "host"
    assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(host["SecurityOpt"])
    assert any(m["Type"] == "volume" and m["Destination"] == GUEST_DATA_DIR for m in attrs["Mounts"])
    assert not host.get("NanoCpus") and not host.get("Memory")  # no limits
    # the host's PID namespace: this test's own process is seen inside
    assert env.exec(["cat", f"/proc/{os.getpid()}/cmdline"], timeout=30).ok
    assert seccomp_mode(env) == "0"
    facts = env.facts()
    assert facts["placebo"] is True
    assert facts["isolation"] == {
        "network": "host",
        "pid": "host",
        "ipc": "host",
        "seccomp": "unconfined",
        "apparmor": "unconfined",
        "storage": "volume",
        # no profile applies where the host has no AppArmor, asked or not
        "apparmor_applied": attrs.get("AppArmorProfile") or "none",
    }
    assert facts["security_options"] == engine().info()["SecurityOptions"]


def test_dockers_defaults_read_back_as_before(started):
    env, attrs = started(DockerSpec())
    assert attrs["HostConfig"]["PidMode"] == "" and not attrs["HostConfig"].get("SecurityOpt")
    assert not env.exec(["cat", f"/proc/{os.getpid()}/cmdline"], timeout=30).ok  # its own PID namespace
    assert seccomp_mode(env) == "2"
    facts = env.facts()
    assert "placebo" not in facts
    assert {k: facts["isolation"][k] for k in ("network", "pid", "ipc", "seccomp", "apparmor", "storage")} == {
        "network": "bridge",
        "pid": "private",
        "ipc": "private",
        "seccomp": "default",
        "apparmor": "default",
        "storage": "overlay",
    }


def test_storage_tmpfs_reads_back_from_the_engine(started):
    env, attrs = started(DockerSpec(storage="tmpfs", tmpfs_mb=64))
    assert GUEST_DATA_DIR in (attrs["HostConfig"].get("Tmpfs") or {})  # `--tmpfs`: not among Mounts
    assert not any(m.get("Destination") == GUEST_DATA_DIR for m in attrs.get("Mounts") or [])
    assert env.facts()["isolation"]["storage"] == "tmpfs"
    fs = env.exec(["stat", "-f", "-c", "%T", GUEST_DATA_DIR], timeout=30)
    assert fs.ok and fs.stdout.strip() == "tmpfs", fs
    assert env.exec(["dd", "if=/dev/zero", f"of={GUEST_DATA_DIR}/f", "bs=1M", "count=8", "oflag=direct"], timeout=30).ok
