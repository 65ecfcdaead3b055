"""JSON from every command that prints a result (docs/output.md): reparse,
import, archive, clean, images build, fleet run, fleet clean and fleet list
each print one document with its schema and version and nothing else on
stdout; validate's numbers are numbers and its failure is a document too;
"more than the cap" rounds are null plus a flag; export's document has a
schema like the others."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import Synthetic, write_run

ROOT = Path(__file__).resolve().parents[2]
QUICK = str(ROOT / "studies" / "quick.toml")
DOC = (ROOT / "docs" / "output.md").read_text()


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_document(result, kind, status=0):
    """RESULT's stdout as exactly one JSON document of isobench.KIND, with
    every field docs/output.md lists for it."""
    assert result.exit_code == status, result.output
    doc = json.loads(result.stdout)  # one document, nothing before or after it
    assert doc["schema"] == f"isobench.{kind}" and doc["version"] == out.version_of(kind)
    assert set(out.SCHEMAS[kind]) <= set(doc), set(out.SCHEMAS[kind]) - set(doc)
    return doc


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    s.close()
    return path


def test_reparse_json(store):
    doc = one_document(invoke("reparse", "a", "--store", store, "--dry-run", "--format", "json"), "reparse")
    assert doc["dry_run"] is True and [r["run_id"] for r in doc["runs"]] == ["a"]
    run = doc["runs"][0]
    assert isinstance(run["reparsed"], int) and run["written"] is False and run["lines"]


def test_archive_and_import_json(store, tmp_path):
    target = tmp_path / "a.run.json"
    doc = one_document(invoke("archive", "a", "--store", store, "-o", str(target), "--format", "json"), "archive")
    assert doc["run_id"] == "a" and Path(doc["file"]) == target and target.exists()
    other = str(tmp_path / "other.sqlite")
    doc = one_document(invoke("import", str(target), "--store", other, "--format", "json"), "import")
    assert doc["run_id"] == "a" and doc["file"] == str(target)


def test_clean_json(monkeypatch):
    from isobench.checks import health
    from isobench.run import clean

    def sweep(keeper):
        keeper.kept.append("container isobench-y: run r is live (pid 7)")
        return ["container isobench-x", "iptables rule -A X"]

    monkeypatch.setattr(clean, "clean", sweep)
    monkeypatch.setattr(health, "forget_pending", lambda: None)
    doc = one_document(invoke("clean", "--format", "json"), "clean")
    assert doc["removed"] == ["container isobench-x", "iptables rule -A X"]
    assert doc["kept"] == ["container isobench-y: run r is live (pid 7)"]


def test_images_build_json_keeps_the_build_log_off_stdout(monkeypatch):
    import isobench.images
    from isobench.core import dockerclient

    def ensure(engine, force, log):
        log("step 1/3: debootstrap")
        return "isobench-debian:abc"

    monkeypatch.setattr(dockerclient, "engine", lambda: None)
    monkeypatch.setattr(isobench.images, "ensure_image", ensure)
    r = invoke("images", "build", "--format", "json")
    assert one_document(r, "images-build")["tag"] == "isobench-debian:abc"
    assert "step 1/3" in r.stderr


def _fleet(store, statuses):
    from isobench.fleet import record

    s = Store(store)
    for host, status in statuses.items():
        record.save(s, record.HostRecord("f1", host, f"r-{host}", status, "", QUICK, "inv.ini"))
    s.close()


def test_fleet_run_json(store, monkeypatch):
    from isobench.fleet import controller, record

    _fleet(store, {"h1": record.COMPLETE, "h2": record.FAILED})
    monkeypatch.setattr(
        controller,
        "run_fleet",
        lambda store, fleet_id, study, inv, hosts, runs, *a: [
            controller.Outcome(h, runs[h], record.FAILED, "ssh") for h in hosts
        ],
    )
    r = invoke("fleet", "run", "--resume", "f1", "--store", store, "--format", "json")
    doc = one_document(r, "fleet-run", status=1)  # a host that did not finish: exit 1, as the lines say
    assert doc["fleet_id"] == "f1" and doc["study"] == "quick" and doc["complete"] == 0
    assert doc["hosts"] == [{"host": "h2", "run_id": "r-h2", "status": record.FAILED, "detail": "ssh"}]
    assert "--resume f1" in doc["next"]


def test_fleet_run_json_with_nothing_to_resume(store):
    from isobench.fleet import record

    _fleet(store, {"h1": record.COMPLETE})
    doc = one_document(invoke("fleet", "run", "--resume", "f1", "--store", store, "--format", "json"), "fleet-run")
    assert doc["complete"] == 1 and doc["next"] == "nothing to resume"


def test_fleet_clean_json(monkeypatch, tmp_path):
    from isobench.fleet import controller, inventory

    monkeypatch.setattr(inventory, "inventory_json", lambda path: {})
    monkeypatch.setattr(inventory, "hosts_of", lambda inv, limit: ["h1", "h2"])
    monkeypatch.setattr(controller, "clean_fleet", lambda inv, hosts, forks: {"h2": ("unreachable", "no route")})
    r = invoke("fleet", "clean", "-i", str(tmp_path / "inv.ini"), "--format", "json")
    doc = one_document(r, "fleet-clean", status=1)
    assert doc["clean"] is False
    assert [(h["host"], h["clean"], h["cause"]) for h in doc["hosts"]] == [
        ("h1", True, None),
        ("h2", False, "no route"),
    ]


def test_fleet_list_with_no_fleets_says_so(store):
    assert one_document(invoke("fleet", "list", "--store", store, "--format", "json"), "fleet-list")["hosts"] == []
    r = invoke("fleet", "list", "--store", store)
    assert r.exit_code == 0 and r.stdout.startswith("no fleets stored yet"), repr(r.stdout)


def test_validate_json_repetitions_is_a_number():
    doc = one_document(invoke("validate", QUICK, "--format", "json"), "validate")
    assert doc["ok"] is True and doc["repetitions"] == 10  # studies/quick.toml: repetitions = 10
    # fio runs one sample at a time: whole periods of the 3-environment rotation
    assert doc["rounds_plan"] == {"mode": "fixed", "min": 10, "max": 12}
    assert doc["size"]["periods"] == {"workloads": ["fio"], "rounds": 12}
    assert doc["repetitions_text"] == "10 repetitions"
    doc = one_document(invoke("validate", QUICK, "--budget", "30m", "--format", "json"), "validate")
    assert doc["repetitions"] is None and doc["rounds_plan"]["mode"] == "budget"
    assert isinstance(doc["rounds_plan"]["min"], int) and isinstance(doc["rounds_plan"]["max"], int)


def test_a_failed_validate_prints_an_error_document_and_exits_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study]\nname = 'x'\nbogus = 1\n")
    r = invoke("validate", str(bad), "--format", "json")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["schema"] == "isobench.validate" and doc["version"] == 2
    assert doc["ok"] is False and doc["study_file"] == str(bad)
    assert doc["error"] and "\n" not in doc["error"] and doc["error"] in " ".join(r.stderr.split())
    assert invoke("validate", str(bad)).stdout == ""  # the terminal format: the line on stderr only


def test_more_rounds_than_the_cap_is_null_and_a_flag():
    from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP
    from isobench.results.numbers import beyond_cap, capped

    assert capped(ROUNDS_NEEDED_CAP + 1) is None and beyond_cap(ROUNDS_NEEDED_CAP + 1) is True
    assert capped(31) == 31 and beyond_cap(31) is False
    assert capped(None) is None and beyond_cap(None) is False
    assert "`rounds_needed_beyond_cap`" in DOC


def test_export_json_has_a_schema(store):
    r = invoke("export", "a", "--store", store, "--format", "json", "-o", "-")
    doc = json.loads(r.stdout)
    assert doc["schema"] == "isobench.export" and doc["version"] == 2
    assert "rounds_needed_beyond_cap" in doc["cell_columns"]


def test_export_csv_says_every_file_it_writes(store, tmp_path):
    r = invoke("export", "a", "--store", store, "--dir", str(tmp_path / "x"))
    assert r.exit_code == 0, r.output
    said = " ".join(r.stdout.split())
    for name in ("samples.csv", "cells.csv", "counters.csv"):
        assert (tmp_path / "x" / name).exists() and name in said


def test_every_document_is_listed_on_the_page():
    table = DOC.split("## Formats", 1)[1].split("\n## ", 1)[0]
    for kind in out.SCHEMAS:
        assert f"`isobench.{kind}`" in table, f"docs/output.md's table lacks isobench.{kind}"


def test_compare_html_writes_a_file_as_report_does(store, tmp_path, monkeypatch):
    s = Store(store)
    write_run(s, Synthetic("c", seed=2))
    s.close()
    monkeypatch.chdir(tmp_path)
    r = invoke("compare", "a", "c", "--store", store, "--format", "html")
    assert r.exit_code == 0, r.output
    page = tmp_path / "results" / "compare-a-c.html"
    assert page.read_text().startswith("<!") and "<html" not in r.stdout
    assert str(Path("results") / "compare-a-c.html") in r.output
    r = invoke("compare", "a", "c", "--store", store, "--format", "html", "-o", "-")
    assert "<html" in r.stdout  # -o - is stdout, as everywhere


def test_a_misspelt_field_is_refused_with_its_own_tables_fields(tmp_path):
    study = tmp_path / "m.toml"
    study.write_text(
        '[study]\nname = "m"\n[environments.native]\n[workloads.cmd]\nworkload = "command"\n'
        'command = ["true"]\n[workloads.cmd.metrics.eps]\nregex = "(\\\\d+)"\nhigher_is_better = true\nunits = "x"\n'
    )
    r = invoke("validate", str(study))
    assert r.exit_code == 2
    line = " ".join(r.stderr.split())
    assert "workloads.cmd.metrics.eps.units: unknown field; allowed: description, higher_is_better, json," in line
    allowed = line.split("allowed: ", 1)[1]
    assert "units" not in allowed.split(";")[0] and "command" not in allowed


def test_repetitions_1_is_warned_with_the_reason(tmp_path):
    from isobench.checks.resolution import one_round_warning
    from isobench.study import load_study

    text = Path(QUICK).read_text().replace("repetitions = 10", "repetitions = 1")
    (tmp_path / "one.toml").write_text(text)
    (warning,) = one_round_warning(load_study(str(tmp_path / "one.toml")))
    assert "repetitions = 1" in warning and "no paired test" in warning
    assert one_round_warning(load_study(QUICK)) == []
    r = invoke("validate", str(tmp_path / "one.toml"))
    assert "warning: repetitions = 1" in r.stdout


def test_envs_lists_the_presets_and_try_points_to_it(monkeypatch):
    from types import SimpleNamespace

    from isobench.envs import kinds

    monkeypatch.setattr(kinds, "probe_all", lambda: [SimpleNamespace(name="native", available=True, details="")])
    doc = one_document(invoke("envs", "--format", "json"), "envs")
    by_name = {p["name"]: p for p in doc["presets"]}
    assert set(by_name) == set(kinds.presets())
    assert by_name["docker-host"] == {
        "name": "docker-host",
        "kind": "docker",
        "sets": {"network": "host", "storage": "volume"},
    }
    terminal = invoke("envs")
    assert "docker-host" in terminal.stdout and "network = host" in terminal.stdout
    assert "isobench envs" in " ".join(invoke("try", "--help").output.split())
