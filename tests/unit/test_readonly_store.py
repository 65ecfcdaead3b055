"""A store opened to be read only (store/readonly.py): nothing is written to
it, an older store reads as a newer one, and a store SQLite cannot read
where it is gets one line saying why. A real read-only filesystem is in
tests/integration/test_readonly_store.py."""

import hashlib
import sqlite3

from isobench.store import db as db_module
from isobench.store import readonly
from isobench.store.db import Store
from isobench.store.readonly import open_way, problem, uri
from synthetic_runs import Synthetic, write_run


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_way_to_open_when_the_index_cannot_be_made():
    assert open_way(read_only_fs=True, log_bytes=0) == "immutable"  # nothing can change it, nothing pending
    assert open_way(read_only_fs=True, log_bytes=4152) == "pending"  # immutable would skip those commits
    assert open_way(read_only_fs=False, log_bytes=0) == "index"  # a writer may come: no immutable


def test_the_refusals_name_the_store_and_the_way_out():
    pending = problem("/mnt/s.sqlite", "pending")
    assert pending.startswith("/mnt/s.sqlite: on a read-only filesystem") and "/mnt/s.sqlite-wal" in pending
    index = problem("/srv/r/s.sqlite", "index")
    assert "/srv/r/s.sqlite-shm" in index and "/srv/r is not writable" in index and "\n" not in index


def test_a_name_sqlite_would_read_as_a_query_is_quoted(tmp_path):
    path = tmp_path / "a?mode=rw#b%20.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    db = sqlite3.connect(uri(str(path), mode="ro"), uri=True)
    assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]


def test_a_reader_writes_nothing_to_an_old_store_it_may_not_write_and_reads_it_whole(tmp_path, monkeypatch):
    path = tmp_path / "old.sqlite"
    store = Store(str(path))
    write_run(store, Synthetic("a", seed=1))
    store.close()
    db = sqlite3.connect(path)  # as a store from before fleets and parser versions
    db.executescript("DROP TABLE fleet_hosts; ALTER TABLE samples DROP COLUMN parser_version;")
    db.close()
    before = digest(path)
    monkeypatch.setattr(db_module, "writable", lambda path: False)  # as on a read-only filesystem
    reader = Store(str(path), create=False, reader=True)
    assert reader.read_only
    assert [r.run_id for r in reader.list_runs()] == ["a"] and reader.load_run("a").values
    assert reader.db.execute("SELECT COUNT(*) FROM fleet_hosts").fetchone() == (0,)  # empty, not missing
    assert set(reader.parser_versions("a")[("compression", "default")]) == {None}  # the column is missing
    reader.close()
    assert digest(path) == before
    assert "fleet_hosts" not in {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}


def test_a_store_on_a_writable_filesystem_is_read_through_its_index(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    Store(str(path)).close()
    opened = []
    real = sqlite3.connect
    monkeypatch.setattr(readonly.sqlite3, "connect", lambda target, **kw: opened.append(target) or real(target, **kw))
    readonly.connect_read_only(str(path)).close()
    assert opened == [uri(str(path), mode="ro")]  # a writable place: mode=ro reads through the index


def test_a_reader_opens_a_store_it_may_write_as_every_command_does(tmp_path):
    path = tmp_path / "s.sqlite"
    Store(str(path)).close()
    reader = Store(str(path), create=False, reader=True)
    assert not reader.read_only
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]  # mode=ro would leave -wal and -shm
