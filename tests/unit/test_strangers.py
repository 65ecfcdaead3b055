"""Study files and archives from strangers (issue 47): each test crafts the
input the review tried, on the real filesystem, and runs the command that
read it: the answer is exit 2 with one line naming the entry, promptly."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from isobench.cli import entry
from isobench.store import shapes
from isobench.study import load_study, parse_study
from isobench.workloads import command_files as cf
from isobench.workloads.base import ParseError, WorkloadError
from isobench.workloads.command import Command

HEAD = '[study]\nname = "strange"\n[environments.native]\n[workloads.w]\ncommand = ["true"]\n'


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "s.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    shapes._said.clear()
    return tmp_path


def isobench(capfd, *args) -> tuple[int, str, str]:
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


def study_with(where: Path, files: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "s.toml").write_text(HEAD + f"files = [{files}]\n")
    return where / "s.toml"


# -- files stay inside the study ----------------------------------------------


@pytest.mark.parametrize(
    "given, says",
    [
        ('"/etc/shadow"', "is an absolute path"),
        ('"../../../etc/shadow"', "leaves the study file's directory"),
        ('"/proc/self/root/etc/shadow"', "is an absolute path"),
        ('"/proc/self/pagemap"', "is an absolute path"),
        ('"/proc/sys/vm/compact_memory"', "is an absolute path"),
        ('"fixtures"', "leads outside the study file's directory"),
        ('"inside", "fixtures/../../outside.txt"', "leaves the study file's directory"),
        ('"fifo"', "is not a regular file or a directory"),
        ('"tree"', "is a link or a special file"),
    ],
)
def test_validate_refuses_each_crafted_files_entry_in_one_line(sandbox, capfd, given, says):
    (sandbox / "elsewhere").mkdir()
    (sandbox / "elsewhere" / "id_rsa").write_text("PRIVATE KEY\n")
    (sandbox / "outside.txt").write_text("not the study's\n")
    study = study_with(sandbox / "study", given)
    (sandbox / "study" / "fixtures").symlink_to(sandbox / "elsewhere")  # a top-level link, followed before
    (sandbox / "study" / "inside").write_text("fine\n")
    os.mkfifo(sandbox / "study" / "fifo")  # hashing it blocked for ever before
    (sandbox / "study" / "tree").mkdir()
    os.symlink("/proc/self/pagemap", sandbox / "study" / "tree" / "pagemap")
    started = time.monotonic()
    code, out, err = isobench(capfd, "validate", study)
    assert time.monotonic() - started < 2
    index = given.count(",")  # the entry at fault is the last one given
    assert code == 2 and not out and err.count("\n") == 1, err
    assert f"workloads.w.files[{index}]: " in err and says in err and "Traceback" not in err, err


def test_files_resolve_against_the_study_files_directory_not_the_current_one(sandbox, capfd):
    study = study_with(sandbox / "studies", '"input.txt"')
    (sandbox / "studies" / "input.txt").write_text("the study's own\n")
    (sandbox / "elsewhere").mkdir()
    os.chdir(sandbox / "elsewhere")
    code, _, err = isobench(capfd, "validate", study)
    assert code == 0, err
    loaded = load_study(study)
    assert loaded.base_dir == str(sandbox / "studies")
    [entry_] = Command(loaded.workloads[0].params, None).entries()
    assert entry_.source == str(sandbox / "studies" / "input.txt") and entry_.size == 16
    # a study made in memory (isobench try): the current directory
    (sandbox / "elsewhere" / "input.txt").write_text("here\n")
    made = parse_study(HEAD + 'files = ["input.txt"]\n', "isobench try")
    assert Command(made.workloads[0].params, None).entries()[0].source == str(sandbox / "elsewhere" / "input.txt")


def test_kernel_files_are_refused_without_reading_them():
    # /proc/self as the study's directory: inside it, yet procfs (size 0,
    # endless or acting when read: pagemap, compact_memory)
    for name in ("pagemap", "mountinfo"):
        started = time.monotonic()
        with pytest.raises(WorkloadError, match=rf"files\[0\]: {name} is not a regular file or a directory"):
            cf.manifest((name,), "/proc/self")
        assert time.monotonic() - started < 1
    with pytest.raises(WorkloadError, match=r"files\[0\]: compact_memory is not a regular file"):
        cf.manifest(("compact_memory",), "/proc/sys/vm")
    with pytest.raises(WorkloadError, match=r"files\[0\]: kernel is not a regular file or a directory"):
        cf.manifest(("kernel",), "/sys")
    mounted = Path("/proc/self/mountinfo").read_text()
    assert os.stat("/proc").st_dev in cf.pseudo_devices(mounted)
    assert os.stat("/").st_dev not in cf.pseudo_devices(mounted)


def test_the_size_cap_holds_what_is_read_not_what_is_reported(tmp_path):
    # procfs reports 0 bytes for a file that holds more: the bound counts the bytes read
    assert os.stat("/proc/self/mountinfo").st_size == 0
    assert cf._hash_bounded("/proc/self/mountinfo", 10) is None
    size, digest = cf._hash_bounded("/proc/self/mountinfo", 1 << 20) or (0, "")
    assert size > 10 and len(digest) == 64
    # a FIFO swapped in after the check: opened without blocking, then refused
    os.mkfifo(tmp_path / "fifo")
    started = time.monotonic()
    with pytest.raises(OSError, match="not a regular file"):
        cf._hash_bounded(str(tmp_path / "fifo"), 100)
    assert time.monotonic() - started < 1


def test_the_total_cap_names_the_entry_that_crosses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(cf, "MAX_FILES_BYTES", 1000)
    (tmp_path / "a").write_bytes(b"a" * 600)
    (tmp_path / "b").write_bytes(b"b" * 600)
    assert [e.size for e in cf.manifest(("a",), str(tmp_path))] == [600]
    with pytest.raises(WorkloadError, match=r"files\[1\]: b brings the copied files over"):
        cf.manifest(("a", "b"), str(tmp_path))


# -- bounded parsing ----------------------------------------------------------

DATA = Path(__file__).resolve().parent.parent / "data" / "command"
CATASTROPHIC = "^(?P<x>(a+)+)$"  # backtracking: 2^40 paths on 40 a's and a '!'


@pytest.mark.parametrize(
    "regex, says",
    [
        (r"(?P<x>\d+) \1", "backreferences"),
        (r"(?P<x>\d+)(?= ms)", "lookarounds"),
        (r"(?<!-)(?P<x>\d+)", "lookarounds"),
        (r"(?P<x>\d++)", "linear time"),
    ],
)
def test_validate_refuses_what_re2_cannot_run_naming_the_field(sandbox, capfd, regex, says):
    study = sandbox / "s.toml"
    study.write_text(HEAD + f"[workloads.w.metrics.x]\nregex = '{regex}'\nhigher_is_better = true\n")
    code, out, err = isobench(capfd, "validate", study)
    assert code == 2 and not out and err.count("\n") == 1, err
    assert "workloads.w.metrics.x: regex cannot run in linear time under RE2" in err and says in err, err


def test_reparse_of_a_catastrophic_rule_returns_promptly(sandbox, capfd):
    from isobench.store.db import Sample, Store

    text = HEAD + f"[workloads.w.metrics.x]\nregex = '{CATASTROPHIC}'\nhigher_is_better = true\n"
    study = parse_study(text, "s.toml")
    stderr = (DATA / "sysbench-cpu.stderr").read_text()
    raw = json.dumps({"runs": [{"stdout": "a" * 40 + "!", "stderr": stderr}]})
    store = Store(str(sandbox / "s.sqlite"))
    store.create_run("r1", study, {"cores": 2, "mem_bytes": 8 << 30})
    w = Command(study.workloads[0].params, None)
    store.define_metrics("r1", "w", "default", w.metrics("default"))
    values = {"wall_s": 1.0, "user_s": 1.0, "sys_s": 0.0, "peak_rss_mib": 1.0, "x": 1.0}
    t = "2026-05-01T10:00:00+0000"
    store.add_sample(Sample("r1", "native", "w", "default", 1, False, "ok", t, 1.0, values, {}, raw))
    store.close()
    started = time.monotonic()
    with pytest.raises(ParseError, match="matches nothing"):
        w.reparse("default", raw, {})
    assert time.monotonic() - started < 1, "the rule ran in more than linear time"
    code, out, err = isobench(capfd, "reparse", "r1", "--dry-run")  # hung for ever before
    assert code == 0 and not err, err
    assert "1 unreadable" in out and "metric x: the regex '^(?P<x>(a+)+)$' matches nothing in the output" in out, out


# -- one sink for every terminal line -----------------------------------------

OSC52 = "\x1b]52;c;SGVsbG8=\x1b\\"  # a clipboard write


def _progress(bar: bool):
    import io

    from rich.console import Console

    from isobench.run.progress import RichProgress

    out = io.StringIO()
    return RichProgress(Console(file=out, force_terminal=True, width=400), bar=bar), out


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
@pytest.mark.parametrize("bar", [False, True])
def test_progress_notes_escape_a_commands_stderr_and_name(tmp_path, bar):
    from tests.unit.test_workload_command import Local, workload

    from isobench.checks.health import Watch
    from isobench.run.prepare import prepare

    progress, out = _progress(bar)
    env = Local("local", root=str(tmp_path / "env"))
    with progress:
        progress.start(2)
        # a command whose stderr writes the clipboard: its failure is noted
        loud = workload(command=["sh", "-c", f"printf '{OSC52}' >&2; exit 3"])
        loud.prepare(env)
        with pytest.raises(WorkloadError) as exc:
            loud.run("default", env)
        Watch("r1", progress.note).failed(env, "w/default", str(exc.value))
        # a command whose name holds ESC: its preparation fails, and is noted
        named = workload(command=["\x1b[2Jtool"])
        assert prepare({"w": named}, [env], progress)
        progress.step(f"round 1 w/default in \x1b[2J{OSC52}")
    text = out.getvalue()
    assert "\\x1b]52;c;SGVsbG8=" in text and "\\x1b[2Jtool" in text, text
    assert "\x1b]52" not in text and "\x1b[2J" not in text, repr(text)


# -- a stranger's archive stays data ------------------------------------------

STRANGER = HEAD.replace('command = ["true"]', 'command = ["sh", "-c", "touch pwned"]') + 'files = ["missing-input"]\n'


def test_resume_of_an_imported_run_is_refused_unless_trusted(sandbox, capfd):
    from tests.synthetic_runs import simple_run

    from isobench.store.db import Store
    from isobench.store.transfer import export_run

    theirs = Store(str(sandbox / "theirs.sqlite"))
    study = parse_study(STRANGER, "studies/strange.toml")
    simple_run(theirs, "r1", {"native": [1.0, 1.1]}, workload="w", envs=("native",), study=study)
    theirs.db.execute("UPDATE runs SET status = 'incomplete'")
    theirs.db.commit()
    doc = export_run(theirs, "r1")
    theirs.close()
    (sandbox / "r1.run.json").write_text(json.dumps(doc))
    code, _, err = isobench(capfd, "import", sandbox / "r1.run.json")
    assert code == 0, err
    code, out, err = isobench(capfd, "run", "--resume", "r1", "--no-progress")
    assert code == 2 and err.count("\n") == 1, err
    assert "--resume r1: this run came in through `isobench import`" in err
    assert "re-run its study file after reading it" in err and "--trust-imported" in err
    assert not (sandbox / "pwned").exists()
    # trusted: past the gate, to the study's own checks (its input is missing here, so nothing runs)
    code, _, err = isobench(capfd, "run", "--resume", "r1", "--no-progress", "--trust-imported")
    assert code == 2 and "workloads.w.files[0]: missing-input does not exist" in err, err
    # an export of the imported run stays imported when it comes back
    mine = Store(str(sandbox / "s.sqlite"))
    again = export_run(mine, "r1")
    mine.close()
    (sandbox / "again.run.json").write_text(json.dumps(again))
    code, _, err = isobench(capfd, "import", sandbox / "again.run.json", "--rename", "r2")
    assert code == 0, err
    code, _, err = isobench(capfd, "run", "--resume", "r2", "--no-progress")
    assert code == 2 and "came in through `isobench import`" in err, err


def test_a_run_of_this_host_resumes_without_the_flag(sandbox, capfd):
    from tests.synthetic_runs import simple_run

    from isobench.store.db import Store

    mine = Store(str(sandbox / "s.sqlite"))
    simple_run(mine, "r1", {"native": [1.0, 1.1]}, workload="w", envs=("native",), study=parse_study(STRANGER, "x"))
    mine.db.execute("UPDATE runs SET status = 'incomplete'")
    mine.db.commit()
    mine.close()
    code, _, err = isobench(capfd, "run", "--resume", "r1", "--no-progress")
    assert code == 2 and "workloads.w.files[0]: missing-input does not exist" in err, err


# -- outputs never replace the store --------------------------------------------


def _a_store(sandbox) -> bytes:
    from tests.synthetic_runs import simple_run

    from isobench.store.db import Store

    store = Store(str(sandbox / "s.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 10.2, 9.9], "docker-nat": [9.8, 9.9, 9.7]})
    store.close()
    return (sandbox / "s.sqlite").read_bytes()


@pytest.mark.parametrize(
    "args",
    [
        ("try", "--save", "S", "--store", "S", "--force", "--", "true"),  # replaced the store with TOML before
        ("try", "--save", "./link", "--force", "--", "true"),  # a hard link to the store
        ("report", "r1", "--format", "md", "-o", "S", "--force"),
        ("report", "r1", "--format", "md", "-o", "link", "--force"),
        ("archive", "r1", "-o", "S-wal", "--force"),
        ("export", "r1", "--format", "json", "-o", "S", "--force"),
    ],
)
def test_no_output_is_the_store_not_even_with_force(sandbox, capfd, args):
    before = _a_store(sandbox)
    os.link(sandbox / "s.sqlite", sandbox / "link")
    argv = [
        str(sandbox / "s.sqlite") if a == "S" else str(sandbox / "s.sqlite-wal") if a == "S-wal" else a for a in args
    ]
    code, out, err = isobench(capfd, *argv)
    assert code == 2 and err.count("\n") == 1, err
    assert "is the store this command uses (not even with --force); give another path" in err, err
    assert (sandbox / "s.sqlite").read_bytes() == before


# -- a command cannot outlive its sample ------------------------------------------


def _processes_with(arg: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv:
            found.append(int(pid))
    return found


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
def test_a_timed_out_native_command_leaves_no_process(tmp_path):
    from tests.unit.test_workload_command import workload

    from isobench.envs.base import Paths
    from isobench.envs.native import NativeEnvironment
    from isobench.run.measure import take

    unique = f"10000.{os.getpid()}{time.monotonic_ns() % 10**6}"  # a sleep of 10000 s nobody else runs
    # the command under env and GNU time, and one it starts in the background
    w = workload(command=["sh", "-c", f"sleep {unique} & sleep {unique}"], timeout_s=5)
    env = NativeEnvironment(name="native", run_id="strangers")  # its exec: the native samples' own
    env._paths = Paths(data=str(tmp_path / "data"), tmp=str(tmp_path / "tmp"))
    w.prepare(env)
    taken = take(w, "default", env)
    try:
        assert taken.status == "timeout" and "timed out after" in taken.error, taken.error
        deadline = time.monotonic() + 2
        while _processes_with(unique) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_with(unique) == [], "the command outlived its sample"
    finally:
        for pid in _processes_with(unique):
            os.kill(pid, 9)


def test_a_timeout_inside_a_container_is_a_timeout():
    from isobench.core.proc import bounded, bounded_timed_out

    # the sample's deadline left 4.98 s: coreutils' timeout was given 4 and
    # ended the command at 4.3 s with its exit 124 ("failed" before)
    assert bounded(["sleep", "10000"], 4.98)[3] == "4"
    assert bounded_timed_out(124, 4.3, 4.98) and bounded_timed_out(137, 9.3, 4.98)
    assert not bounded_timed_out(124, 1.0, 4.98)  # the command's own exit 124, well before the bound
    assert not bounded_timed_out(137, 1.0, 4.98)  # a SIGKILL before the bound: not the timeout's


def test_an_oom_kill_is_told_from_the_kernels_counters():
    from isobench.envs import oom

    # this host's own cgroup v1 files (and v2's memory.events shape)
    text = (
        Path("/sys/fs/cgroup/memory/memory.oom_control").read_text()
        if os.path.exists("/sys/fs/cgroup/memory/memory.oom_control")
        else "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n"
    )
    assert oom.oom_kills(text) is not None
    assert oom.oom_kills("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n") == 2
    assert oom.limit_bytes("67108864\n") == 64 << 20
    assert oom.limit_bytes("9223372036854771712\n") is None and oom.limit_bytes("max\n") is None
    assert oom.killed_line(0, 1, 64 << 20) == "killed: out of memory (limit 64 MB)"
    assert oom.killed_line(1, 1, 64 << 20) == "" and oom.killed_line(None, 1, None) == ""
    assert oom.read("no-such-container") == (None, None)


def test_a_killed_command_says_so_in_its_failure():
    from isobench.core.proc import ExecResult
    from isobench.workloads.command import failure

    r = ExecResult(
        ["x"], 137, "", "Command terminated by signal 9\n", 3.0, killed="killed: out of memory (limit 64 MB)"
    )
    assert failure("command", ("python3", "-c", "x"), r).startswith("command killed: out of memory (limit 64 MB): ")


# -- one lock per host --------------------------------------------------------


def test_the_run_lock_is_the_hosts_whatever_the_home(tmp_path):
    import subprocess
    import sys

    show = (
        "from isobench.core import lock, owner, workspace; "
        "print(lock.LOCK_PATH, workspace.STATE_ROOT, owner.OWNERS_DIR)"
    )
    seen = []
    for home in ("a", "b"):
        env = {**os.environ, "ISOBENCH_HOME": str(tmp_path / home), "PYTHONPATH": os.pathsep.join(sys.path)}
        out = subprocess.run([sys.executable, "-c", show], env=env, capture_output=True, text=True, check=True)
        seen.append(out.stdout.split())
    assert seen[0][1] != seen[1][1]  # two homes
    assert seen[0][0] == seen[1][0] == "/run/isobench/run.lock"  # one lock
    assert seen[0][2] == seen[1][2] == "/run/isobench/owners"  # one place saying which runs are live


# -- a damaged store says so ----------------------------------------------------


def _damaged_store(sandbox) -> Path:
    """Three runs, then 12 bytes of the samples index's page overwritten: a real corrupt page."""
    import sqlite3

    from tests.synthetic_runs import simple_run

    from isobench.store.db import Store

    path = sandbox / "s.sqlite"
    store = Store(str(path))
    for i in range(3):
        simple_run(
            store, f"r{i}", {"native": [10.0 + j for j in range(200)], "docker-nat": [9.0 + j for j in range(200)]}
        )
    store.close()
    db = sqlite3.connect(path)
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'samples_run'").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(path, "r+b") as fh:
        fh.seek((root - 1) * size + 8)
        fh.write(b"\xff" * 12)
    return path


def test_a_corrupt_page_is_called_damaged_by_every_reader(sandbox, capfd):
    path = _damaged_store(sandbox)
    (sandbox / "x.run.json").write_text("{}")
    for args in (("runs",), ("report", "r1"), ("archive", "r1", "-o", "x.json"), ("export", "r1", "--format", "json")):
        code, _, err = isobench(capfd, *args)
        assert code == 2 and err.count("\n") == 1 and "unexpected" not in err, (args, err)
        assert f"{path.name}: the store is damaged (database disk image is malformed)" in err, (args, err)
        assert "`isobench store check --store" in err and "`isobench store recover -o NEW.sqlite --store" in err
    # a truncated store is damaged too, not "not an isobench store"
    (sandbox / "t.sqlite").write_bytes(path.read_bytes()[:20000])
    code, _, err = isobench(capfd, "runs", "--store", sandbox / "t.sqlite")
    assert code == 2 and "t.sqlite: the store is damaged" in err, err


def test_store_check_names_the_damage_and_recover_keeps_every_undamaged_run(sandbox, capfd):
    path = _damaged_store(sandbox)
    code, out, err = isobench(capfd, "store", "check")
    assert code == 2 and "malformed" in out and "damaged" in err and "store recover -o NEW.sqlite" in err, (out, err)
    code, out, err = isobench(capfd, "store", "recover", "-o", sandbox / "new.sqlite")
    assert code == 0 and "3 run(s) copied into" in out and ", 0 lost" in out, (out, err)
    code, out, err = isobench(capfd, "store", "check", "--store", sandbox / "new.sqlite")
    assert code == 0 and "sound" in out, (out, err)
    code, out, _ = isobench(capfd, "runs", "--store", sandbox / "new.sqlite")
    assert code == 0 and all(f"r{i}" in out for i in range(3)), out
    assert path.exists()  # the damaged store is only read


def test_a_run_on_a_damaged_store_is_refused_before_anything_starts(sandbox):
    from isobench.store.db import Store, StoreError

    path = _damaged_store(sandbox)
    with pytest.raises(StoreError, match=r"s.sqlite: the store is damaged .*isobench store check"):
        Store(str(path)).check_writable()  # execute() calls it before the lock and the first environment
    sound = Store(str(sandbox / "sound.sqlite"))
    sound.check_writable()
    from isobench.store.damage import quick_check

    assert quick_check(sound.db) == "" and quick_check(sound.db, budget_s=0) == ""  # out of time: taken as it is


# -- resume completes -----------------------------------------------------------


def test_resume_of_a_complete_run_says_so_and_starts_nothing(sandbox, capfd):
    from tests.synthetic_runs import simple_run

    from isobench.store.db import Store

    mine = Store(str(sandbox / "s.sqlite"))
    # its input is missing here: had the resume gone on, its preflight would have said so
    simple_run(mine, "r1", {"native": [1.0, 1.1]}, workload="w", envs=("native",), study=parse_study(STRANGER, "x"))
    mine.close()
    code, out, err = isobench(capfd, "run", "--resume", "r1", "--no-progress")
    assert code == 0 and "run r1 is complete: every cell has its samples, nothing to resume" in err, (out, err)
    assert "files" not in err


# -- a full disk at start -------------------------------------------------------


def test_a_full_disk_is_one_line_and_no_second_traceback(sandbox, capfd, monkeypatch):
    from isobench.cli import entry as entry_module
    from isobench.core import workspace

    def full(*args, **kwargs):  # the kernel's own ENOSPC, as a full ISOBENCH_HOME gives it
        with open("/dev/full", "w") as fh:
            fh.write("x")
            fh.flush()

    monkeypatch.setattr("isobench.store.db.Store.__init__", full)
    code, _, err = isobench(capfd, "runs")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "the disk is full (No space left on device); free space on it" in err, err
    # nowhere to write the traceback of an unexpected error: said, not a second traceback
    blocked = sandbox / "blocked"
    blocked.write_text("a file, not a directory")
    monkeypatch.setattr("isobench.store.db.Store.__init__", lambda *a, **k: (_ for _ in ()).throw(KeyError("k")))
    with monkeypatch.context() as m:  # undone before the fixtures' own teardown needs tempfile
        m.setattr(workspace, "STATE_ROOT", str(blocked))
        m.setattr(entry_module, "_log_dir", lambda: str(blocked))
        m.setattr("tempfile.tempdir", str(blocked))
        assert entry_module.write_traceback(ValueError("x")) is None
        code, _, err = isobench(capfd, "runs")
    assert code == 3 and err.count("\n") == 1 and "its traceback could not be written either" in err, err


def test_a_store_removed_or_replaced_mid_run_stops_the_next_commit(tmp_path):
    from isobench.store.db import Sample, Store, StoreWriteError

    def sample(i: int) -> Sample:
        return Sample("r1", "native", "w", "default", i, False, "ok", "2026-05-01T10:00:00+0000", 1.0, {"x": 1.0})

    study = parse_study(HEAD, "s.toml")
    for how in ("removed", "replaced"):
        path = tmp_path / f"{how}.sqlite"
        store = Store(str(path))
        store.create_run("r1", study, {"cores": 2})
        store.add_sample(sample(0))
        for suffix in ("", "-wal", "-shm"):  # as `rm` of the store and its -wal/-shm did
            if os.path.exists(f"{path}{suffix}"):
                os.unlink(f"{path}{suffix}")
        if how == "replaced":
            Store(str(path)).close()  # another store now under the name
        with pytest.raises(StoreWriteError, match=f"the store file was {how} while the run wrote to it"):
            store.add_sample(sample(1))
        store.close()
