"""The same program everywhere, or a clear refusal: the decision from each
environment's record (results/programs.py), the one line that refuses, the
report's run section, Table I's note and the JSON documents; and the runner
refusing before the first sample, leaving nothing behind, with two
environments of a throwaway kind where one finds another executable on the
study's PATH (a relative entry only that environment's data directory
fills: planted)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from rich.console import Console
from tests.unit.test_env_registry import fake  # noqa: F401 - the throwaway kind's fixture

from isobench.report.html import render_html
from isobench.report.markdown import render_markdown
from isobench.report.terminal import render_terminal
from isobench.results.model import RunData
from isobench.results.programs import (
    Difference,
    differences,
    footnotes,
    library_differences,
    program_lines,
    refusal,
    summary,
)
from isobench.results.table import build_table
from isobench.store.export import run_fields

A, B = "a" * 64, "b" * 64
SEVENZ = {"executable": "/usr/bin/7z", "sha256": A, "files": {"src/": "c" * 64}, "packages": {"p7zip-full": "16.02"}}


def test_the_same_bytes_are_no_difference_wherever_they_were_found():
    moved = {**SEVENZ, "executable": "/usr/local/bin/7z"}  # another path, the same bytes
    assert differences({"native": SEVENZ, "docker": dict(SEVENZ), "vm": moved}, "native") == []


def test_every_difference_names_what_differs_with_both_digests_or_versions():
    other = {
        "executable": "/usr/local/bin/7z",
        "sha256": B,
        "files": {"src/": "d" * 64, "extra.txt": "e" * 64},
        "packages": {"p7zip-full": "16.03"},
    }
    found = differences({"native": SEVENZ, "docker": SEVENZ, "vm": other}, "native")
    assert found == [
        Difference("vm", "executable /usr/bin/7z", A, B, "/usr/local/bin/7z"),
        Difference("vm", "file src/", "c" * 64, "d" * 64),
        Difference("vm", "package p7zip-full", "16.02", "16.03"),
        Difference("vm", "file extra.txt", "missing", "e" * 64),
    ]
    assert found[0].text("native") == f"executable /usr/bin/7z: {A} in native, {B} in vm (at /usr/local/bin/7z)"
    assert found[1].text("native") == f"file src/: {'c' * 64} in native, {'d' * 64} in vm"


def test_libraries_of_other_bytes_are_noted_by_soname_not_refused():
    ssl = {"executable": "/usr/bin/openssl", "sha256": A, "libraries": {"libssl.so.3": "c" * 64, "libc.so.6": A}}
    newer = {**ssl, "libraries": {"libssl.so.3": "d" * 64, "libc.so.6": A, "libz.so.1": B}}
    records = {"native": ssl, "docker": dict(ssl), "vm": newer}
    assert differences(records, "native") == []  # the executable is the same: nothing to refuse
    assert library_differences(records, "native") == {"vm": ["libssl.so.3", "libz.so.1"]}
    # the run section folds them into one line per group (a program can load
    # dozens: fio, 63) and names the ones that differ
    lines = program_lines(records, "native")
    assert lines[0] == f"native, docker, vm: executable /usr/bin/openssl sha256 {A}"  # the same program
    assert lines[1].startswith("native, docker: 2 shared libraries sha256 ") and lines[2].startswith("vm: 3 shared")
    assert lines[-1] == "vm: 2 shared libraries not the bytes native loads: libssl.so.3, libz.so.1 (noted, not refused)"
    # environments whose libraries differ in the same way share that line too
    lines = program_lines({**records, "docker": newer}, "native")
    assert lines[-1].startswith("docker, vm: 2 shared libraries not the bytes native loads: ") and len(lines) == 4


def test_no_baseline_record_nothing_to_compare():
    # the baseline's preparation failed (and so do its cells): no refusal from here
    assert differences({"docker": SEVENZ}, "native") == []


def test_the_refusal_is_one_line_naming_the_file_both_digests_and_the_way_out():
    found = differences({"native": SEVENZ, "docker": {**SEVENZ, "sha256": B, "packages": {}}}, "native")
    line = refusal("zip", found, "native")
    assert "\n" not in line
    assert line.startswith(f"zip: docker does not run the same program as native: executable /usr/bin/7z: {A} in ")
    assert f"in native, {B} in docker (and 1 more); nothing was measured." in line
    assert line.endswith("set same_program = false in [workloads.zip] to measure them anyway")


def test_program_lines_group_environments_with_identical_records():
    lines = program_lines({"native": SEVENZ, "docker": SEVENZ, "vm": {**SEVENZ, "sha256": B}})
    assert lines == [
        f"native, docker: executable /usr/bin/7z sha256 {A}",
        f"native, docker: file src/ sha256 {'c' * 64}",
        "native, docker: package p7zip-full 16.02",
        f"vm: executable /usr/bin/7z sha256 {B}",
        f"vm: file src/ sha256 {'c' * 64}",
        "vm: package p7zip-full 16.02",
    ]


def stored(records: dict[str, dict]) -> RunData:
    envs = list(records)
    return RunData(
        run_id="r-1",
        study_name="own",
        started_at="2026-01-01T00:00:00Z",
        finished_at=None,
        status="complete",
        host_facts={},
        study_text="",
        study_hash="",
        baseline=envs[0],
        environments=envs,
        env_facts={e: {"kind": "native", "programs": {"zip<b>": r}} for e, r in records.items()},
        metrics=[],
    )


def terminal(run: RunData) -> str:
    console = Console(record=True, width=400)
    render_terminal(run, console)
    return console.export_text()


def test_a_run_that_ran_the_same_bytes_says_so_in_the_run_section_and_json():
    run = stored({"native": SEVENZ, "docker-nat": SEVENZ})
    md = render_markdown(run)
    assert "zip\\<b>:** the same in native, docker-nat" in md
    assert f"native, docker-nat: executable /usr/bin/7z sha256 {A}" in md
    text, html = terminal(run), render_html(run)
    assert "zip<b>:" in text and f"file src/ sha256 {'c' * 64}" in text
    assert "<b>" not in html and "zip&lt;b&gt;:" in html
    assert build_table(run).footnotes == ()
    assert run_fields(run)["programs"] == {
        "zip<b>": {
            "same": True,
            "environments": {"native": SEVENZ, "docker-nat": SEVENZ},
            "differences": [],
            "library_differences": {},
        }
    }
    assert "programs" not in run_fields(dataclasses.replace(run, env_facts={"native": {"kind": "native"}}))


def test_a_run_allowed_to_differ_says_so_in_table_i_the_run_section_and_json():
    run = stored({"native": SEVENZ, "docker-nat": {**SEVENZ, "sha256": B}})
    note = (
        f"docker-nat: zip<b> ran a different program than native (same_program = false): "
        f"executable /usr/bin/7z: {A} in native, {B} in docker-nat."
    )
    assert footnotes(run) == [note] and note in build_table(run).footnotes
    md, out = render_markdown(run).replace("\\_", "_"), terminal(run)
    assert "DIFFERENT in docker-nat than in native (same_program = false)" in md
    assert "DIFFERENT in docker-nat than in native" in out and "ran a different program than native" in out
    assert f"docker-nat: executable /usr/bin/7z sha256 {B}" in md
    doc = summary(run)["zip<b>"]
    assert doc["same"] is False and doc["differences"] == [f"executable /usr/bin/7z: {A} in native, {B} in docker-nat"]


# -- the runner ---------------------------------------------------------------


class Ran:
    """A workload's side of the check: its record per environment, whether it must be the same."""

    def __init__(self, records: dict[str, dict], same: bool = True):
        self.records, self.same_program = records, same

    def program(self, env: str) -> dict | None:
        return self.records.get(env)


def test_the_check_skips_environments_that_never_run_the_workload_and_notes_allowed_ones():
    from types import SimpleNamespace

    from isobench.run.prepare import ProgramsDiffer, check_same, programs

    envs = [SimpleNamespace(name=n) for n in ("native", "gvisor", "vm")]
    differ = {"native": SEVENZ, "gvisor": {**SEVENZ, "sha256": B}, "vm": SEVENZ}
    found = programs({"zip": Ran(differ)}, envs, {("gvisor", "zip"): "no such system call"})
    assert found == {"native": {"zip": SEVENZ}, "vm": {"zip": SEVENZ}}
    notes: list[str] = []
    check_same({"zip": Ran(differ)}, found, "native", SimpleNamespace(note=notes.append))
    assert notes == []
    found = programs({"zip": Ran(differ)}, envs, {})
    with pytest.raises(ProgramsDiffer, match=r"^zip: gvisor does not run the same program as native: executable"):
        check_same({"zip": Ran(differ)}, found, "native", SimpleNamespace(note=notes.append))
    check_same({"zip": Ran(differ, same=False)}, found, "native", SimpleNamespace(note=notes.append))
    assert notes == [
        f"zip: executable /usr/bin/7z: {A} in native, {B} in gvisor (same_program = false: measured anyway, and said)"
    ]


def own_study(tmp_path, run_id: str, same: bool):
    from isobench.study import parse_study

    shadow = tmp_path / "fake-root" / f"{run_id}-other" / "data" / "bin"
    shadow.mkdir(parents=True)
    (shadow / "true").write_text("#!/bin/sh\nexit 0\n")  # "other" finds this one first on the study's PATH
    os.chmod(shadow / "true", 0o755)
    text = (
        '[study]\nname = "own"\nrepetitions = 1\nwarmup = 0\nbaseline = "fake"\n'
        '[environments.fake]\n[environments.other]\npreset = "fake"\n'
        # relative to the scratch directory, which is each environment's own
        '[workloads.mine]\ncommand = ["true"]\nenv = { PATH = "../bin:/usr/bin:/bin" }\n'
        + ("" if same else "same_program = false\n")
    )
    return parse_study(text, "own.toml")


def test_the_runner_refuses_before_measuring_and_leaves_nothing(fake, tmp_path):  # noqa: F811
    from isobench.run.prepare import ProgramsDiffer
    from isobench.run.runner import run_study
    from isobench.store.db import Store

    store = Store(str(tmp_path / "r.sqlite"))
    with pytest.raises(ProgramsDiffer) as err:
        run_study(own_study(tmp_path, "r0", same=True), store, run_id="r0")
    line = str(err.value)
    assert line.startswith("mine: other does not run the same program as fake: executable /usr/bin/true: ")
    assert f"(at {tmp_path}/fake-root/r0-other/data/bin/true)" in line and "nothing was measured" in line
    assert store.list_runs() == [] and store.samples("r0") == []
    assert [e for e in fake.EVENTS if e[0] == "stop"] == [("stop", "fake"), ("stop", "other")]
    assert not (tmp_path / "fake-root" / "r0-other").exists()


def test_the_runner_measures_a_difference_the_study_allows_and_keeps_it(fake, tmp_path):  # noqa: F811
    from isobench.run.runner import run_study
    from isobench.store.db import Store

    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(own_study(tmp_path, "r1", same=False), store, run_id="r1")
    assert {(s["env"], s["status"]) for s in store.samples(run_id)} == {("fake", "ok"), ("other", "ok")}
    run = store.load_run(run_id)
    records = {env: run.env_facts[env]["programs"]["mine"] for env in ("fake", "other")}
    assert records["fake"]["executable"] == "/usr/bin/true"
    assert records["other"]["executable"] == f"{tmp_path}/fake-root/r1-other/data/bin/true"
    assert any("other: mine ran a different program than fake" in n for n in build_table(run).footnotes)
    assert json.loads(json.dumps(run_fields(run)))["programs"]["mine"]["same"] is False


def test_the_answer_carries_the_caveat_beside_each_figure_of_another_program():
    from isobench.report.sections.answer import _other_programs

    run = stored({"native": SEVENZ, "docker-nat": {**SEVENZ, "sha256": B}})
    assert _other_programs(run) == {
        ("zip<b>", "docker-nat"): " (another program than native's: executable /usr/bin/7z, same_program = false)"
    }
    assert _other_programs(stored({"native": SEVENZ, "docker-nat": SEVENZ})) == {}
