"""A container is placed on a duet side's CPUs by the engine (`docker
update`), and by its cgroup's cpuset where the runtime has no update
(gVisor's runsc: the engine answers with runsc's usage text)."""

import docker
import pytest

from isobench.core.errors import EnvironmentError_
from isobench.envs import docker as envdocker
from isobench.envs.docker import DockerEnvironment


class Container:
    id = "c" * 64

    def update(self, **kw):
        raise docker.errors.APIError("Cannot update container: /var/lib/docker/runtimes/runsc did not terminate")


def test_a_runtime_without_update_is_placed_by_its_cgroup(monkeypatch):
    written = []
    monkeypatch.setattr(
        envdocker, "set_cgroup_cpuset", lambda cid, cpus: written.append((cid, cpus)) or "cgroup v2 cpuset.cpus write"
    )
    env = DockerEnvironment(name="docker-gvisor")
    env._container = Container()
    env.place((1,))
    env.move((0,))
    assert written == [("c" * 64, "1"), ("c" * 64, "0")]


def test_no_cgroup_file_either_is_one_line(monkeypatch):
    monkeypatch.setattr(envdocker, "set_cgroup_cpuset", lambda cid, cpus: "")
    env = DockerEnvironment(name="docker-gvisor")
    env._container = Container()
    with pytest.raises(EnvironmentError_, match="docker-gvisor: cannot move the container to CPUs 1: "):
        env.place((1,))
