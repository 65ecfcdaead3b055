"""A store on a read-only filesystem (issue 47): every command that only
reads works on it where it is; a writer is refused in one line naming it;
a store whose write-ahead log still holds commits is refused rather than
read without them. A real tmpfs, remounted read-only, unmounted at the end.

Run under the machine's heavy lock (it mounts)."""

from __future__ import annotations

import gc
import shutil
import sqlite3
import subprocess

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import Synthetic, write_run

pytestmark = pytest.mark.integration


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@pytest.fixture
def mount(tmp_path):
    mnt = tmp_path / "ro"
    mnt.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt))
    try:
        store = Store(str(mnt / "s.sqlite"))
        write_run(store, Synthetic("a", seed=1))
        write_run(store, Synthetic("b", seed=2))
        store.close()
        # a copy taken while a writer had commits in its log (not checkpointed), without its -shm
        shutil.copy(mnt / "s.sqlite", mnt / "w.sqlite")
        db = sqlite3.connect(mnt / "w.sqlite")
        db.execute("PRAGMA wal_autocheckpoint = 0")
        with db:
            db.execute("UPDATE runs SET status = 'interrupted'")
        shutil.copy(mnt / "w.sqlite", mnt / "p.sqlite")
        shutil.copy(mnt / "w.sqlite-wal", mnt / "p.sqlite-wal")
        db.close()
        sh("mount", "-o", "remount,ro", str(mnt))
        yield mnt
    finally:
        gc.collect()  # the commands' stores, left open as a command's exit would close them
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30).returncode != 0:
            sh("umount", "--lazy", str(mnt))  # still busy (a failed assertion's store): detached all the same


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_readers_read_a_store_on_a_read_only_filesystem(mount, tmp_path):
    store = str(mount / "s.sqlite")
    for args in (
        ["runs"],
        ["report", "a"],
        ["export", "a", "--dir", str(tmp_path / "export")],
        ["history"],
        ["compare", "a", "b"],
        ["archive", "a", "-o", str(tmp_path / "a.run.json")],
        ["store", "check"],
    ):
        result = invoke(*args, "--store", store)
        assert result.exit_code == 0, (args, result.output)
    assert sorted(p.name for p in mount.iterdir()) == ["p.sqlite", "p.sqlite-wal", "s.sqlite", "w.sqlite"]
    # a writer: one line naming the store
    result = invoke("import", str(tmp_path / "a.run.json"), "--rename", "c", "--store", store)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: {store}: the store is on a read-only filesystem"), result.stderr


def test_a_pending_log_on_a_read_only_filesystem_is_refused_not_skipped(mount):
    result = invoke("runs", "--store", str(mount / "p.sqlite"))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert f"commits still in its write-ahead log ({mount}/p.sqlite-wal)" in result.stderr
