"""Explain runs listed where users look (issue 53): `runs` names the run an
explain run explains, `report` of an explained run lists its explain runs
in every format (a section only there when some exist), and `history` of
the explained study shows them beside its series, never in them."""

import json

from tests.unit.test_explain_cli import STUDY, add_run, executed, invoke, original, store  # noqa: F401

from isobench.store.db import Store
from isobench.study import parse_study

SECTION = "Explained: which setting costs what"


def explained(store_path):
    r = invoke("explain", "orig", "--store", store_path)
    assert r.exit_code == 0, r.output
    return r.stdout.splitlines()[0]  # the answer line


def test_runs_names_the_run_an_explain_run_explains(store, executed):  # noqa: F811
    before = invoke("runs", "--store", store).stdout
    assert "explains" not in before  # a store without explain runs is listed as it was
    explained(store)
    table = invoke("runs", "--store", store).stdout
    [row] = [line for line in table.splitlines() if line.startswith("explain1")]
    assert "explains" in table.splitlines()[0] and " orig " in f"{row} "
    [orig] = [line for line in table.splitlines() if line.startswith("orig")]
    assert "explain1" not in orig
    doc = json.loads(invoke("runs", "--store", store, "--format", "json").stdout)
    assert {r["run_id"]: r["explains"] for r in doc["runs"]} == {"orig": None, "explain1": "orig"}


def test_report_of_an_explained_run_lists_its_explain_runs_in_every_format(store, executed, tmp_path):  # noqa: F811
    assert SECTION not in invoke("report", "orig", "--store", store).stdout
    assert json.loads(invoke("report", "orig", "--store", store, "--format", "json").stdout)["explain_runs"] == []
    line = explained(store)
    terminal = " ".join(invoke("report", "orig", "--store", store).stdout.split())
    assert SECTION in terminal and "run explain1 (docker-nat against native):" in terminal
    assert " ".join(line.split()) in terminal
    md = invoke("report", "orig", "--store", store, "--format", "md").stdout
    assert f"## {SECTION}" in md and "**run explain1 (docker-nat against native):**" in md
    assert "storage volume\u2192overlay" in md
    page = tmp_path / "r.html"
    assert invoke("report", "orig", "--store", store, "--format", "html", "-o", str(page)).exit_code == 0
    html = page.read_text()
    assert SECTION in html and "run explain1 (docker-nat against native):" in html
    doc = json.loads(invoke("report", "orig", "--store", store, "--format", "json").stdout)
    [run] = doc["explain_runs"]
    assert (run["run_id"], run["env"], run["baseline"], run["status"]) == (
        "explain1",
        "docker-nat",
        "native",
        "complete",
    )
    assert run["answers"][0]["line"] == line
    # the explain run's own report is unchanged: it explains, it is not explained
    assert SECTION not in invoke("report", "explain1", "--store", store).stdout


def test_history_shows_explain_runs_beside_the_series_they_explain(store, executed):  # noqa: F811
    explained(store)
    page = " ".join(invoke("history", "io", "--store", store).stdout.split())
    assert "Explained runs" in page and "run orig: explained by run explain1 (docker-nat against native)" in page
    assert "explain-ENV" in page  # and why they are not points of the series
    doc = json.loads(invoke("history", "io", "--store", store, "--format", "json").stdout)
    assert [(e["run_id"], e["explain"]["run_id"]) for e in doc["explained"]] == [("orig", "explain1")]
    assert all("explain1" not in g["runs"] for g in doc["groups"])
    md = invoke("history", "io", "--store", store, "--format", "md").stdout
    assert "## Explained runs" in md and "**run orig:** explained by run explain1" in md


def test_explain_links_read_the_fact_and_ignore_one_that_does_not_read(tmp_path):
    from isobench.store.links import explain_links

    s = Store(str(tmp_path / "s.sqlite"))
    study = parse_study(STUDY, "io.toml")
    add_run(s, "orig", study, {}, original)
    add_run(s, "e1", study, {"explain": {"explains": "orig", "env": "docker-nat", "baseline": "native"}}, original)
    add_run(s, "e2", study, {"explain": "text"}, original)
    add_run(s, "e3", study, {"note": "explain", "explain": {"explains": "orig"}}, original)  # no env: no explain
    assert explain_links(s) == {"e1": "orig"}
