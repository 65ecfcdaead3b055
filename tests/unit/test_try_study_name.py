"""A `try` study is named from its whole command, and a compare of two
studies says so first (issue 55, finding 13: every `sh -c` pipeline was
study "try-sh", and a compare of a bzip2 run against a gzip run read
"native WORSE +11.9%" with a changed study hash as the only hint)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from isobench.cli.main import main
from isobench.cli.try_cmd import study_name, study_text
from isobench.core.ids import is_name
from isobench.store.db import Store
from isobench.study import parse_study
from synthetic_runs import simple_run

BZIP2 = ("sh", "-c", "seq 1 2500000 | bzip2 -9 > /dev/null")
GZIP = ("sh", "-c", "seq 1 2500000 | gzip -9 > /dev/null")
ENVS = ("native", "docker-nat")


def test_two_pipelines_under_sh_are_two_studies_each_named_for_what_it_runs():
    assert study_name(BZIP2).startswith("try-sh-seq-bzip2-") and study_name(GZIP).startswith("try-sh-seq-gzip-")
    assert study_name(BZIP2) != study_name(GZIP) and study_name(BZIP2) == study_name(BZIP2)
    # one argument apart is another study; every name is a study name (path-safe, at most 31 characters)
    assert study_name(("xz", "-9")) != study_name(("xz", "-8"))
    for argv in (BZIP2, ("/usr/bin/7z", "b"), ("x" * 60,), ("sh", "-c", "X=1 make -j1 && ./run.sh"), ("__",)):
        assert is_name(study_name(argv)), study_name(argv)
    assert study_name(("sh", "-c", "X=1 make -j1 && ./run.sh")).startswith("try-sh-make-run-sh-")
    assert parse_study(study_text(BZIP2, ENVS, 8, 1, 1, None, None)).meta.name == study_name(BZIP2)


def _two_tries(path: str) -> None:
    store = Store(path)
    for run_id, argv, values in (("a", BZIP2, [1.0, 1.01, 0.99]), ("b", GZIP, [1.2, 1.21, 1.19])):
        study = parse_study(study_text(argv, ENVS, 3, 1, 1, None, None), "try")
        simple_run(store, run_id, dict.fromkeys(ENVS, values), ("wall_s", "s", False), "sh", envs=ENVS, study=study)
    simple_run(store, "c", dict.fromkeys(ENVS, [1.0, 1.0, 1.0]), ("wall_s", "s", False), "sh", envs=ENVS, study=study)
    store.close()


def test_a_compare_of_two_commands_says_so_first_in_every_format(tmp_path):
    path = str(tmp_path / "r.sqlite")
    _two_tries(path)
    runner = CliRunner()
    shown = runner.invoke(main, ["compare", "a", "b", "--store", path])
    line = " ".join(shown.stdout.split())
    assert line.startswith(f"NOT THE SAME STUDY: A is study {study_name(BZIP2)}, B is study {study_name(GZIP)}")
    assert "workload sh (command): A runs sh -c 'seq 1 2500000 | bzip2 -9 > /dev/null', B runs sh -c" in line
    doc = json.loads(runner.invoke(main, ["compare", "a", "b", "--store", path, "--format", "json"]).stdout)
    assert doc["study_changed"].startswith("NOT THE SAME STUDY")
    md = runner.invoke(main, ["compare", "a", "b", "--store", path, "--format", "md"])
    assert md.stdout.splitlines()[2].startswith("> **NOT THE SAME STUDY") and "warning: NOT THE SAME" in md.stderr
    # two runs of one study text: nothing said
    same = json.loads(runner.invoke(main, ["compare", "b", "c", "--store", path, "--format", "json"]).stdout)
    assert same["study_changed"] is None


def test_one_study_edited_between_runs_is_said_with_what_changed():
    from types import SimpleNamespace

    from isobench.results.studydiff import study_change

    text = '[study]\nname = "mine"\nrepetitions = {n}\n[environments.native]\n[workloads.z]\ncommand = {cmd}\n'
    a = SimpleNamespace(study_name="mine", study_hash="1" * 64, study_text=text.format(n=8, cmd='["xz", "-9"]'))
    b = SimpleNamespace(study_name="mine", study_hash="2" * 64, study_text=text.format(n=9, cmd='["xz", "-1"]'))
    line = study_change(a, b)
    assert line.startswith(
        f"THE STUDY CHANGED between A and B (hash {'1' * 12} \u2192 {'2' * 12}): workload z (command)"
    )
    assert "A runs xz -9, B runs xz -1; study settings (repetitions); a change below may be the work's" in line
    c = SimpleNamespace(study_name="mine", study_hash="3" * 64, study_text=text.format(n=9, cmd='["xz", "-9"]'))
    assert study_change(a, c).endswith(": study settings (repetitions)")
    assert study_change(a, a) == ""
