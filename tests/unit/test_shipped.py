"""An installable tool (docs/install.md): the wheel carries the shipped
studies and the host preparation scripts; `isobench studies` lists the
studies; a shipped study's name works wherever a study file does, from any
directory; a path still works; a name that is neither is one line listing
the shipped names."""

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.core import shipped

ROOT = Path(__file__).resolve().parents[2]


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_shipped_studies_are_the_clones():
    # (the wheel itself, built by the fleet's command, is checked by hand: docs/install.md)
    names = shipped.shipped_studies()
    assert {p.stem for p in (ROOT / "studies").glob("*.toml")} == set(names)
    assert names["quick"].read_bytes() == (ROOT / "studies" / "quick.toml").read_bytes()
    for script in ("install-host.sh", "start-dockerd.sh"):
        assert shipped.script(script).read_bytes() == (ROOT / "scripts" / script).read_bytes()


def test_package_data_names_every_shipped_file():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["isobench"]
    pkg = ROOT / "src" / "isobench"
    matched = {p.resolve() for g in globs for p in pkg.glob(g) if p.is_file()}
    wanted = [
        *shipped.shipped_studies().values(),
        shipped.script("install-host.sh"),
        shipped.script("start-dockerd.sh"),
    ]
    assert [str(w) for w in wanted if w.resolve() not in matched] == []


def test_studies_lists_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = json.loads(invoke("studies", "--format", "json").stdout)
    assert doc["schema"] == "isobench.studies" and doc["version"] == out.SCHEMA_VERSION
    quick = next(s for s in doc["studies"] if s["name"] == "quick")
    assert Path(quick["file"]).is_file() and quick["description"]
    terminal = invoke("studies")
    assert terminal.exit_code == 0 and "quick" in terminal.stdout and "vm-quick" in terminal.stdout


@pytest.mark.parametrize("command", [("validate",), ("run",), ("calibrate",), ("fleet", "run")])
def test_a_name_that_is_neither_is_one_line_listing_the_shipped_names(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke(*command, "quik")
    assert r.exit_code == 2 and r.stdout == ""
    line = " ".join(r.stderr.split())
    assert line.startswith("error: quik: neither a study file nor a shipped study; shipped: ")
    assert re.search(r"shipped: .*\bquick\b.*\bvm-quick\b", line) and "isobench studies" in line


def test_validate_takes_a_name_from_any_directory_and_a_path_still(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_name = json.loads(invoke("validate", "quick", "--format", "json").stdout)
    assert by_name["ok"] is True and by_name["study"] == "quick"
    assert Path(by_name["study_file"]).resolve() == (ROOT / "studies" / "quick.toml").resolve()
    mine = tmp_path / "quick"  # a file of the name here is run only as a path: ./quick
    mine.write_text((ROOT / "studies" / "quick.toml").read_text().replace('name = "quick"', 'name = "mine"'))
    assert json.loads(invoke("validate", "./quick", "--format", "json").stdout)["study"] == "mine"
    path = str(ROOT / "studies" / "vm-quick.toml")
    assert json.loads(invoke("validate", path, "--format", "json").stdout)["study_file"] == path
    r = invoke("validate", "missing.toml")  # a path: the loader's own line, as before
    assert r.exit_code == 2 and "missing.toml" in r.stderr and "shipped" not in r.stderr


@pytest.mark.parametrize("command", [("validate",), ("run",), ("calibrate",), ("fleet", "run")])
def test_a_bare_name_never_runs_a_file_of_the_working_directory(command, tmp_path, monkeypatch):
    """Issue 55: `cd /tmp/x; isobench run quick` ran a stranger's /tmp/x/quick.
    A bare name is a shipped study's; a file is run only by its path."""
    monkeypatch.chdir(tmp_path)
    planted = '[study]\nname = "planted"\n'  # never runnable: nothing here may start a run, fixed or not
    (tmp_path / "quick").write_text(planted)
    (tmp_path / "quik").write_text(planted)
    assert shipped.study_path("quick") == str(shipped.shipped_studies()["quick"])
    assert (shipped.study_path("./quick"), shipped.study_path("mine.toml")) == ("./quick", "mine.toml")
    r = invoke(*command, "quik")
    line = " ".join(r.stderr.split())
    assert r.exit_code == 2 and line.startswith("error: quik: neither a study file nor a shipped study; shipped: ")
    assert line.endswith("; to run the file quik here, write ./quik")
