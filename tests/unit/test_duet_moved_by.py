"""A duet's record says how each side was moved (issue 54): a container by
its cgroup's cpuset.cpus (v2 under systemd: system.slice/docker-ID.scope;
v1 on the hybrid layout: cpuset/docker/ID) or by `docker update` where no
such file is, native by its own cgroup or by sched_setaffinity. The
layouts are the hosts' real ones: tests/data/hosts/ (captured by the host
lane from its Debian 12 systemd guest) and this project's hybrid hosts."""

import os
import threading
import time

import pytest

from isobench.envs import docker as envdocker
from isobench.envs.docker import DockerEnvironment
from isobench.host.counters import cpuset_write_how, set_cgroup_cpuset
from isobench.run import duet

HERE = os.path.dirname(__file__)
SYSTEMD = os.path.join(HERE, "..", "data", "hosts", "debian12-systemd")


def _read(name: str) -> str:
    with open(os.path.join(SYSTEMD, name)) as fh:
        return fh.read()


def unified_tree(root, container_id: str) -> None:
    """The guest's /sys/fs/cgroup as captured (the root's files, system.slice's
    units), with a container's scope where Docker's systemd driver puts it.
    The scope's own listing was not captured yet (the lane has not reached a
    container): it holds the cpuset.cpus that Delegate=yes gives it."""
    for name in _read("layout/root-listing").split():
        if "." in name and not name.endswith((".slice", ".scope", ".mount")):
            (root / name).write_text("")
    (root / "cgroup.controllers").write_text(_read("layout/root-cgroup.controllers"))
    for name in _read("layout/system.slice-listing").split():
        if name.endswith((".service", ".slice", ".mount")):
            (root / "system.slice" / name).mkdir(parents=True, exist_ok=True)
    scope = root / "system.slice" / f"docker-{container_id}.scope"
    scope.mkdir(parents=True)
    (scope / "cpuset.cpus").write_text("")


def test_a_container_on_the_systemd_unified_layout_moves_by_its_scope_file(tmp_path):
    cid = "0123456789ab" + "c" * 52
    unified_tree(tmp_path, cid)
    how = set_cgroup_cpuset(cid, "1", root=str(tmp_path))
    assert how == f"cgroup v2 cpuset.cpus write (system.slice/docker-{cid[:12]}.scope)"
    assert (tmp_path / "system.slice" / f"docker-{cid}.scope" / "cpuset.cpus").read_text() == "1"


def test_a_container_on_the_hybrid_layout_moves_by_its_v1_cpuset(tmp_path):
    cid = "c" * 64
    d = tmp_path / "cpuset" / "docker" / cid
    d.mkdir(parents=True)
    (d / "cpuset.cpus").write_text("0-1")
    assert set_cgroup_cpuset(cid, "0", root=str(tmp_path)) == f"cgroup v1 cpuset.cpus write (cpuset/docker/{'c' * 12})"
    assert cpuset_write_how(str(d / "cpuset.cpus"), str(tmp_path)).startswith("cgroup v1 ")


class _Container:
    id = "c" * 64

    def update(self, **kw):
        return None


def test_a_container_without_a_cgroup_file_says_docker_update(monkeypatch):
    monkeypatch.setattr(envdocker, "set_cgroup_cpuset", lambda cid, cpus: "")
    env = DockerEnvironment(name="docker-host")
    env._container = _Container()
    assert env.move((0,)) == "docker update"


class _Gate:
    held = inside = standing = None
    fallback = ""


class _Moved:
    def __init__(self, name: str, how: str) -> None:
        self.name, self.how = name, how

    def move(self, cpus):
        return self.how


def test_the_rotation_counts_each_sides_mechanism_and_the_record_says_it(monkeypatch):
    monkeypatch.setattr(duet, "ROTATE_S", 0.01)
    sides = [
        duet.Side(_Moved("native", "cgroup v2 cpuset.cpus write (isobench/r-native.1)"), (0,), _Gate()),
        duet.Side(_Moved("docker-host", "cgroup v2 cpuset.cpus write (system.slice/docker-cc.scope)"), (1,), _Gate()),
    ]
    both, errors = threading.Event(), []
    t = threading.Timer(0.1, both.set)
    t.start()
    duet._rotate(sides, threading.Barrier(1), both, errors)
    assert not errors
    for side in sides:
        ((how, n),) = side.moved_by.items()
        assert how == side.env.how and n == len(side.moves) > 0
    record = duet.duet_record(sides[1], sides[0], [])
    assert record["moved_by"] == f"{sides[1].env.how}: {len(sides[1].moves)}"


def test_the_period_stretches_where_moves_are_slow():
    assert duet.swap_period([]) == duet.ROTATE_S
    assert duet.swap_period([0.0001] * 3) == duet.ROTATE_S  # a cgroup write on each side
    assert duet.swap_period([0.032] * 3) == pytest.approx(0.032 / duet.MOVE_SHARE)  # two `docker update`s
    # one swap the host stalled for 10 s does not stop the rotation
    assert duet.swap_period([0.0001, 0.0001, 10.0]) == duet.ROTATE_S
    assert duet.swap_period([10.0] * 5) == duet.MAX_PERIOD_S
    # the last few swaps count, not the first: a VM's moves, slow from the start
    assert duet.swap_period([0.0001] * 10 + [0.02] * 5) == pytest.approx(0.2)


class _Slow(_Moved):
    def move(self, cpus):
        time.sleep(0.01)  # a VM's threads moved one by one
        return self.how


def test_a_rotation_of_slow_moves_swaps_less_often_and_the_record_says_its_period():
    sides = [duet.Side(_Slow(n, "vm placement"), (c,), _Gate()) for n, c in (("vm", 0), ("native", 1))]
    both, errors = threading.Event(), []
    t = threading.Timer(0.6, both.set)
    t.start()
    duet._rotate(sides, threading.Barrier(1), both, errors)
    assert not errors
    # each swap took 20 ms or more, so the next waited 0.2 s or more: at
    # ROTATE_S it would have swapped about 13 times in 0.6 s
    assert 1 <= len(sides[0].moves) <= 3
    assert sides[0].periods and all(p >= 0.2 for p in sides[0].periods)
