"""The command workload: its study table (every refusal one line naming the
field), its metric rules on outputs captured from real tools under
`/usr/bin/time -v` (tests/data/command/), the files it copies and their
digests, and one sample end to end on this host through a local stand-in
for an environment."""

import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from isobench.core.proc import ExecResult, run_argv
from isobench.envs.base import Environment, Paths
from isobench.study import StudyError, parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads import command_files as cf
from isobench.workloads.base import NO_HOST, ParseError, WorkloadError
from isobench.workloads.command import Command, CommandParams, failure
from isobench.workloads.command_rules import clock_seconds, json_path, parse_time_block, split_time

DATA = Path(__file__).resolve().parents[1] / "data" / "command"
HEAD = '[study]\nname = "own"\n\n[environments.native]\n\n'


def captured(name: str) -> tuple[str, str]:
    return (DATA / f"{name}.stdout").read_text(), (DATA / f"{name}.stderr").read_text()


def entry(table: str):
    (e,) = parse_study(HEAD + table, "own.toml").workloads
    return e


def workload(base: Path | None = None, **params) -> Command:
    context = {"base_dir": str(base)} if base is not None else None
    return Command(CommandParams.model_validate(params, context=context), NO_HOST)


def refusal(table: str) -> str:
    with pytest.raises(StudyError) as exc:
        parse_study(HEAD + table, "own.toml")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("own.toml: ")
    return msg


# -- the study table ------------------------------------------------------------


def test_a_table_with_command_is_the_users_workload_under_the_users_name():
    e = entry(
        '[workloads.mybuild]\ncommand = ["make", "-j1"]\nsetup = ["make", "clean"]\nrepeat = 3\n'
        'env = { CFLAGS = "-O2" }\ntimeout_s = 60\n'
    )
    assert (e.key, e.workload) == ("mybuild", "command")
    assert e.params.command == ("make", "-j1") and e.params.setup == ("make", "clean")
    assert e.params.repeat == 3 and e.params.env == {"CFLAGS": "-O2"} and e.params.timeout_s == 60
    # even under a built-in's name: command = [...] says it is the user's program
    assert entry('[workloads.fio]\ncommand = ["fio", "--version"]\n').workload == "command"
    assert WORKLOADS["command"].claimed_by_field == "command"


def test_a_table_that_is_neither_names_the_way_in():
    msg = refusal('[workloads.mybuild]\nargv = ["make"]\n')
    assert "workloads.mybuild: unknown workload 'mybuild'" in msg and "command = [...]" in msg


@pytest.mark.parametrize(
    "table, field, says",
    [
        ('command = "make -j1"', "command", 'not a string (for a shell line write ["sh", "-c", "make -j1"])'),
        ("command = []", "command", "must name a program"),
        ('command = ["sleep", 1]', "command", "every argument must be a string"),
        ('command = [""]', "command", "the program's name is empty"),
        ('command = ["true"]\nsetup = "make clean"', "setup", "not a string"),
        ('command = ["true"]\nenv = { "1X" = "a" }', "env", "'1X' is not a variable name"),
        ('command = ["true"]\nrepeat = 0', "repeat", "greater than or equal to 1"),
        ('command = ["true"]\nworkdir = "../up"', "workdir", "no '..'"),
        ('command = ["true"]\nfiles = ["a/src", "b/src"]', "files", "two entries are named 'src'"),
        ('command = ["true"]\nshell = true', "shell", "unknown field; allowed: cleanup, command, duet, env, files"),
        ('command = ["true"]\npackages = ["P7zip"]', "packages", "'P7zip' is not a Debian package name"),
        ('command = ["true"]\npackages = ["time", "time"]', "packages", "names a package twice"),
        (  # Debian has no such package (asked of this host's apt: skipped where there is none)
            'command = ["true"]\npackages = ["isobench-no-such-package"]',
            "packages",
            "'isobench-no-such-package' is not a Debian package (apt-cache on this host knows no such name)",
        ),
        ('command = ["true"]\nsame_program = "no"', "same_program", "valid boolean"),
    ],
)
def test_bad_tables_are_one_line_naming_the_field(table, field, says):
    if "no-such-package" in table and not shutil.which("apt-cache"):
        pytest.skip("no apt-cache on this host")
    msg = refusal(f"[workloads.mine]\n{table}\n")
    assert f"workloads.mine.{field}: " in msg and says in msg, msg


@pytest.mark.parametrize(
    "rule, field, says",
    [
        (
            'regex = "events: ([0-9.]+)"\nhigher_is_better = true',
            "metrics",
            "eps.regex has no named group; mark the number with (?P<eps>...)",
        ),
        ('regex = "(?P<a>1)(?P<b>2)"\nhigher_is_better = true', "metrics", "name the value's group after the metric"),
        ('regex = "(?P<eps>[0-9"\nhigher_is_better = true', "metrics.eps", "regex does not compile"),
        ('json = "$.a..b"\nhigher_is_better = true', "metrics.eps", "is not a JSON path"),
        ("higher_is_better = true", "metrics.eps", "give one of regex"),
        ('regex = "(?P<eps>1)"\njson = "$.a"\nhigher_is_better = true', "metrics.eps", "give one of regex"),
        ('regex = "(?P<eps>1)"', "metrics.eps.higher_is_better", "required field is missing"),
        (
            'regex = "(?P<eps>1)"\nhigher_is_better = true\nstream = "stdin"',
            "metrics.eps.stream",
            "'stdout' or 'stderr'",
        ),
    ],
)
def test_bad_metric_rules_are_one_line_naming_the_field(rule, field, says):
    msg = refusal(f'[workloads.mine]\ncommand = ["true"]\n\n[workloads.mine.metrics.eps]\n{rule}\n')
    assert f"workloads.mine.{field}: " in msg and says in msg, msg


def test_a_metric_named_as_a_builtin_or_badly_is_refused():
    msg = refusal(
        '[workloads.mine]\ncommand = ["true"]\n[workloads.mine.metrics.wall_s]\n'
        'regex = "(?P<wall_s>1)"\nhigher_is_better = false\n'
    )
    assert "workloads.mine.metrics: 'wall_s' is a built-in metric" in msg
    msg = refusal(
        '[workloads.mine]\ncommand = ["true"]\n[workloads.mine.metrics.Ops-s]\n'
        'regex = "(?P<x>1)"\nhigher_is_better = true\n'
    )
    assert "workloads.mine.metrics: 'Ops-s': a metric name is lower-case" in msg


def test_primary_list_checked_against_the_users_metrics():
    msg = refusal('[workloads.mine]\ncommand = ["true"]\nprimary = ["eps"]\n')
    assert "workloads.mine.primary: 'eps' is not a metric of command" in msg and "wall_s, user_s" in msg


def test_wall_time_is_the_primary_unless_an_output_metric_is():
    w = workload(command=["true"])
    assert [m.name for m in w.defined_metrics("default") if m.primary] == ["wall_s"]
    assert [(m.name, m.unit, m.higher_is_better) for m in w.metrics("default")] == [
        ("wall_s", "s", False),
        ("user_s", "s", False),
        ("sys_s", "s", False),
        ("peak_rss_mib", "MiB", False),
    ]
    w = workload(
        command=["true"],
        metrics={"eps": {"regex": "(?P<eps>1)", "higher_is_better": True, "primary": True, "unit": "ev/s"}},
    )
    assert [m.name for m in w.defined_metrics("default") if m.primary] == ["eps"]
    assert w.units("default", None) == ["run", 1.0]
    assert workload(command=["true"], repeat=4).units("default", None) == ["run", 4.0]


# -- GNU time and the metric rules on real outputs --------------------------------


def test_gnu_time_verbose_block_from_a_real_run():
    out, err = captured("sysbench-cpu")
    own, block = split_time(err)
    assert own == "" and block.startswith("\tCommand being timed:")
    assert parse_time_block(block) == {
        "wall_s": 1.03,
        "user_s": 0.38,
        "sys_s": 0.01,
        "peak_rss_mib": pytest.approx(9476 / 1024),
    }
    assert clock_seconds("1:02:03.5") == 3723.5 and clock_seconds("0:01.02") == 1.02
    with pytest.raises(ParseError, match="no '/usr/bin/time -v' block"):
        split_time(out)


def test_regex_on_sysbench_stdout():
    w = workload(
        command=["sysbench", "cpu", "run"],
        metrics={"eps": {"regex": r"events per second:\s+(?P<eps>[0-9.]+)", "higher_is_better": True}},
    )
    out, err = captured("sysbench-cpu")
    m = w.parse("default", ExecResult([], 0, out, err, 1.0))
    assert m.values["eps"] == 8759.36 and m.values["wall_s"] == 1.03


def test_regex_on_openssl_speed_stdout_and_stderr():
    w = workload(
        command=["openssl", "speed"],
        metrics={
            "kbs_16k": {
                "regex": r"^AES-128-GCM(?:\s+\S+){5}\s+(?P<kbs>[0-9.]+)k$",
                "higher_is_better": True,
                "unit": "kB/s",
            },
            "blocks": {
                "regex": r"on 16384 size blocks: (?P<blocks>[0-9]+) AES",
                "stream": "stderr",
                "higher_is_better": True,
            },
        },
    )
    out, err = captured("openssl-speed")
    m = w.parse("default", ExecResult([], 0, out, err, 1.0))
    assert m.values["kbs_16k"] == 4705216.70
    assert m.values["blocks"] == 157951


def test_the_shipped_openssl_rule_reads_ctr_at_one_block_size():
    """studies/own-programs.toml's own rule, on what its command printed here
    (openssl 3.0.22 in the isobench image, 1 s instead of 2): CTR, not GCM,
    whose GHASH moved +-11% a sample on this host (command.md#openssl-noise),
    with libcrypto's package compared."""
    study = parse_study((DATA.parents[2] / "studies" / "own-programs.toml").read_text(), "own-programs.toml")
    entry = next(e for e in study.workloads if e.key == "openssl-ctr")
    assert "aes-128-ctr" in entry.params.command and set(entry.params.packages) == {"openssl", "libssl3"}
    w = WORKLOADS[entry.workload](entry.params, NO_HOST)
    out, err = captured("openssl-speed-ctr-16k")
    assert w.parse("default", ExecResult([], 0, out, err, 1.0)).values["ctr_16k"] == 8251588.61


def test_the_shipped_7z_rule_reads_the_total_rating():
    """studies/own-programs.toml's 7-Zip rule on what `7z b 1 -mmt1 -md18`
    printed here (7-Zip 26.02, Debian's p7zip-full): the Tot line's rating."""
    study = parse_study((DATA.parents[2] / "studies" / "own-programs.toml").read_text(), "own-programs.toml")
    entry = next(e for e in study.workloads if e.key == "sevenzip")
    assert entry.params.packages == ("p7zip-full",)  # not isobench's: the study adds it
    w = WORKLOADS[entry.workload](entry.params, NO_HOST)
    out, err = captured("7z-b")
    m = w.parse("default", ExecResult([], 0, out, err, 1.0))
    assert m.values["mips"] == 3967 and m.values["wall_s"] > 1


def test_json_path_on_fio_stdout():
    out, err = captured("fio")
    iops = json.loads(out)["jobs"][0]["read"]["iops"]
    w = workload(
        command=["fio"],
        metrics={
            "iops": {"json": "$.jobs[0].read.iops", "higher_is_better": True},
            "p99": {"json": 'jobs[0].read.clat_ns.percentile["99.000000"]', "higher_is_better": False, "unit": "ns"},
        },
    )
    m = w.parse("default", ExecResult([], 0, out, err, 1.0))
    assert m.values["iops"] == iops
    assert m.values["p99"] == json.loads(out)["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    assert json_path("$.a[0].b") == ("a", 0, "b") == json_path("a[0].b") == json_path('a[0]["b"]')


def test_an_output_the_rules_cannot_read_fails_the_sample_naming_the_rule():
    out, err = captured("fio")
    w = workload(command=["fio"], metrics={"iops": {"json": "$.jobs[1].read.iops", "higher_is_better": True}})
    with pytest.raises(ParseError, match=r"metric iops: the output's JSON has no \.jobs\[1\] \(json = '\$\.jobs"):
        w.parse("default", ExecResult([], 0, out, err, 1.0))
    with pytest.raises(ParseError, match="the output holds no JSON document"):
        w.parse("default", ExecResult([], 0, *captured("sysbench-cpu"), 1.0))
    w = workload(command=["x"], metrics={"mips": {"regex": r"Tot:\s+(?P<mips>\d+)", "higher_is_better": True}})
    with pytest.raises(ParseError, match=r"metric mips: the regex 'Tot:\\\\s\+\(\?P<mips>\\\\d\+\)' matches nothing"):
        w.parse("default", ExecResult([], 0, *captured("sysbench-cpu"), 1.0))


def test_a_failed_command_says_how_it_ended_with_its_last_stderr_lines():
    out, err = captured("fail")
    line = failure("command", ("sh", "-c", "exit 3"), ExecResult([], 3, out, err, 0.1))
    assert line == "command exit 3: sh -c 'exit 3': building | cc: error: missing.c: No such file"
    out, err = captured("killed")
    assert failure("command", ("sh",), ExecResult([], 137, out, err, 0.1)) == "command exit 137: sh"
    assert (
        failure("setup", ("make",), ExecResult([], -9, "", "", 30.4, timed_out=True))
        == "setup timed out after 30 s: make"
    )


def test_repeat_sums_the_timed_part_and_averages_output_metrics_and_reparses():
    w = workload(
        command=["sysbench"],
        repeat=2,
        metrics={"eps": {"regex": r"events per second:\s+(?P<eps>[0-9.]+)", "higher_is_better": True}},
    )
    out, err = captured("sysbench-cpu")
    out2 = out.replace("8759.36", "9000.00")
    err2 = err.replace("0:01.03", "0:02.00").replace("(kbytes): 9476", "(kbytes): 20480")
    m = w.parse_runs([(out, err), (out2, err2)])
    assert m.values["wall_s"] == pytest.approx(3.03) and m.values["peak_rss_mib"] == 20.0
    assert m.values["eps"] == pytest.approx((8759.36 + 9000) / 2)
    assert w.reparse("default", m.raw, m.extra).values == m.values
    with pytest.raises(ParseError, match="not this workload's record"):
        w.reparse("default", out, {})
    assert w.validity("default", m) == {}
    assert "raise repeat" in w.validity("default", w.parse_runs([(out, err.replace("0:01.03", "0:00.10"))]))["wall_s"]


def test_units_count_the_work_of_a_sample_for_attribution():
    # sysbench's summary: "total number of events: 10000" in each run
    rule = {"regex": r"total number of events:\s+(?P<events>[0-9]+)", "higher_is_better": True}
    out, err = captured("sysbench-cpu")
    events = float(next(ln for ln in out.splitlines() if "total number of events" in ln).split()[-1])
    w = workload(command=["sysbench"], repeat=2, metrics={"events": rule}, units={"name": "event", "metric": "events"})
    assert w.units("default", w.parse_runs([(out, err), (out, err)])) == ["event", 2 * events]
    fixed = workload(command=["sysbench"], repeat=3, units={"name": "request", "count": 500})
    assert fixed.units("default", fixed.parse_runs([(out, err)] * 3)) == ["request", 1500.0]


@pytest.mark.parametrize(
    "units, field, says",
    [
        ('{ name = "event" }', "units", "give one of count = N (per run) or metric = 'NAME'"),
        ('{ name = "event", count = 1, metric = "eps" }', "units", "give one of count"),
        ('{ name = "event", count = 0 }', "units.count", "greater than 0"),
        ('{ name = "Event", count = 1 }', "units.name", "should match pattern"),
        ('{ name = "event", metric = "nope" }', "units", "metric 'nope' is not one of this table's metrics (eps)"),
    ],
)
def test_bad_units_are_one_line_naming_the_field(units, field, says):
    msg = refusal(
        f'[workloads.mine]\ncommand = ["true"]\nunits = {units}\n\n[workloads.mine.metrics.eps]\n'
        'regex = "(?P<eps>1)"\nhigher_is_better = true\n'
    )
    assert f"workloads.mine.{field}: " in msg and says in msg, msg


# -- the files copied into each environment -------------------------------------


def tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "main.c").write_text("int main(void) { return 0; }\n")
    (src / "lib" / "util.c").write_text("int util;\n")
    (src / "build.sh").write_text("#!/bin/sh\ncc -o app main.c\n")
    (src / "build.sh").chmod(0o755)
    (tmp_path / "input.bin").write_bytes(bytes(range(256)) * 10)
    return src


def test_manifest_digests_and_archive_round_trip(tmp_path):
    tree(tmp_path)
    entries = cf.manifest(("src", "input.bin"), str(tmp_path))
    assert [e.rel for e in entries] == ["src/build.sh", "src/main.c", "src/lib/util.c", "input.bin"]
    names = cf.digests(entries)
    assert set(names) == {"src/", "input.bin"} and len(names["input.bin"]) == 64
    out = tmp_path / "out"
    out.mkdir()
    with tarfile.open(fileobj=__import__("io").BytesIO(cf.archive(entries))) as tar:
        tar.extractall(out)
    assert os.access(out / "src" / "build.sh", os.X_OK)  # modes travel: a build script stays executable
    sums = subprocess.run(
        ["find", ".", "-type", "f", "-exec", "sha256sum", "{}", "+"],
        cwd=out,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    cf.check_copied(entries, sums, "docker-nat")
    (out / "src" / "main.c").write_text("int main(void) { return 1; }\n")
    sums = subprocess.run(["sha256sum", "./src/main.c"], cwd=out, capture_output=True, text=True).stdout
    with pytest.raises(
        WorkloadError,
        match=r"files: src/build.sh in docker-nat is not the controller's copy: "
        r"missing != [0-9a-f]{64}",
    ):
        cf.check_copied(entries, sums, "docker-nat")
    changed = [e for e in entries if e.rel == "src/main.c"][0]
    with pytest.raises(
        WorkloadError,
        match=rf"files: src/main.c in vm is not the controller's copy: "
        rf"[0-9a-f]{{64}} != {changed.sha256}",
    ):
        cf.check_copied([changed], sums, "vm")


def test_files_that_cannot_be_copied_are_named(tmp_path):
    src = tree(tmp_path)
    with pytest.raises(WorkloadError, match=r"files\[0\]: nope.c does not exist"):
        cf.manifest(("nope.c",), str(tmp_path))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(WorkloadError, match=r"files\[1\]: fifo is not a regular file or a directory"):
        cf.manifest(("src", "fifo"), str(tmp_path))
    (src / "link").symlink_to(src / "main.c")
    with pytest.raises(WorkloadError, match=r"files\[0\]: src/link is a link or a special file"):
        cf.manifest(("src",), str(tmp_path))
    w = workload(tmp_path, command=["true"], files=["nope.c"])
    with pytest.raises(WorkloadError, match=r"files\[0\]: nope.c does not exist") as exc:
        w.footprint()  # preflight turns it into one line naming workloads.NAME.files[0]
    assert exc.value.field == "files[0]"


# -- one sample on this host ------------------------------------------------------


@dataclass
class Local(Environment):
    """The host as an environment, in a temporary directory: what native does, without its facts."""

    root: str = ""
    kind: str = "local"

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def exec(self, argv, timeout, cwd=None):
        return run_argv(argv, timeout, cwd)

    def write_file(self, path, content):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_bytes(content)

    @property
    def paths(self) -> Paths:
        return Paths(data=os.path.join(self.root, "data"), tmp=os.path.join(self.root, "tmp"))


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
def test_one_sample_copies_times_and_reads_the_output(tmp_path):
    tree(tmp_path)
    env = Local("local", root=str(tmp_path / "env"))
    w = workload(
        tmp_path,
        command=["sh", "-c", "wc -l main.c; touch app; echo $CC_NAME >&2"],
        workdir="src",
        files=["src"],
        env={"CC_NAME": "cc"},
        packages=["time", "coreutils"],
        setup=["sh", "-c", "test ! -e app"],
        cleanup=["rm", "-f", "app"],
        repeat=2,
        metrics={"lines": {"regex": r"(?P<lines>[0-9]+) main.c", "higher_is_better": False}},
    )
    w.prepare(env)
    m = w.run("default", env)
    m = w.run("default", env)  # setup passes again: cleanup removed what the command made
    assert m.values["lines"] == 1.0 and m.values["wall_s"] >= 0 and m.extra["runs"] == 2
    program = m.extra["program"]
    assert program["executable"] == os.path.realpath("/bin/sh") and len(program["sha256"]) == 64
    # the libraries it loads, by soname, with the bytes' digests (the loader's too)
    libc = program["libraries"]["libc.so.6"]
    assert (
        libc
        == subprocess.run(
            ["sh", "-c", "sha256sum < /lib/x86_64-linux-gnu/libc.so.6"], capture_output=True, text=True
        ).stdout.split()[0]
    )
    assert any(name.startswith("ld-linux") for name in program["libraries"])
    assert set(program["files"]) == {"src/"} and program == w.program("local")
    assert set(program["packages"]) == {"time", "coreutils"} and "not installed" not in program["packages"].values()
    w.cleanup(env)
    assert not os.path.exists(w.scratch(env.paths))


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
def test_a_failing_or_missing_command_fails_the_sample_with_its_stderr(tmp_path):
    env = Local("local", root=str(tmp_path / "env"))
    w = workload(command=["sh", "-c", "echo oops >&2; exit 4"])
    w.prepare(env)
    with pytest.raises(WorkloadError, match=r"^command exit 4: sh -c 'echo oops >&2; exit 4': oops$"):
        w.run("default", env)
    w = workload(command=["no-such-program-here"])
    with pytest.raises(
        WorkloadError, match=r"command: no-such-program-here cannot be run in local \(exit 127\): not found"
    ):
        w.prepare(env)
    w = workload(command=["sleep", "5"], timeout_s=2)
    w.prepare(env)
    with pytest.raises(WorkloadError, match=r"^command timed out after 2 s: sleep 5"):
        w.run("default", env)


def test_ldd_output_is_read_as_sonames_and_paths():
    """Real outputs: openssl on this host, fio in the isobench image (63
    libraries, one under /usr/lib/.../ceph), a script (ldd says so on
    stderr, exit 1, nothing on stdout)."""
    ssl = cf.ldd_libraries((DATA / "ldd-openssl.stdout").read_text())
    assert ssl == {
        "libssl.so.3": "/lib/x86_64-linux-gnu/libssl.so.3",
        "libcrypto.so.3": "/lib/x86_64-linux-gnu/libcrypto.so.3",
        "libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6",
        "ld-linux-x86-64.so.2": "/lib64/ld-linux-x86-64.so.2",
    }  # the vDSO is the kernel's: no file to compare
    fio = cf.ldd_libraries((DATA / "ldd-fio-image.stdout").read_text())
    assert len(fio) == 63 and fio["libceph-common.so.2"] == "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2"
    assert (DATA / "ldd-script.stderr").read_text().strip() == "not a dynamic executable"
    assert cf.ldd_libraries((DATA / "ldd-script.stdout").read_text()) == {}
    assert cf.ldd_libraries("\tlibgone.so.1 => not found\n") == {"libgone.so.1": "not found"}
