"""Hostile study inputs are refused before anything starts, each with one
line naming the file and the field. `python tests/unit/test_hostile_inputs.py`
prints the table kept in docs/hostile-inputs.md."""

import pytest

from isobench.checks.preflight import preflight
from isobench.host.hostinfo import HostInfo
from isobench.study import StudyError, parse_study

HOST = HostInfo(cores=2, mem_bytes=24 * 2**30, disk_free_bytes=80 * 2**30)

BASE = """[study]
name = "h"
[environments.native]
[environments.box]
kind = "docker"
[workloads.w]
workload = "fio"
"""

# (what it tries, edits applied to BASE as (old, new), the field the error must name)
CASES = [
    (
        "shell metacharacters in a cpuset",
        [('kind = "docker"', 'kind = "docker"\ncpuset = "0;rm -rf /"')],
        "environments.box.cpuset",
    ),
    ("command substitution in the study name", [('name = "h"', 'name = "$(reboot)"')], "study.name"),
    ("path traversal in a workload name", [("[workloads.w]", "[workloads.'../../etc']")], "workloads.../../etc"),
    (
        "an extra field smuggling a command",
        [('kind = "docker"', 'kind = "docker"\ncommand = "rm -rf /"')],
        "environments.box.command",
    ),
    ("a kind isobench does not have", [('kind = "docker"', 'kind = "privileged"')], "environments.box.kind"),
    (
        "joining another container's network",
        [('kind = "docker"', 'kind = "docker"\nnetwork = "container:db"')],
        "environments.box.network",
    ),
    (
        "joining another container's PID namespace",
        [('kind = "docker"', 'kind = "docker"\npid = "container:db"')],
        "environments.box.pid",
    ),
    (
        "an IPC mode Docker has but isobench does not",
        [('kind = "docker"', 'kind = "docker"\nipc = "none"')],
        "environments.box.ipc",
    ),
    (
        "a seccomp profile from a file",
        [('kind = "docker"', 'kind = "docker"\nseccomp = "/etc/passwd"')],
        "environments.box.seccomp",
    ),
    (
        "an AppArmor profile by name",
        [('kind = "docker"', 'kind = "docker"\napparmor = "docker-default"')],
        "environments.box.apparmor",
    ),
    ("negative repetitions", [('name = "h"', 'name = "h"\nrepetitions = -1')], "study.repetitions"),
    ("absurd repetitions", [('name = "h"', 'name = "h"\nrepetitions = 1000000000')], "study.repetitions"),
    ("absurd warm-up", [('name = "h"', 'name = "h"\nwarmup = 100000')], "study.warmup"),
    ("a CPU quota beyond any host", [('kind = "docker"', 'kind = "docker"\ncpus = 1e9')], "environments.box.cpus"),
    ("a 1 MB memory limit", [('kind = "docker"', 'kind = "docker"\nmemory_mb = 1')], "environments.box.memory_mb"),
    ("shell metacharacters in a fio case", [('"fio"', '"fio"\ncases = ["randread; rm -rf /"]')], "workloads.w.cases"),
    ("a string where a size belongs", [('"fio"', '"fio"\nsize_mb = "1; rm -rf /"')], "workloads.w.size_mb"),
    ("a negative timeout", [('"fio"', '"fio"\ntimeout_s = -1')], "workloads.w.timeout_s"),
    ("negative threads", [('"fio"', '"compression"\nthreads = -5')], "workloads.w.threads"),
    ("an impossible compression level", [('"fio"', '"compression"\nlevel = 99')], "workloads.w.level"),
    ("a corpus bigger than the host's memory", [('"fio"', '"compression"\nsize_mb = 20000')], "workloads.w.size_mb"),
    ("a fio file bigger than the free disk", [('"fio"', '"fio"\nsize_mb = 60000')], "workloads.w.size_mb"),
    ("an HPL matrix bigger than memory", [('"fio"', '"hpcc"\nn = 100000')], "workloads.w.n"),
    ("an unknown workload", [('"fio"', '"rm"')], "workloads.w"),
    ("a baseline that is not an environment", [('name = "h"', 'name = "h"\nbaseline = "bare"')], "study.baseline"),
    # round two
    ("a study name ending in a newline", [('name = "h"', 'name = "h\\n"')], "study.name"),
    ("a startup timeout of 1e9 s", [('"fio"', '"startup"\ntimeout_s = 1e9')], "workloads.w.timeout_s"),
    ("a negative startup timeout", [('"fio"', '"startup"\ntimeout_s = -1')], "workloads.w.timeout_s"),
    ("a NaN startup timeout", [('"fio"', '"startup"\ntimeout_s = nan')], "workloads.w.timeout_s"),
    ("an infinite startup timeout", [('"fio"', '"startup"\ntimeout_s = inf')], "workloads.w.timeout_s"),
    (
        "a noisy neighbour holding 64 GiB",
        [("[environments.native]", "[noise]\nsteps = [0, 1]\nvm_bytes_mb = 65536\n[environments.native]")],
        "noise.vm_bytes_mb",
    ),
    (
        "a NaN weight in the web store's mix",
        [('"fio"', '"webstore"\nmix = { browse = nan, purchase = 1.0 }')],
        "workloads.w.mix",
    ),
    ("true for repetitions", [('name = "h"', 'name = "h"\nrepetitions = true')], "study.repetitions"),
    ("a string for repetitions", [('name = "h"', 'name = "h"\nrepetitions = "5"')], "study.repetitions"),
    (
        "a peak search whose lowest rate is above its highest",
        [('"fio"', '"webstore"\npeak = true\npeak_min_rate = 500\npeak_max_rate = 10')],
        "peak_min_rate",
    ),
    (
        "a memory limit of 10^15 MB",
        [('kind = "docker"', 'kind = "docker"\nmemory_mb = 1000000000000000')],
        "environments.box.memory_mb",
    ),
    (
        "a cpuset naming CPU 10^12",
        [('kind = "docker"', 'kind = "docker"\ncpuset = "0-1000000000000"')],
        "environments.box.cpuset",
    ),
    (
        "a preset of the wrong type",
        [("[environments.native]", "[environments.native]\npreset = [1]")],
        "environments.native.preset",
    ),
    (
        "a workload that is a number, not a table",
        [('[workloads.w]\nworkload = "fio"\n', "[workloads]\nw = 5\n")],
        "workloads.w",
    ),
    ("an HPL matrix of 10^15", [('"fio"', '"hpcc"\nn = 1000000000000000')], "workloads.w.n"),
    # primary metrics
    (
        "a primary metric the workload does not emit",
        [('"fio"', '"fio"\nprimary = ["rm -rf /"]')],
        "workloads.w.primary",
    ),
    (
        "an escape sequence as a primary metric",
        [('"fio"', '"fio"\nprimary = ["\\u001b]52;c;aGk=\\u0007"]')],
        "workloads.w.primary",
    ),
]


def refusal(edits: list[tuple[str, str]]) -> str:
    text = BASE
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    try:
        study = parse_study(text, "hostile.toml")
    except StudyError as exc:
        return str(exc)
    problems = preflight(study, HOST)
    return problems[0] if problems else "accepted"


@pytest.mark.parametrize("what,edits,field", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_refused_naming_the_field(what, edits, field):
    msg = refusal(edits)
    assert "\n" not in msg
    assert msg.startswith("hostile.toml: "), msg
    assert field in msg, msg


def test_the_base_study_itself_is_accepted():
    assert refusal([]) == "accepted"


if __name__ == "__main__":
    print("| hostile input | error |\n|---|---|")
    for what, edits, _ in CASES:
        print(f"| {what} | `{refusal(edits)}` |")


# --- hostile files, answered by the command itself in one line (exit 2) ------------------
import sqlite3  # noqa: E402

from tests import inprocess  # noqa: E402


@pytest.fixture
def isobench(monkeypatch, capfd):
    """The command in this process (tests/inprocess.py), ISOBENCH_HOME at HOME."""

    def run(*args: str, home: str):
        monkeypatch.setenv("ISOBENCH_HOME", home)
        monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
        return inprocess.isobench(capfd, *args)

    return run


def hostile_files(d) -> dict[str, tuple[list[str], str]]:
    """what it tries -> (isobench arguments, what the one line must say)."""
    (d / "garbage.sqlite").write_bytes(bytes(range(256)) * 16)
    (d / "latin1.toml").write_bytes(b'[study]\nname = "caf\xe9"\n')
    (d / "deep.toml").write_text('[study]\nname = "x"\nv = ' + "[" * 5000 + "]" * 5000 + "\n")
    (d / "empty.toml").write_text("")
    (d / "huge.toml").write_text(
        '[study]\nname = "huge"\n'
        + "".join(f'[environments.d{i}]\nkind = "docker"\n' for i in range(2000))
        + "[workloads.startup]\n"
    )
    db = sqlite3.connect(d / "other.sqlite")
    db.execute("CREATE TABLE invoices (id INTEGER)")
    db.commit()
    db.close()
    return {
        "a store file that is not SQLite": (
            ["runs", "--store", str(d / "garbage.sqlite")],
            "garbage.sqlite: not an isobench store",
        ),
        "an SQLite file of another application": (
            ["runs", "--store", str(d / "other.sqlite")],
            "other.sqlite: an SQLite file but not an isobench store",
        ),
        "a study file that is not UTF-8": (["validate", str(d / "latin1.toml")], "latin1.toml: not UTF-8"),
        "deeply nested arrays": (["validate", str(d / "deep.toml")], "deep.toml: nested too deeply"),
        "an empty study file": (
            ["validate", str(d / "empty.toml")],
            'empty.toml: study: a [study] table with at least name = "..." is required',
        ),
        # the baseline is checked first; the line stays short however many environments there are
        "2,000 Docker environments": (
            ["validate", str(d / "huge.toml")],
            "huge.toml: study.baseline: 'native' is not one of the environments "
            "(d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, ... 1988 more)",
        ),
    }


@pytest.mark.parametrize(
    "what",
    [
        "a store file that is not SQLite",
        "an SQLite file of another application",
        "a study file that is not UTF-8",
        "deeply nested arrays",
        "an empty study file",
        "2,000 Docker environments",
    ],
)
def test_hostile_file_is_one_line_never_a_traceback(what, tmp_path, isobench):
    args, expected = hostile_files(tmp_path)[what]
    proc = isobench(*args, home=str(tmp_path / "home"))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: ") and expected in proc.stderr, proc.stderr
    # the other application's file is left as it was
    if "another application" in what:
        tables = (
            sqlite3.connect(tmp_path / "other.sqlite")
            .execute("SELECT name FROM sqlite_master WHERE type='table'")
            .fetchall()
        )
        assert tables == [("invoices",)]


def test_user_text_in_messages_is_printed_literally(tmp_path, isobench):
    """Rich markup in a path ([bold], [red]) must not be eaten or styled."""
    weird = tmp_path / "[bold]x[red]"
    weird.mkdir()
    (weird / "s.toml").write_text("")
    proc = isobench("validate", str(weird / "s.toml"), home=str(tmp_path / "home"))
    assert f"{weird}/s.toml: study: a [study] table" in proc.stderr, proc.stderr
