"""One output convention (docs/output.md): every option has help, run ids
are RUN_ID, JSON documents carry their schema and the fields the page
lists, -o - is stdout, old spellings work and say they are deprecated, the
gate fails when it is blind, widths follow COLUMNS, durations are read one
way, counts are plural-aware."""

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import Synthetic, history_run, simple_run, write_run

DOC = (Path(__file__).resolve().parents[2] / "docs" / "output.md").read_text()
TIGHT = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0]
NOISY = [100.0, 90.0, 110.0, 95.0, 105.0]


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, env=env)


def commands(cmd=main, path=("isobench",)):
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from commands(sub, path + (name,))
    yield " ".join(path), cmd


def test_every_option_has_help_and_run_ids_are_RUN_ID():
    seen = 0
    for path, cmd in commands():
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden:
                seen += 1
                assert p.help, f"{path} {p.opts[0]} has no help text"
            metavar = p.metavar or ""
            if "RUN" in metavar or metavar in ("ID", "NEWID"):
                assert re.fullmatch(r"\[?RUN_ID(_[AB])?\]?", metavar), f"{path} {p.opts[0]}: {metavar}"
    assert seen > 50


def test_every_documented_schema_lists_its_fields_on_the_page():
    for kind, fields in out.SCHEMAS.items():
        section = re.search(rf"^### `isobench\.{re.escape(kind)}`.*?(?=^### |\Z)", DOC, re.S | re.M)
        assert section, f"docs/output.md has no section for isobench.{kind}"
        for field in fields:
            assert f"`{field}`" in section.group(0), f"isobench.{kind}: {field} not documented"


def test_a_document_without_its_documented_fields_is_refused():
    with pytest.raises(AssertionError, match="lacks"):
        out.document("runs", {})
    doc = json.loads(out.document("runs", {"runs": [{"x": float("nan")}]}))
    assert doc == {"schema": "isobench.runs", "version": out.SCHEMA_VERSION, "runs": [{"x": None}]}


@pytest.mark.parametrize(
    "text,seconds", [("4h", 14400), ("30m", 1800), ("1h30m", 5400), ("90s", 90), ("90", 90), ("2.5", 2.5)]
)
def test_durations_are_read_one_way(text, seconds):
    assert out.Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["soon", "30min", "-5", ""])
def test_not_durations(text):
    with pytest.raises(click.BadParameter):
        out.Duration().convert(text, None, None)


def test_fleet_durations_take_the_same_syntax():
    r = invoke("fleet", "run", "--timeout", "5s", "x.toml")
    assert r.exit_code == 2 and "'5s': give at least 10 s" in r.output


def test_columns_follow_COLUMNS_off_a_terminal(monkeypatch):
    from isobench.cli.common import columns

    monkeypatch.delenv("COLUMNS", raising=False)
    assert columns() == 100
    monkeypatch.setenv("COLUMNS", "123")
    assert columns() == 123
    monkeypatch.setenv("COLUMNS", "wide")
    assert columns() == 100


@pytest.fixture
def synthetic(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    write_run(s, Synthetic("c", seed=1, inject={("docker-nat", "fio", "iops"): 0.8}))
    s.close()
    return path


def _json(result, kind):
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == f"isobench.{kind}" and doc["version"] == out.version_of(kind)
    assert set(out.SCHEMAS[kind]) <= set(doc)
    return doc


def test_runs_json_counts_warmups_apart(synthetic):
    doc = _json(invoke("runs", "--store", synthetic, "--format", "json"), "runs")
    assert [r["run_id"] for r in doc["runs"]] == ["a", "c"]
    a = doc["runs"][0]
    assert a["warmups"] > 0 and a["samples"] > 0 and a["failed"] == 1  # the synthetic run's one failed sample
    r = invoke("runs", "--store", synthetic)
    assert "warm-ups" in r.output and str(a["warmups"]) in r.output


def test_report_json_is_table_one(synthetic, tmp_path):
    doc = _json(invoke("report", "a", "--store", synthetic, "--format", "json"), "report")
    assert doc["run"]["run_id"] == "a" and doc["run"]["baseline"] == "native"
    assert doc["cells"] and set(doc["cell_columns"]) == set(doc["cells"][0])
    # -o - is stdout; -o FILE the same text in a file
    same = invoke("report", "a", "--store", synthetic, "--format", "json", "-o", "-")
    assert same.stdout == invoke("report", "a", "--store", synthetic, "--format", "json").stdout
    target = tmp_path / "a.json"
    assert invoke("report", "a", "--store", synthetic, "--format", "json", "-o", str(target)).exit_code == 0
    assert json.loads(target.read_text()) == doc


def test_report_to_a_file_is_as_wide_as_COLUMNS(synthetic, tmp_path):
    for width in (80, 120):
        target = tmp_path / f"r{width}.txt"
        r = invoke("report", "a", "--store", synthetic, "-o", str(target), env={"COLUMNS": str(width)})
        assert r.exit_code == 0, r.output
        lines = target.read_text().splitlines()
        assert len(lines) > 20 and max(len(ln) for ln in lines) <= width


def test_compare_json_names_the_regression(synthetic):
    r = invoke("compare", "a", "c", "--store", synthetic, "--format", "json", "--fail-on-change", "5")
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["schema"] == "isobench.compare" and set(out.SCHEMAS["compare"]) <= set(doc)
    assert doc["regressions"] == ["fio/randread iops on docker-nat"]
    (cell,) = [c for c in doc["cells"] if c["regression"]]
    assert cell["verdict"] == "changed" and cell["direction"] == "worse" and cell["pct"] == pytest.approx(-20, abs=2)
    assert "regression: 1 cell changed for the worse" in r.stderr


def test_the_old_gate_spelling_works_and_says_it_is_deprecated(synthetic):
    r = invoke("compare", "a", "c", "--store", synthetic, "--fail-on-regression", "5")
    assert r.exit_code == 1 and "fio/randread iops on docker-nat" in r.stderr
    assert "note: compare --fail-on-regression is deprecated" in r.stderr
    helptext = invoke("compare", "--help").output
    assert "--fail-on-regression PCT" not in helptext  # hidden from the options,
    assert "--fail-on-regression, the old name of --fail-on-change" in " ".join(helptext.split())  # said once


def test_export_csv_dir_and_its_old_spelling(synthetic, tmp_path):
    r = invoke("export", "a", "--store", synthetic, "--dir", str(tmp_path / "new"))
    assert r.exit_code == 0 and (tmp_path / "new" / "cells.csv").exists() and "deprecated" not in r.output
    r = invoke("export", "a", "--store", synthetic, "-o", str(tmp_path / "old"))
    assert r.exit_code == 0 and (tmp_path / "old" / "cells.csv").exists()
    assert "export --format csv -o DIR is deprecated" in r.stderr
    r = invoke("export", "a", "--store", synthetic, "-o", "-")
    assert r.exit_code == 2 and "CSV is three files" in r.output


def _two(path, a_values, b_values):
    s = Store(path)
    simple_run(s, "run-a", {"native": a_values, "docker-nat": a_values})
    simple_run(s, "run-b", {"native": b_values, "docker-nat": b_values})
    s.close()


def test_a_blind_compare_fails_naming_the_cells_and_what_would_resolve_them(tmp_path):
    path = str(tmp_path / "n.sqlite")
    _two(path, NOISY, [v * 0.98 for v in reversed(NOISY)])
    junit = tmp_path / "c.xml"
    plain = invoke("compare", "run-a", "run-b", "--store", path, "--fail-on-change", "5")
    assert plain.exit_code == 0  # what a blind gate said before: green
    r = invoke(
        "compare",
        "run-a",
        "run-b",
        "--store",
        path,
        "--fail-on-change",
        "5",
        "--require-resolution",
        "5",
        "--junit",
        str(junit),
    )
    assert r.exit_code == out.EXIT_BLIND == 4  # blind, not a regression: its own status
    assert "blind: 2 of 2 primary cells could not have seen a change of 5%" in r.stderr
    line = next(ln for ln in r.stderr.splitlines() if "compression throughput_mbs on docker-nat:" in ln)
    # 1 s a sample (simple_run), 1 case in 2 environments: 2 s a round; no warm-up stored. Rounds
    # per run: no --budget, which stops when a run's own cells resolve, not when a compare of it would
    m = re.search(
        r"its interval is \u00b1(\d+\.\d)%; about (\d+) rounds \(4 times in 5, about (\d+) (s|min) here\) "
        r"would resolve it$",
        line,
    )
    assert m and float(m[1]) > 5, line
    rounds, seconds = int(m[2]), int(m[3]) * (60 if m[4] == "min" else 1)
    assert seconds == pytest.approx(rounds * 2, abs=60 if m[4] == "min" else 1)
    assert "--budget" not in r.stderr
    xml = junit.read_text()
    assert xml.count("<failure") == 2 and "<skipped" not in xml and "blind: could not have seen" in xml


def test_a_sharp_compare_passes_the_resolution_gate(tmp_path):
    path = str(tmp_path / "t.sqlite")
    _two(path, TIGHT, TIGHT)
    r = invoke("compare", "run-a", "run-b", "--store", path, "--require-resolution", "5", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["blind"] == [] and doc["require_resolution_pct"] == 5
    assert all(c["half_width_pct"] <= 5 for c in doc["cells"])


def test_one_cell_is_one_cell(tmp_path):
    path = str(tmp_path / "one.sqlite")
    s = Store(path)
    simple_run(s, "run-a", {"native": TIGHT}, envs=("native",))
    simple_run(s, "run-b", {"native": TIGHT}, envs=("native",))
    s.close()
    r = invoke("compare", "run-a", "run-b", "--store", path, "--format", "md")
    assert r.exit_code == 0, r.output
    assert "the 1 cell compared" in r.output and "1 cells" not in r.output


def test_history_json_and_a_short_history_is_blind(tmp_path):
    path = str(tmp_path / "h.sqlite")
    s = Store(path)
    for day in (1, 2):
        history_run(s, f"r{day}", day, 0.95, seed=day)
    s.close()
    assert invoke("history", "--store", path, "--fail-on-change", "5").exit_code == 0  # too short: was green
    r = invoke("history", "--store", path, "--format", "json", "--require-resolution", "5")
    assert r.exit_code == out.EXIT_BLIND
    doc = json.loads(r.stdout)
    assert doc["schema"] == "isobench.history" and set(out.SCHEMAS["history"]) <= set(doc)
    assert doc["newest_run"] == "r2" and len(doc["groups"][0]["series"][0]["points"]) == 2
    assert doc["blind"] and "a step needs at least 4" in doc["blind"][0]["why"]
    assert "blind: 1 of 1 primary cell of the newest run could not have shown a step of 5%" in r.stderr


def test_history_takes_a_study_file_as_well_as_a_name(tmp_path):
    path = str(tmp_path / "h.sqlite")
    s = Store(path)
    for day in (1, 2, 3):
        history_run(s, f"r{day}", day, 0.95, seed=day)
    s.close()
    study = tmp_path / "fake.toml"
    study.write_text('[study]\nname = "synthetic"\n\n[environments.native]\n\n[workloads.compression]\n')
    by_name = invoke("history", "synthetic", "--store", path, "--format", "json")
    by_file = invoke("history", str(study), "--store", path, "--format", "json")
    assert by_name.exit_code == 0, by_name.output
    assert by_file.exit_code == 0, by_file.output
    assert json.loads(by_file.stdout) == json.loads(by_name.stdout)


def test_fleet_list_json_on_an_empty_store(tmp_path):
    path = str(tmp_path / "f.sqlite")
    Store(path).close()
    assert _json(invoke("fleet", "list", "--store", path, "--format", "json"), "fleet-list") == {
        "schema": "isobench.fleet-list",
        "version": out.SCHEMA_VERSION,
        "hosts": [],
    }


def test_envs_and_doctor_json(monkeypatch):
    from types import SimpleNamespace

    from isobench.checks import doctor, noisepilot
    from isobench.envs import kinds

    monkeypatch.setattr(kinds, "probe_all", lambda: [SimpleNamespace(name="native", available=True, details="")])
    doc = _json(invoke("envs", "--format", "json"), "envs")
    assert doc["environments"] == [{"name": "native", "available": True, "details": ""}]
    monkeypatch.setattr(noisepilot, "without_a_run", lambda fresh, on_measure: (None, "no pilot in a test"))
    monkeypatch.setattr(doctor, "read_host", lambda: None)
    monkeypatch.setattr(doctor, "judge", lambda host: [doctor.Finding("governor", "warn", "powersave", "set it")])
    doc = _json(invoke("doctor", "--format", "json"), "doctor")
    assert doc["findings"][0] == {"check": "governor", "status": "warn", "value": "powersave", "fix": "set it"}
    assert len(doc["findings"]) == 2  # and the noise pilot's


def test_validate_json_and_its_words():
    quick = str(Path(__file__).resolve().parents[2] / "studies" / "quick.toml")
    doc = _json(invoke("validate", quick, "--format", "json"), "validate")
    assert doc["study"] == "quick" and doc["ok"] is True and len(doc["environments"]) == 3
    assert doc["size"]["samples"] > 0 and doc["size"]["estimated_s"] > 0 and doc["resolution"]
    text = invoke("validate", quick).stdout
    assert "3 environments" in text and "size: 3 environments (3 instances)" in text


def test_archive_is_the_name_and_export_run_still_works_for_a_release(synthetic, tmp_path):
    new, old = tmp_path / "new.run.json", tmp_path / "old.run.json"
    r = invoke("archive", "a", "--store", synthetic, "-o", str(new))
    assert r.exit_code == 0 and "deprecated" not in r.stderr, r.output
    r = invoke("export-run", "a", "--store", synthetic, "-o", str(old))
    assert r.exit_code == 0, r.output
    assert "export-run is deprecated and goes in the next release; use archive" in r.stderr
    assert json.loads(new.read_text())["samples"] == json.loads(old.read_text())["samples"]
    assert "export-run" not in invoke("--help").stdout  # hidden: the help names one command
