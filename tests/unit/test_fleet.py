"""Fleet: inventory parsing (real ansible-inventory on INI and YAML files),
run transfer round trip, cross-host summary."""

import json
import math
from pathlib import Path

import pytest
from tests.synthetic_runs import simple_run

import isobench
from isobench.fleet import record
from isobench.fleet.controller import host_problems
from isobench.fleet.inventory import InventoryError, hosts_of, inventory_json
from isobench.report.fleet import build_fleet, cross_cell
from isobench.report.fleet_render import render_html, render_markdown
from isobench.store.db import Store
from isobench.store.transfer import TABLES, TransferError, export_run, import_run, read_export, write_export

INI = """
[lab]
h1 ansible_host=198.18.200.11
h2 ansible_host=198.18.200.12

[cloud]
c1 ansible_host=198.18.200.21 ansible_user=debian

[all:vars]
ansible_user=root
"""

YAML = """
all:
  children:
    lab:
      hosts:
        h1: {ansible_host: 198.18.200.11}
        h2: {ansible_host: 198.18.200.12}
    cloud:
      hosts:
        c1: {ansible_host: 198.18.200.21}
"""


@pytest.mark.parametrize("name,text", [("inv.ini", INI), ("inv.yml", YAML)])
def test_inventory_hosts_and_limit(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    inv = inventory_json(str(p))
    assert hosts_of(inv) == ["h1", "h2", "c1"]
    assert hosts_of(inv, "lab") == ["h1", "h2"]
    assert hosts_of(inv, "h*,c1") == ["h1", "h2", "c1"]
    assert hosts_of(inv, "!lab") == ["c1"]
    assert hosts_of(inv, "lab,!h2") == ["h1"]
    assert hosts_of(inv, "nomatch") == []
    assert inv["_meta"]["hostvars"]["h1"]["ansible_host"] == "198.18.200.11"


def test_inventory_with_no_hosts_and_missing_file(tmp_path):
    p = tmp_path / "empty.ini"
    p.write_text("[lab]\n")
    assert hosts_of(inventory_json(str(p))) == []
    with pytest.raises(InventoryError, match="no such inventory"):
        inventory_json(str(tmp_path / "absent.ini"))


def _store(tmp_path, name):
    return Store(str(tmp_path / name))


def test_transfer_round_trip_is_exact(tmp_path):
    a = _store(tmp_path, "a.sqlite")
    simple_run(a, "run-1", {"native": [10.0, 10.5, 9.5], "docker-nat": [9.0, 9.1, 8.9]})
    path = write_export(a, "run-1", tmp_path / "run.json")
    b = _store(tmp_path, "b.sqlite")
    assert import_run(b, read_export(path)) == "run-1"
    # every column of every row, samples in order; the host facts gain the
    # import's mark, which `run --resume` reads (a stranger's study stays data)
    theirs, ours = export_run(a, "run-1"), export_run(b, "run-1")
    facts = json.loads(ours["runs"][0]["host_facts"])
    assert set(facts.pop("imported")) == {"at"}
    ours["runs"][0]["host_facts"] = json.dumps(facts, sort_keys=True)
    assert ours == theirs
    for table in TABLES:
        assert ours[table] == theirs[table]
    assert b.load_run("run-1").values == a.load_run("run-1").values


def test_import_refuses_existing_id_unless_renamed(tmp_path):
    a = _store(tmp_path, "a.sqlite")
    simple_run(a, "run-1", {"native": [10.0, 11.0], "docker-nat": [9.0, 9.5]})
    doc = export_run(a, "run-1")
    with pytest.raises(TransferError, match="already exists.*--rename"):
        import_run(a, doc)
    assert import_run(a, doc, rename="run-2") == "run-2"
    assert a.load_run("run-2").values == a.load_run("run-1").values
    assert len(a.samples("run-2")) == len(a.samples("run-1"))


def test_import_rejects_foreign_columns_and_files(tmp_path):
    a = _store(tmp_path, "a.sqlite")
    simple_run(a, "run-1", {"native": [10.0, 11.0], "docker-nat": [9.0, 9.5]})
    doc = export_run(a, "run-1")
    doc["runs"][0]["x; DROP TABLE runs"] = 1
    with pytest.raises(TransferError, match="unknown column"):
        import_run(_store(tmp_path, "b.sqlite"), {**doc, "run_id": "z"}, rename="z")
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(TransferError, match="not an isobench run export"):
        read_export(bad)


def test_import_tags_the_host(tmp_path):
    a = _store(tmp_path, "a.sqlite")
    simple_run(a, "run-1", {"native": [10.0, 11.0], "docker-nat": [9.0, 9.5]})
    b = _store(tmp_path, "b.sqlite")
    import_run(b, export_run(a, "run-1"), tag={"host": "h1", "fleet_id": "f"})
    assert b.load_run("run-1").host_facts["fleet"] == {"host": "h1", "fleet_id": "f"}


def test_cross_cell_spread_and_outlier():
    c = cross_cell("w", "m", "docker-nat", False, [("h1", "a", 2.0), ("h2", "b", 3.0), ("h3", "c", 12.0)])
    assert c.spread_pp == pytest.approx(10.0)
    assert c.median_pct == pytest.approx(3.0)
    assert c.outlier == "h3"
    base = cross_cell("w", "m", "native", True, [("h1", "a", 100.0), ("h2", "b", 80.0), ("h3", "c", 101.0)])
    assert [round(v.pct, 3) for v in base.values] == [0.0, -20.0, 1.0]
    assert base.outlier == "h2"
    two = cross_cell("w", "m", "docker-nat", False, [("h1", "a", 2.0), ("h2", "b", math.nan)])
    assert math.isnan(two.spread_pp) and two.outlier == ""


def test_build_fleet_from_three_runs(tmp_path):
    s = _store(tmp_path, "a.sqlite")
    runs = []
    for host, nat in [("h1", 9.0), ("h2", 9.2), ("h3", 5.0)]:
        rid = simple_run(
            s, f"run-{host}", {"native": [10.0, 10.1, 9.9, 10.05], "docker-nat": [nat, nat * 1.01, nat * 0.99, nat]}
        )
        runs.append((host, s.load_run(rid)))
    rep = build_fleet("fleet-x", runs)
    assert rep.hosts == ("h1", "h2", "h3")
    nat = next(c for c in rep.cells if c.env == "docker-nat")
    assert nat.outlier == "h3"
    assert nat.spread_pp > 40
    md = render_markdown(rep)
    assert "| h1 | h2 | h3 |" in md.replace(" | spread | outlier |", " |")
    assert "<h1>Fleet fleet-x</h1>" in render_html(rep, None)


def test_record_and_host_run(tmp_path):
    s = _store(tmp_path, "a.sqlite")
    record.save(s, record.HostRecord("f1", "h1", "r1", record.PENDING, "", "s.toml", "inv"))
    record.save(s, record.HostRecord("f1", "h1", "r1", record.COMPLETE, "", "s.toml", "inv"))
    assert [r.status for r in record.hosts(s, "f1")] == [record.COMPLETE]
    assert record.is_fleet(s, "f1") and not record.is_fleet(s, "f2")
    assert record.host_run(s, "f1/h1") == "r1" and record.host_run(s, "r1") is None


def test_host_problems_one_line_per_host():
    events = [
        {
            "event": "runner_on_unreachable",
            "event_data": {
                "host": "h1",
                "res": {
                    "msg": "Failed to connect to the host via ssh: ssh: connect to host 198.18.200.11 port 22: No route"
                },
            },
        },
        {
            "event": "runner_on_failed",
            "event_data": {
                "host": "h2",
                "task": "host is Debian-like",
                "res": {"msg": "not Debian-like (os_family RedHat)"},
            },
        },
        {"event": "runner_on_failed", "event_data": {"host": "h2", "task": "later", "res": {"msg": "x"}}},
        {"event": "runner_on_failed", "event_data": {"host": "h3", "ignore_errors": True, "res": {"msg": "x"}}},
    ]
    out = host_problems(events)
    assert out["h1"][0] == record.UNREACHABLE and "No route" in out["h1"][1]
    assert out["h2"] == (record.FAILED, "host is Debian-like: not Debian-like (os_family RedHat)")
    assert "h3" not in out


def test_terminal_report_prints_host_names_literally(tmp_path):
    import io

    from rich.console import Console

    from isobench.report.fleet_render import render_terminal

    s = _store(tmp_path, "a.sqlite")
    runs = [
        (h, s.load_run(simple_run(s, f"r{i}", {"native": [10.0, 10.1, 9.9], "docker-nat": [9.0, 9.1, 8.9]})))
        for i, h in enumerate(["[red]evil[/red]", "h2"])
    ]
    buf = io.StringIO()
    render_terminal(build_fleet("f", runs), Console(file=buf, width=300))
    assert "[red]evil[/red]" in buf.getvalue()


def test_every_value_in_a_playbook_shell_line_is_quoted():
    """A shell line (become: true, as root on the target) may interpolate a
    variable only through `| quote`; the fixed install root is the one
    exception (defined in the playbook itself). Everything else is argv."""
    import re

    import yaml

    playbooks = Path(isobench.__file__).parent / "fleet" / "playbooks"
    checked = 0
    for book in playbooks.glob("*.yml"):
        for play in yaml.safe_load(book.read_text()):
            for task in play.get("tasks", []):
                line = task.get("ansible.builtin.shell")
                if line is None:
                    continue
                checked += 1
                for expr in re.findall(r"\{\{(.*?)\}\}", line):
                    names = set(re.findall(r"\bib_[a-z_]+", expr))
                    assert "quote" in expr or names <= {"ib_root"}, f"{book.name}: {task['name']}: {expr}"
    assert checked >= 3


def test_hostile_host_names_are_refused_by_the_identifier_check():
    from isobench.core.ids import BadIdentifier, check_host

    for bad in ("h1;id", "h$(id)", "a b", "*", "web,db", "h1\n", "-x", ""):
        with pytest.raises(BadIdentifier):
            check_host(bad, "inventory.ini: host")
    assert check_host("web-01.lab", "h") == "web-01.lab"


def start_line(extravars: dict, resume: bool = False) -> list[str]:
    """run.yml's line starting each host's `isobench run`, rendered by
    Ansible's own templating with the controller's variables, as argv."""
    import shlex

    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    book = Path(isobench.__file__).parent / "fleet" / "playbooks" / "run.yml"
    loader = DataLoader()
    (play,) = loader.load_from_file(str(book))
    task = next(t for t in play["tasks"] if t["name"].startswith("start the study"))
    trusted = {k: trust_as_template(v) if isinstance(v, str) else v for k, v in play["vars"].items()}
    state = {"stdout": "incomplete" if resume else "none"}
    variables = {**trusted, **extravars, "inventory_hostname": "h1", "ib_state_before": state}
    line = Templar(loader=loader, variables=variables).template(trust_as_template(task["ansible.builtin.shell"]))
    return shlex.split(line.split(" > ", 1)[0])  # the command, before its redirections


def test_each_host_s_run_carries_allow_packages_only_when_given():
    from isobench.fleet.controller import run_args

    runs = {"ib_runs": {"h1": "r1-h1"}}
    given = start_line({**runs, "ib_run_args": run_args(True)})
    assert given[:4] == ["nohup", "/opt/isobench-fleet/venv/bin/isobench", "run", "--no-progress"]
    assert given.count("--allow-packages") == 1 and given[-3:] == [
        "--run-id",
        "r1-h1",
        "/opt/isobench-fleet/bundle/study.toml",
    ]
    assert "--allow-packages" in start_line({**runs, "ib_run_args": run_args(True)}, resume=True)
    assert "--allow-packages" not in start_line({**runs, "ib_run_args": run_args(False)})
    assert start_line({**runs, "ib_run_args": []}) == start_line(runs)  # a controller from before the flag
    assert start_line(runs)[-2:] == ["r1-h1", "/opt/isobench-fleet/bundle/study.toml"]


def test_fleet_run_passes_allow_packages_to_the_controller(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from isobench.cli.main import main
    from isobench.fleet import controller

    seen = []

    def run_fleet(store, fleet_id, study, inventory, hosts, runs, *rest):
        seen.append(rest[-1])
        return [controller.Outcome(h, runs[h], record.COMPLETE, "") for h in hosts]

    monkeypatch.setattr(controller, "run_fleet", run_fleet)
    (tmp_path / "inv.ini").write_text(INI)
    (tmp_path / "s.toml").write_text(
        '[study]\nname = "f"\nrepetitions = 2\n[environments.native]\n[workloads.t]\ncommand = ["true"]\n'
    )
    store = str(tmp_path / "r.sqlite")
    args = ["fleet", "run", str(tmp_path / "s.toml"), "-i", str(tmp_path / "inv.ini"), "--store", store]
    given = CliRunner().invoke(main, [*args, "--allow-packages"])
    assert given.exit_code == 0, given.output
    assert CliRunner().invoke(main, args).exit_code == 0
    assert seen == [True, False]
