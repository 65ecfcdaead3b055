"""`isobench try`: the study it makes from a command line (what --save
writes) parses as the study model does, names the table after the program,
and bad options are one line before anything runs."""

from click.testing import CliRunner

from isobench.cli.main import main
from isobench.cli.try_cmd import default_envs, study_text, table_name
from isobench.study import parse_study


def test_the_table_is_named_after_the_program():
    assert table_name(("/usr/bin/7z", "b")) == "cmd-7z"
    assert table_name(("sysbench", "cpu")) == "sysbench"
    assert table_name(("./My_Tool.sh",)) == "my-tool-sh"
    assert table_name(("/opt/__",)) == "program" and table_name(("x" * 60,)) == "x" * 31
    name = parse_study(study_text(("x" * 60,), ("native",), 2, 0, 1, None, None)).meta.name
    assert name.startswith("try-" + "x" * 20 + "-") and len(name) == 31


def test_the_study_it_makes_is_a_study_with_one_command_workload():
    text = study_text(("sh", "-c", "echo 'a \"b\"'; exit 0"), default_envs(), 5, 1, 3, 120.0, "10m")
    study = parse_study(text, "mine.toml")
    (entry,) = study.workloads
    assert (entry.key, entry.workload) == ("sh", "command")
    assert entry.params.command == ("sh", "-c", "echo 'a \"b\"'; exit 0")
    assert entry.params.repeat == 3 and entry.params.timeout_s == 120.0
    assert default_envs() == ("native", "docker-nat", "docker-host")  # the quick study's
    assert list(study.environments) == list(default_envs()) and study.meta.baseline == "native"
    assert study.meta.repetitions == 5 and study.meta.warmup == 1 and study.meta.budget == "10m"
    assert text.startswith("# Made by `isobench try`")
    assert entry.params.packages == ()
    with_package = study_text(("7z", "b", "-mmt1"), ("native",), 5, 1, 1, None, None, ("p7zip-full",))
    assert parse_study(with_package, "mine.toml").workloads[0].params.packages == ("p7zip-full",)


def test_bad_options_are_one_line_before_anything_runs(tmp_path):
    runner = CliRunner()
    r = runner.invoke(main, ["try", "--env", "native", "--env", "nope", "--", "true"])
    assert r.exit_code == 2 and "--env nope: not an environment preset; allowed: native, docker-nat" in r.output
    r = runner.invoke(main, ["try", "--env", "native", "--env", "native", "--", "true"])
    assert r.exit_code == 2 and "--env native: given twice" in r.output
    r = runner.invoke(main, ["try", "--budget", "soon", "--", "true"])
    assert r.exit_code == 2 and "--budget 'soon'" in r.output
    r = runner.invoke(main, ["try", "--package", "Not_a_name", "--", "true"])
    assert r.exit_code == 2 and "packages: 'Not_a_name' is not a Debian package name" in r.output, r.output
    r = runner.invoke(main, ["try"])
    assert r.exit_code == 2 and "Missing argument 'COMMAND...'" in r.output


def test_a_duet_on_one_usable_cpu_is_one_line_and_the_default_falls_back(monkeypatch):
    import isobench.envs.pinning as pinning
    from isobench.cli.try_cmd import schedule_for

    monkeypatch.setattr(pinning, "usable_cpus", lambda: [0])
    r = CliRunner().invoke(main, ["try", "--schedule", "duet", "--", "true"])
    assert r.exit_code == 2
    assert "--schedule duet: a duet needs two usable host CPUs (one a side), this process may use 1" in r.output
    assert "use --schedule sequential" in " ".join(r.output.split())
    assert schedule_for(None) == "sequential"
    monkeypatch.setattr(pinning, "usable_cpus", lambda: [0, 1])
    assert schedule_for(None) == "duet" and schedule_for("sequential") == "sequential"


def test_the_saved_study_carries_the_schedule_the_call_and_the_fit():
    text = study_text(("7z", "b"), ("native", "docker-nat"), 8, 1, 1, None, None, (), "duet", True, "3m")
    study = parse_study(text, "mine.toml")
    assert study.meta.schedule == "duet" and study.meta.measure_for == "3m"
    assert study.workloads[0].params.duet is True
    plain = parse_study(study_text(("7z", "b"), ("native",), 8, 1, 1, None, None), "mine.toml")
    assert plain.meta.schedule == "sequential" and plain.workloads[0].params.duet == "auto"
