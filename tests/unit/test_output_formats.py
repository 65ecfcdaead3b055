"""One format option (docs/output.md#formats): every command that prints a
table or lines (runs, envs, validate, doctor, calibrate, fleet list) takes
`--format terminal|json`, its JSON validated against the documented
schema; `--json`, the old spelling, still prints the same document and says
once on stderr that it is deprecated; `try --format json` prints the report
document of the run it made, as `report --format json` does."""

import json
import re
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.cli.try_cmd import study_name
from isobench.store.db import Store
from synthetic_runs import Synthetic, fake_study, simple_run, write_run

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "output.md").read_text()
QUICK = str(ROOT / "studies" / "quick.toml")
TIGHT = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0]
# the commands whose human output is a table or lines, as the docs' table names them
TABLES = {
    "runs": ("runs",),
    "envs": ("envs",),
    "validate": ("validate",),
    "doctor": ("doctor",),
    "calibrate": ("calibrate",),
    "fleet list": ("fleet", "list"),
}


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def command(path):
    cmd = main
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def checked(result, kind):
    """The JSON document of RESULT, checked against isobench.KIND's schema:
    its name and version, every documented field, nothing else on stdout."""
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == f"isobench.{kind}" and doc["version"] == out.version_of(kind)
    assert set(out.SCHEMAS[kind]) <= set(doc), set(out.SCHEMAS[kind]) - set(doc)
    return doc


@pytest.fixture
def host(monkeypatch):
    """envs and doctor without probing or measuring this host."""
    from isobench.checks import doctor, noisepilot
    from isobench.envs import kinds

    monkeypatch.setattr(kinds, "probe_all", lambda: [SimpleNamespace(name="native", available=True, details="")])
    monkeypatch.setattr(noisepilot, "without_a_run", lambda fresh, on_measure: (None, "no pilot in a test"))
    monkeypatch.setattr(doctor, "read_host", lambda: None)
    monkeypatch.setattr(doctor, "judge", lambda host: [doctor.Finding("governor", "warn", "powersave", "set it")])


@pytest.fixture
def store(tmp_path):
    """A synthetic run and a calibration run: the baseline, an A/A copy and
    a copy at half the throughput (run/calibration.py's names)."""
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    envs = ("docker-host", "docker-host-aa1", "docker-host-slow50")
    values = {envs[0]: TIGHT, envs[1]: list(reversed(TIGHT)), envs[2]: [v * 0.5 for v in TIGHT]}
    simple_run(s, "cal", values, envs=envs, study=fake_study(envs, baseline=envs[0]))
    s.close()
    return path


def argv(name, store):
    """Each command's cheapest invocation that prints its document."""
    return {
        "runs": ["runs", "--store", store],
        "envs": ["envs"],
        "validate": ["validate", QUICK],
        "doctor": ["doctor"],
        "calibrate": ["calibrate", "--show", "cal", "--store", store],
        "fleet list": ["fleet", "list", "--store", store],
    }[name]


@pytest.mark.parametrize("name", list(TABLES))
def test_each_command_prints_its_schema_with_format_json(name, host, store):
    kind = name.replace(" ", "-")
    doc = checked(invoke(*argv(name, store), "--format", "json"), kind)
    expect = {
        "runs": lambda d: [r["run_id"] for r in d["runs"]] == ["a", "cal"],
        "envs": lambda d: d["environments"] == [{"name": "native", "available": True, "details": ""}],
        "validate": lambda d: d["study"] == "quick" and d["ok"] is True,
        "doctor": lambda d: d["findings"][0]["check"] == "governor" and len(d["findings"]) == 2,
        "calibrate": lambda d: (
            [r["label"] for r in d["rates"]] == ["A/A", "planted 50%"] and d["rates"][1]["hits"] == 1
        ),
        "fleet list": lambda d: d["hosts"] == [],
    }[name]
    assert expect(doc), doc
    # the default is the table or lines, never JSON
    terminal = invoke(*argv(name, store))
    assert terminal.exit_code == 0 and not terminal.stdout.lstrip().startswith("{"), terminal.output


@pytest.mark.parametrize("name", list(TABLES))
def test_the_old_json_flag_prints_the_same_and_says_it_is_deprecated(name, host, store):
    new = invoke(*argv(name, store), "--format", "json")
    old = invoke(*argv(name, store), "--json")
    assert old.exit_code == 0, old.output
    assert json.loads(old.stdout) == json.loads(new.stdout)
    note = f"note: {name} --json is deprecated and goes in the next release; use --format json"
    assert [ln for ln in old.stderr.splitlines() if "deprecated" in ln] == [note]
    assert "deprecated" not in new.stderr
    # hidden from the options, said once in the command's help
    (alias,) = [p for p in command(TABLES[name]).params if "--json" in p.opts]
    assert alias.hidden
    helptext = " ".join(invoke(*TABLES[name], "--help").output.split())
    assert "--json, the old spelling of --format json, works for one more release" in helptext


def test_every_table_command_has_the_one_format_option_and_the_page_says_so():
    formats = {}
    for name, path in TABLES.items():
        (opt,) = [p for p in command(path).params if p.name == "fmt"]
        assert isinstance(opt.type, click.Choice) and opt.default == "terminal", name
        formats[name] = tuple(opt.type.choices)
    (opt,) = [p for p in command(("try",)).params if p.name == "fmt"]
    formats["try"] = tuple(opt.type.choices)
    assert set(formats.values()) == {("terminal", "json")}
    table = DOC.split("## Formats", 1)[1].split("\n## ", 1)[0]
    for name in [*TABLES, "try"]:
        row = next((ln for ln in table.splitlines() if f"`{name}`" in ln), "")
        assert re.search(r"`--format terminal` \(default\).*`--format json`", row), f"{name}: {row!r}"


def test_calibrate_json_file_still_writes_the_file_beside_the_table(store, tmp_path):
    target = tmp_path / "cal.json"
    r = invoke("calibrate", "--show", "cal", "--store", store, "--json", str(target))
    assert r.exit_code == 0, r.output
    assert "planted 50%" in r.stdout and "A/A" in r.stdout  # the table as well
    assert json.loads(target.read_text())["schema"] == "isobench.calibrate"
    note = "note: calibrate --json FILE is deprecated and goes in the next release; use --format json -o FILE"
    assert note in " ".join(r.stderr.split())
    to_file = tmp_path / "new.json"
    r = invoke("calibrate", "--show", "cal", "--store", store, "--format", "json", "-o", str(to_file))
    assert r.exit_code == 0 and r.stdout == "" and "deprecated" not in r.stderr, r.output
    assert json.loads(to_file.read_text()) == json.loads(target.read_text())
    # both spellings at once: one line naming the one to give, nothing written
    both = tmp_path / "both.json"
    r = invoke("calibrate", "--show", "cal", "--store", store, "--format", "json", "--json", str(both))
    assert r.exit_code == 2 and f"--format json -o {both}; give one of the two" in " ".join(r.stderr.split())
    assert not both.exists()


@pytest.fixture
def tried(tmp_path, monkeypatch):
    """`try` with its measuring replaced by a stored synthetic run."""
    from isobench.cli import execution

    calls = []

    def execute(study, store, progress, **kw):
        calls.append(study.meta.name)
        return write_run(store, Synthetic(f"t{len(calls)}", seed=3))

    monkeypatch.setattr(execution, "execute", execute)
    return str(tmp_path / "t.sqlite"), calls


def test_try_json_is_the_report_document_of_its_run(tried, tmp_path):
    path, calls = tried
    r = invoke("try", "--store", path, "--format", "json", "--", "true")
    doc = checked(r, "report")
    assert calls == [study_name(("true",))] and doc["run"]["run_id"] == "t1" and doc["cells"]
    assert r.stdout == invoke("report", "t1", "--store", path, "--format", "json").stdout
    target = tmp_path / "t.json"
    r = invoke("try", "--store", path, "--format", "json", "-o", str(target), "--", "true")
    assert r.exit_code == 0 and r.stdout == "", r.output
    assert json.loads(target.read_text())["run"]["run_id"] == "t2"


def test_try_refuses_an_existing_output_before_it_measures(tried, tmp_path):
    path, calls = tried
    target = tmp_path / "keep.json"
    target.write_text("keep me")
    r = invoke("try", "--store", path, "--format", "json", "-o", str(target), "--", "true")
    assert r.exit_code == 2 and "exists" in r.stderr and target.read_text() == "keep me"
    assert calls == []  # refused before anything ran
    r = invoke("try", "--store", path, "-o", str(tmp_path / "answer.txt"), "--", "true")
    assert calls == [study_name(("true",))] and r.exit_code == 0, r.output
    assert "stored as run t1" in (tmp_path / "answer.txt").read_text()
