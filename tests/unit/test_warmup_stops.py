"""A warm-up that fails stops the run (issue 55, finding 11): `try -- sh -c
'seq 1 2500000 | bzip2 -9 > /dev/null'` failed both Docker warm-ups with
exit 127, measure_for fitted 100 rounds to those instants and the host was
measured beside failing containers; `try --rounds 2 -- bzip2 ...` ended
rc 0 with "Resolved: 0 of 2" and never said --package bzip2. The runner is
the real one, on the fake kind (envkinds/fake.py) running real commands on
this host; the failures read are the real shell's and GNU time's."""

from __future__ import annotations

import os
import subprocess

import pytest

from isobench.run.warmup import WarmupFailed, exit_code, missing_program, warmup_failed
from isobench.store.db import Store
from isobench.study import parse_study
from isobench.workloads.command import failure
from unit.test_env_registry import fake  # noqa: F401 - the fake kind's fixture

GNU_TIME = pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="GNU time is not installed")
MISSING = "bzip2-not-here"


def _failed(argv: list[str]) -> str:
    """A command workload's error for ``argv`` run here, as a sample stores it."""
    from isobench.core.proc import run_argv

    r = run_argv(["/usr/bin/time", "-v", "--", *argv], 30)
    assert not r.ok
    return failure("command", tuple(argv), r)


@GNU_TIME
def test_the_missing_program_is_read_from_the_real_shells_and_gnu_times_words():
    piped = _failed(["sh", "-c", f"seq 1 20 | {MISSING} -9 > /dev/null"])
    assert exit_code(piped) == 127 and missing_program(piped) == MISSING
    alone = _failed([MISSING, "-9", "-c", "/etc/services"])
    assert exit_code(alone) == 127 and missing_program(alone) == MISSING
    bash = subprocess.run(["bash", "-c", MISSING], capture_output=True, text=True)
    assert missing_program(f"command exit 127: bash -c {MISSING}: {bash.stderr.strip()}") == MISSING
    # a command table's preparation (workloads/command.py resolve)
    said = f"prepare failed: command: {MISSING} cannot be run in docker-nat (exit 127): not found on /usr/bin:/bin"
    assert missing_program(said) == MISSING
    # not exit 127, or a name the command line does not hold: no guess
    assert missing_program("command exit 1: sh -c 'grep x y': y: not found") is None
    assert missing_program("command exit 127: sh -c 'run-it': helper: not found") is None


def test_the_line_names_the_environment_the_exit_and_the_package():
    error = f"command exit 127: sh -c 'seq 1 9 | {MISSING} -9': sh: 1: {MISSING}: not found"
    exc = warmup_failed("docker-nat", "mine/default", error)
    assert exc.program == MISSING and exc.package is None
    line = exc.line(lambda p: f"give --package {p}", "and nothing was stored")
    assert line.startswith("docker-nat: the warm-up of mine/default failed (command exit 127: ")
    assert f"docker-nat has no {MISSING}: give --package PACKAGE, the Debian package that installs it" in line
    assert "\n" not in line
    named = WarmupFailed("docker-nat", "mine/default", error.replace(MISSING, "bzip2"), "bzip2", "bzip2")
    assert "docker-nat has no bzip2: give --package bzip2 (the host's bzip2 is in it)" in named.line(
        lambda p: f"give --package {p}", "and nothing was stored"
    )


def test_package_of_reads_dpkgs_own_words():
    from isobench.host.packages import owners_of

    out = "bzip2: /bin/bzip2\ndiversion by x from: /usr/bin/bzip2\nlibbz2-dev: /usr/share/doc/bzip2/x/bin/bzip2\n"
    assert owners_of("bzip2", out) == ["bzip2"]
    assert owners_of("xz", "xz-utils: /usr/bin/xz\n") == ["xz-utils"]


STUDY = """
[study]
name = "warm"
repetitions = 3
warmup = 1
baseline = "fake"
{extra}
[environments.fake]
[environments.b]
kind = "fake"
[workloads.mine]
command = ["sh", "-c", 'case "$ISOBENCH_SCRATCH" in *-b/*) {missing} -9 ;; esac']
"""


@GNU_TIME
@pytest.mark.parametrize("extra", ["", 'measure_for = "1m"'])
def test_a_failed_warmup_stops_the_run_before_any_round_is_measured_or_fitted(
    fake,  # noqa: F811
    tmp_path,
    monkeypatch,
    extra,
):
    import isobench.run.rounds as rounds
    from isobench.run.runner import run_study

    store = Store(str(tmp_path / "r.sqlite"))
    stored: list[tuple[str, int, str]] = []
    add = store.add_sample
    monkeypatch.setattr(store, "add_sample", lambda s: (stored.append((s.env, s.round, s.status)), add(s))[1])
    monkeypatch.setattr(rounds, "fit_rounds", lambda *a: pytest.fail("measure_for fitted rounds to a failed warm-up"))
    study = parse_study(STUDY.format(extra=extra, missing=MISSING), str(tmp_path / "warm.toml"))
    with pytest.raises(WarmupFailed) as err:
        run_study(study, store)
    assert err.value.env == "b" and err.value.program == MISSING and err.value.kept is None
    assert "exit 127" in str(err.value)
    # the warm-up alone was measured, and no run is left to report "Resolved: 0 of 2"
    assert {r for _, r, _ in stored} == {0} and stored[-1] == ("b", 0, "failed")
    assert store.list_runs() == []
    assert ("stop", "b") in fake.EVENTS and ("stop", "fake") in fake.EVENTS


@GNU_TIME
def test_a_program_no_environment_has_stops_at_its_first_warmup_naming_the_package_option(
    fake,  # noqa: F811
    tmp_path,
):
    """`try --rounds 2 -- bzip2 -9 -c /etc/services` with bzip2 missing:
    its preparation fails, and the warm-up's line says `--package`."""
    from types import SimpleNamespace

    from isobench.cli.execution import warmup_line
    from isobench.run.runner import run_study

    store = Store(str(tmp_path / "r.sqlite"))
    text = STUDY.format(extra="", missing=MISSING).replace(
        """["sh", "-c", 'case "$ISOBENCH_SCRATCH" in *-b/*) bzip2-not-here -9 ;; esac']""",
        f'["{MISSING}", "-9", "-c", "/etc/services"]',
    )
    with pytest.raises(WarmupFailed) as err:
        run_study(parse_study(text, str(tmp_path / "warm.toml")), store)
    line = warmup_line(err.value, SimpleNamespace(path="warm.toml"), "--package")
    assert f"failed (prepare failed: command: {MISSING} cannot be run in " in line
    assert "(exit 127): not found on /usr/local/sbin:" in line
    assert f"/bin); {err.value.env} has no {MISSING}: give --package PACKAGE, the Debian package that installs" in line
    assert line.endswith("the run stopped before its first measured round, and nothing was stored")
    assert store.list_runs() == []
    as_run = warmup_line(err.value, SimpleNamespace(path="warm.toml"), "")
    assert 'add "PACKAGE" to packages in [workloads.mine] of warm.toml' in as_run
