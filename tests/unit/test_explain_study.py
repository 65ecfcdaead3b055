"""A study that asks for the attribution itself (issue 53): `[explain] envs
= [...], settings = [...]`, checked when the study is parsed (one line
naming the field and what would work), shown by `validate` with its time,
and after `isobench run` each changed primary cell of those environments
explained exactly as `isobench explain RUN_ID --env ENV` would."""

import json

import pytest
from tests.unit.test_explain_cli import STUDY, add_run, executed, invoke, original  # noqa: F401

import isobench.cli.execution as execution
from isobench.envs.docker import DockerKind
from isobench.study import StudyError, parse_study

VM = "[environments.vm-stock]\n"


def study(explain: str, extra: str = "") -> str:
    return STUDY.replace("[workloads.fio]", extra + "[workloads.fio]") + f"[explain]\n{explain}\n"


@pytest.mark.parametrize(
    ("explain", "extra", "targets"),
    [
        ('envs = ["docker-nat"]\nsettings = ["network", "storage"]', "", {"docker-nat": ("network", "storage")}),
        ('envs = ["docker-nat"]', "", {"docker-nat": ()}),  # every setting: explain's own default
        ("", "", {"docker-nat": (), "docker-host": ()}),  # every environment that differs
        ('settings = ["network"]', "", {"docker-nat": ("network",)}),  # docker-host has host networking
        ('settings = ["storage", "network"]', "", {"docker-nat": ("storage", "network")}),
        ('envs = ["vm-stock"]', VM, {"vm-stock": ()}),
    ],
)
def test_the_study_says_what_to_explain(explain, extra, targets):
    assert parse_study(study(explain, extra), "s.toml").explain == targets
    assert parse_study(STUDY, "s.toml").explain == {}  # no [explain]: nothing after the run


@pytest.mark.parametrize(
    ("explain", "extra", "line"),
    [
        (
            'envs = ["docker-nta"]',
            "",
            "s.toml: explain.envs: 'docker-nta' is not one of the environments; name one of: docker-nat, docker-host",
        ),
        (
            'envs = ["native"]',
            "",
            "s.toml: explain.envs: native is the baseline, what explain measures against; "
            "name one of: docker-nat, docker-host",
        ),
        (
            'envs = ["docker-nat"]\nsettings = ["hugepages"]',
            "",
            "s.toml: explain.settings: 'hugepages': a docker environment (docker-nat) has no such setting; "
            "its settings: network, storage, seccomp, apparmor, pid, ipc, runtime, cpus, memory",
        ),
        (
            'settings = ["network"]',
            VM,
            "s.toml: explain.settings: 'network': a vm environment (vm-stock) has no such setting; its settings: ",
        ),
        (
            'envs = ["docker-host"]\nsettings = ["network"]',
            "",
            "s.toml: explain.envs: docker-host differs from native in no setting asked (network) explain can "
            "move; it differs in: seccomp, apparmor, pid, ipc",
        ),
        ('env = ["docker-nat"]', "", "s.toml: explain.env: unknown field; allowed: envs, settings"),
        ("envs = []", "", "s.toml: explain.envs: name at least one, or leave the field out for every one"),
    ],
)
def test_a_bad_explain_table_is_one_line_naming_the_field(explain, extra, line):
    with pytest.raises(StudyError) as err:
        parse_study(study(explain, extra), "s.toml")
    assert str(err.value).startswith(line) and "\n" not in str(err.value)


def test_validate_shows_the_explain_and_counts_its_time(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(study('envs = ["docker-nat"]\nsettings = ["network", "storage"]'))
    text = " ".join(invoke("validate", str(path)).stdout.split())
    assert "explain: after the run, each changed primary cell of docker-nat taken apart by network, storage " in text
    assert "(5 environments): at most about " in text and "with the explains: at most about " in text
    doc = json.loads(invoke("validate", str(path), "--format", "json").stdout)
    [env] = doc["explain"]["envs"]
    assert (env["env"], env["settings"], env["environments"]) == ("docker-nat", ["network", "storage"], 5)
    assert doc["explain"]["estimated_total_s"] == pytest.approx(doc["size"]["estimated_s"] + env["estimated_s"], 0.01)
    path.write_text(STUDY)
    assert json.loads(invoke("validate", str(path), "--format", "json").stdout)["explain"] is None


@pytest.fixture
def ran(executed, monkeypatch):  # noqa: F811
    """`isobench run` stood in for: the study's own run stored as 'orig'
    (docker-nat's randwrite changed), each explain as test_explain_cli's."""
    explain = execution.execute

    def execute(study, store, progress, *args, **kw):
        if kw.get("facts"):
            return explain(study, store, progress, **kw)
        add_run(store, "orig", study, {"hostname": "bench1"}, original)
        return "orig"

    monkeypatch.setattr(execution, "execute", execute)
    monkeypatch.setattr("isobench.host.facts.host_facts", lambda: {"hostname": "bench1"})
    monkeypatch.setattr(DockerKind, "check", lambda self, spec: [])
    return executed


def test_run_goes_on_to_explain_as_explain_would(ran, tmp_path):
    path, store, md = tmp_path / "s.toml", str(tmp_path / "s.sqlite"), tmp_path / "r.md"
    path.write_text(study('envs = ["docker-nat"]\nsettings = ["storage"]'))
    r = invoke("run", str(path), "--store", store, "-o", str(md))
    assert r.exit_code == 0, r.output
    [(follow, kw)] = ran
    assert list(follow.environments) == ["native", "docker-nat", "storage-back"]
    assert kw["facts"]["explain"]["explains"] == "orig"
    said = " ".join(r.stdout.split())
    assert "docker-nat fio randwrite \u2212" in said and "storage volume\u2192overlay" in said
    assert "run orig is explained by run(s) explain1: `isobench report orig` lists them" in said
    assert "Explained: which setting costs what" in md.read_text()  # the report, written again with it
    # exactly what `isobench explain RUN_ID --env ENV --setting ...` builds
    assert invoke("explain", "orig", "--store", store, "--env", "docker-nat", "--setting", "storage").exit_code == 0
    assert ran[1][0].text == follow.text and ran[1][1]["facts"] == kw["facts"]


def test_an_asked_environment_with_no_changed_cell_is_said_and_the_run_stands(ran, tmp_path):
    path, store = tmp_path / "s.toml", str(tmp_path / "s.sqlite")
    path.write_text(study(""))  # docker-nat and docker-host; only docker-nat's randwrite changed
    r = invoke("run", str(path), "--store", store, "-o", str(tmp_path / "r.md"))
    assert r.exit_code == 0, r.output
    assert [list(s.environments)[1] for s, _ in ran] == ["docker-nat"]
    assert "note: explain: docker-host has no changed primary cell in run orig: nothing of it to explain" in (
        " ".join(r.stderr.split())
    )


def test_a_study_without_explain_runs_none(ran, tmp_path):
    path, store = tmp_path / "s.toml", str(tmp_path / "s.sqlite")
    path.write_text(STUDY)
    r = invoke("run", str(path), "--store", store, "-o", str(tmp_path / "r.md"))
    assert r.exit_code == 0 and not ran and "explained by" not in r.stdout
