"""The scratch roots are root's alone (issue 55): /dev/shm is anyone's to
write, so another user could make /dev/shm/isobench first, or a symlink
there, and have a run's files and teardown (pidfiles it signals, trees it
removes) in their hands. Each squat here is a real one: a private mount
namespace with a fresh tmpfs on /dev/shm, the squat made by `nobody`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import isobench
from isobench.core import workspace
from isobench.core.owner import Keeper
from isobench.core.workspace import ForeignRoot, own_root
from isobench.run import clean as cleaning

SRC = os.path.dirname(os.path.dirname(isobench.__file__))
AS_NOBODY = "setpriv --reuid nobody --regid nogroup --clear-groups"
real_squat = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")),
    reason="a private mount namespace and a switch to nobody need root, unshare and setpriv",
)


def in_fresh_shm(squat: str, python: str) -> subprocess.CompletedProcess:
    """`squat` (shell, as nobody), then `python` (as root) in a mount namespace
    of their own with an empty tmpfs on /dev/shm: the host's is never touched."""
    script = textwrap.dedent(f"""\
        set -e
        mount -t tmpfs -o mode=1777 isobench-test /dev/shm
        {AS_NOBODY} sh -c "$SQUAT"
        {sys.executable} -c "$CODE"
    """)
    env = {**os.environ, "PYTHONPATH": SRC, "SQUAT": squat, "CODE": python}
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=60, env=env)


OWN_TMP_ROOT = textwrap.dedent("""\
    import os, stat
    from isobench.core.workspace import TMP_ROOT, own_root, ForeignRoot
    try:
        own_root(TMP_ROOT)
        print("used", oct(stat.S_IMODE(os.lstat(TMP_ROOT).st_mode)))
    except ForeignRoot as exc:
        print("refused:", exc)
    elsewhere = "/dev/shm/elsewhere"
    print("elsewhere:", sorted(os.listdir(elsewhere)) if os.path.isdir(elsewhere) else None)
""")


@real_squat
@pytest.mark.parametrize(
    ("squat", "why"),
    [
        ("mkdir /dev/shm/isobench", "belongs to uid"),
        ("mkdir -m 0777 /dev/shm/elsewhere && ln -s /dev/shm/elsewhere /dev/shm/isobench", "is a symlink"),
        ("touch /dev/shm/isobench", "is not a directory"),
    ],
    ids=["directory", "symlink", "file"],
)
def test_a_scratch_root_another_user_made_first_is_refused(squat, why):
    done = in_fresh_shm(squat, OWN_TMP_ROOT)
    assert done.returncode == 0, done.stderr
    refusal, elsewhere = done.stdout.splitlines()
    assert refusal.startswith("refused: /dev/shm/isobench ") and why in refusal, refusal
    assert "rm -r /dev/shm/isobench" in refusal  # the fix, in the same line
    assert elsewhere in ("elsewhere: None", "elsewhere: []")  # nothing made through the link


@real_squat
def test_a_fresh_scratch_root_is_made_root_only():
    done = in_fresh_shm("true", OWN_TMP_ROOT)
    assert done.stdout.splitlines()[0] == "used 0o700", done.stdout + done.stderr


def test_a_root_writable_by_others_is_refused_and_ones_own_is_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ForeignRoot, match=r"shared is writable by others \(mode 0777\)"):
        own_root(str(shared))
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o755)
    assert own_root(str(mine)) == str(mine)


def test_a_run_refuses_a_foreign_scratch_root_before_anything_exists(tmp_path, monkeypatch):
    """The runner owns its roots before it opens the run: nothing stored, nothing started."""
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    monkeypatch.setattr(workspace, "SCRATCH_ROOTS", (str(tmp_path / "link"),))
    text = (
        '[study]\nname = "s"\nrepetitions = 1\nwarmup = 0\n[environments.native]\n[workloads.t]\ncommand = ["true"]\n'
    )
    store = Store(str(tmp_path / "r.sqlite"))
    with pytest.raises(ForeignRoot, match="link is a symlink"):
        run_study(parse_study(text, "s.toml"), store, run_id="r0")
    assert store.db.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
    assert os.listdir(tmp_path / "target") == []


def test_clean_refuses_a_foreign_root_before_touching_anything(tmp_path, monkeypatch):
    (tmp_path / "target" / "r1-native").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "target")
    monkeypatch.setattr(cleaning, "scratch_roots", lambda: [str(tmp_path / "link")])
    monkeypatch.setattr(cleaning, "kinds", lambda: pytest.fail("a kind's leftovers were swept"))
    with pytest.raises(ForeignRoot, match="link is a symlink"):
        cleaning.clean()
    assert os.listdir(tmp_path / "target") == ["r1-native"]


def test_clean_removes_links_and_files_itself_and_lists_only_what_went(tmp_path):
    """A symlink entry goes, not what it names; a file goes too (rmtree
    refused both, and they were listed as removed anyway)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "r1-native" / "data").mkdir(parents=True)
    (root / "r1-native" / "data" / "in").symlink_to(outside)  # inside a tree: not followed either
    outside.mkdir()
    (outside / "keep").write_text("not isobench's")
    (root / "r1-link").symlink_to(outside)
    (root / "r1-file").write_text("x")
    removed = cleaning.remove_scratch("r1", Keeper(str(tmp_path / "owners")), roots=[str(root)])
    assert removed == [f"file {root}/r1-file", f"symlink {root}/r1-link", f"directory {root}/r1-native"]
    assert os.listdir(root) == [] and (outside / "keep").read_text() == "not isobench's"


def test_clean_does_not_list_what_stayed(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "r1-native").mkdir(parents=True)

    def refuse(path, *a, **kw):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(shutil, "rmtree", refuse)
    assert cleaning.remove_scratch("r1", Keeper(str(tmp_path / "owners")), roots=[str(root)]) == []
