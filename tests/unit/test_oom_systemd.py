"""A container's OOM kill under systemd with crun: the host lane's guest
(Debian 12, cgroup v2, systemd's driver) said "killed: out of memory (no limit
set)" for a 64 MB container, since crun keeps the container's processes and
limit in the scope's `container` child. The scope's listing is the guest's own
(tests/data/hosts/debian12-systemd/container, captured by the lane)."""

import os

from isobench.envs import oom

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "data", "hosts", "debian12-systemd", "container")


def scope_tree(root, limit_in_child: bool):
    """A docker-ID.scope as the guest's listing shows it, with a kill counted."""
    with open(os.path.join(FIXTURE, "id")) as fh:
        cid = fh.read().strip()
    with open(os.path.join(FIXTURE, "scope-listing")) as fh:
        listing = fh.read().split()
    assert {"container", "memory.events", "memory.max"} <= set(listing)
    scope = root / "system.slice" / f"docker-{cid}.scope"
    (scope / "container").mkdir(parents=True)
    (scope / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
    (scope / "memory.max").write_text("max\n" if limit_in_child else "67108864\n")
    (scope / "container" / "memory.max").write_text("67108864\n" if limit_in_child else "max\n")
    return cid


def test_the_limit_crun_sets_in_the_scopes_container_child_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(oom, "CGROUP_ROOT", str(tmp_path))
    cid = scope_tree(tmp_path, limit_in_child=True)
    kills, limit = oom.read(cid)
    assert (kills, limit) == (1, 64 << 20)
    assert oom.killed_line(0, kills, limit) == "killed: out of memory (limit 64 MB)"


def test_a_limit_on_the_scope_itself_still_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(oom, "CGROUP_ROOT", str(tmp_path))
    cid = scope_tree(tmp_path, limit_in_child=False)
    assert oom.read(cid) == (1, 64 << 20)


def test_the_reading_before_each_exec_leaves_the_limit_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(oom, "CGROUP_ROOT", str(tmp_path))
    cid = scope_tree(tmp_path, limit_in_child=True)
    assert oom.read(cid, with_limit=False) == (1, None)
