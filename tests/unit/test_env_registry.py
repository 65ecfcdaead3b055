"""A new environment kind is one module: a throwaway kind ("fake", in
envkinds/fake.py) put on the envs package's path is found by the registry,
accepted by the study model with its presets, listed by `isobench envs`,
started and used by the runner, footprinted by preflight and swept by clean.
Also: the shipped kinds answer the interface, and the core names none."""

import json
import pathlib
import sys

import pytest
from click.testing import CliRunner

import isobench.envs
from isobench.envs import kinds as registry
from isobench.host.hostinfo import HostInfo

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE.parent.parent / "src" / "isobench"
HOST = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The fake kind's module discovered from its own directory; forgotten
    afterwards so no other test sees a fourth kind."""
    monkeypatch.setattr(isobench.envs, "__path__", [*isobench.envs.__path__, str(HERE / "envkinds")])
    kinds = registry.kinds()
    assert "fake" in kinds, "the registry did not find envkinds/fake.py"
    module = sys.modules["isobench.envs.fake"]
    monkeypatch.setattr(type(kinds["fake"]), "scratch_roots", (str(tmp_path / "fake-root"),))
    module.EVENTS.clear()
    module.EXECS.clear()
    module.DISCARDING.clear()
    yield module
    registry.unregister("fake")
    sys.modules.pop("isobench.envs.fake", None)


def study_text(body: str) -> str:
    return '[study]\nname = "fakerun"\nrepetitions = 1\nwarmup = 0\nbaseline = "fake"\n' + body


def test_shipped_kinds_in_order_with_presets():
    kinds = registry.kinds()
    assert list(kinds)[:3] == ["native", "docker", "vm"]
    assert list(registry.presets())[:9] == [
        "native",
        "docker-nat",
        "docker-host",
        "docker-crun",
        "docker-gvisor",
        "docker-placebo",
        "vm-stock",
        "vm-tuned",
        "vm-docker",
    ]
    assert [k.name for k in kinds.values() if k.needs_image] == ["docker"]
    assert all(p.startswith("/") for k in kinds.values() for p in k.scratch_roots)


def test_fake_kind_in_the_study_model(fake):
    from isobench.study import StudyError, parse_study

    s = parse_study(
        study_text(
            '[environments.fake]\n[environments.big]\npreset = "fake-big"\ninstances = 2\n'
            "[environments.native]\n[workloads.startup]\n"
        ),
        "f.toml",
    )
    assert type(s.environments["fake"]).__name__ == "FakeSpec"
    assert s.environments["big"].reserve_mb == 4096 and s.environments["big"].instances == 2
    with pytest.raises(StudyError) as err:
        parse_study(study_text('[environments.fake]\n[environments.x]\nkind = "nope"\n[workloads.startup]\n'))
    assert (
        "must be one of native, docker, vm, fake (or name a preset: native, docker-nat, docker-host, "
        "docker-crun, docker-gvisor, docker-placebo, vm-stock, vm-tuned, vm-docker, fake, fake-big)" in str(err.value)
    )
    with pytest.raises(
        StudyError, match=r"environments\.fake\.cpus: unknown field; allowed: instances, kind, refuse, reserve_mb"
    ):
        parse_study(study_text("[environments.fake]\ncpus = 2\n[workloads.startup]\n"))


def test_fake_kind_listed_by_isobench_envs(fake, monkeypatch):
    from isobench.cli.main import main

    # the shipped kinds' probes start containers and guests: not in a unit test
    for kind in registry.kinds().values():
        if kind.name != "fake":
            monkeypatch.setattr(
                type(kind), "probe", lambda self: registry.EnvProbe(self.name, False, "not probed in a unit test")
            )
    result = CliRunner().invoke(main, ["envs"])
    assert result.exit_code == 0, result.output
    row = [line for line in result.output.splitlines() if " fake " in line]
    assert row and "host commands" in row[0], result.output
    assert sum("not probed in a unit test" in line for line in result.output.splitlines()) == 3, result.output


def test_preflight_counts_the_fake_kinds_footprint(fake):
    from isobench.checks.preflight import preflight
    from isobench.study import parse_study

    s = parse_study(
        study_text("[environments.fake]\nreserve_mb = 4096\ninstances = 2\n[workloads.startup]\n"), "f.toml"
    )
    (problem,) = preflight(s, HOST)  # 2 × 4 GiB > 80% of 8 GiB
    assert problem.startswith("f.toml: environments.fake.reserve_mb: 1 environments need 8.0 GiB of memory")
    assert preflight(parse_study(s.text.replace("instances = 2", "instances = 1"), "f.toml"), HOST) == []


def test_runner_starts_and_uses_the_fake_kind_and_clean_sweeps_it(fake, tmp_path):
    from isobench.run.clean import clean
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    study = parse_study(
        study_text(
            "[environments.fake]\n[workloads.startup]\n[workloads.compression]\nsize_mb = 1\nthreads = 1\nlevel = 0\n"
        ),
        "f.toml",
    )
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(study, store)
    rows = {r["workload"]: r for r in store.samples(run_id)}
    assert set(rows) == {"startup", "compression"}
    assert all(r["env"] == "fake" and r["status"] == "ok" for r in rows.values()), rows
    assert json.loads(rows["startup"]["vals"])["ready_s"] > 0
    assert json.loads(rows["compression"]["vals"])["real_s"] > 0
    assert store.load_run(run_id).env_facts["fake"]["kind"] == "fake"
    events = [e[0] for e in fake.EVENTS]
    assert events.index("start") < events.index("exec") < events.index("stop")
    assert ("startup", "fake") in fake.EVENTS and ("clean", run_id) in fake.EVENTS  # the runner's teardown
    # clean sweeps the kind's leftovers and its scratch root
    left = tmp_path / "fake-root" / "r0-gone"
    left.mkdir(parents=True)
    removed = clean("r0")
    assert "fake leftovers of r0" in removed and f"directory {left}" in removed and not left.exists()


def test_clean_keeps_the_scratch_of_a_live_run(fake, tmp_path):
    import subprocess

    from isobench.core import owner
    from isobench.run.clean import clean

    live, dead = tmp_path / "fake-root" / "r1-live", tmp_path / "fake-root" / "r2-dead"
    live.mkdir(parents=True)
    dead.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        mark = owner.Owner(sleeper.pid, owner.boot_id(), owner.started(sleeper.pid) or 0, "r1")
        (tmp_path / "r1.json").write_text(json.dumps(mark.__dict__))
        (tmp_path / "r2.json").write_text(json.dumps({**mark.__dict__, "run_id": "r2", "boot": "an-earlier-boot"}))
        keeper = owner.Keeper(str(tmp_path))
        removed = clean("r1", keeper) + clean("r2", keeper)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert live.exists() and keeper.kept == [f"directory {live}: run r1 is live (pid {sleeper.pid})"]
    assert not dead.exists() and f"directory {dead}" in removed


def test_workloads_clean_up_only_where_the_stop_would_not_take_it_all(fake, tmp_path):
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    study = parse_study(
        study_text(
            '[environments.fake]\n[environments.gone]\npreset = "fake"\n'
            "[workloads.compression]\nsize_mb = 1\nthreads = 1\nlevel = 0\n"
        ),
        "f.toml",
    )
    fake.DISCARDING.add("gone")  # its stop() takes the corpus with it; fake's does not say so
    store = Store(str(tmp_path / "r.sqlite"))
    run_study(study, store)
    assert {r["env"] for r in store.samples(store.latest_run_id()) if r["status"] == "ok"} == {"fake", "gone"}
    # compression's cleanup (rm, then rmdir of its directories) ran in fake only, before its stop
    cleanups = [name for name, argv in fake.EXECS if argv[0] == "rmdir"]
    assert cleanups == ["fake"], fake.EXECS
    assert ("stop", "gone") in fake.EVENTS
    assert not list((tmp_path / "fake-root").glob("*-gone")), "its stop() removed it all the same"


def test_containers_and_guests_discard_their_contents_the_host_does_not():
    from isobench.envs.docker import DockerEnvironment
    from isobench.envs.group import InstanceGroup
    from isobench.envs.native import NativeEnvironment
    from isobench.envs.vm.environment import VmEnvironment

    native, docker, vm = NativeEnvironment(name="n"), DockerEnvironment(name="d"), VmEnvironment(name="v")
    assert (native.discards_contents(), docker.discards_contents(), vm.discards_contents()) == (False, True, True)
    assert InstanceGroup(name="g", members=[docker, DockerEnvironment(name="d2")]).discards_contents()
    assert not InstanceGroup(name="g", members=[native, NativeEnvironment(name="n2")]).discards_contents()


def test_the_core_names_no_kind():
    """study, runner, preflight, clean and every CLI module loop over the registry."""
    cli = [str(p.relative_to(SRC)) for p in (SRC / "cli").glob("*.py")]
    for name in ("study.py", "run/runner.py", "checks/preflight.py", "run/clean.py", *cli):
        text = (SRC / name).read_text()
        for kind in ('"native"', '"docker"', '"vm"', "envs.vm", "envs.docker", "envs.native"):
            if name == "study.py" and kind == '"native"':
                text = text.replace('baseline: str = "native"', "")  # the default baseline's name
            assert kind not in text, f"{name} names {kind}"


def test_no_duck_typing_in_the_envs_package():
    for path in (SRC / "envs").rglob("*.py"):
        text = path.read_text()
        assert "hasattr(" not in text and "getattr(" not in text, path
    assert "hasattr(" not in (SRC / "workloads" / "startup.py").read_text()


def test_environment_capabilities_have_defaults():
    from isobench.core.proc import ExecResult
    from isobench.envs.base import Environment, Paths

    class Bare(Environment):
        def start(self): ...
        def exec(self, argv, timeout, cwd=None):
            return ExecResult(argv, 0, "", "", 0.0)

        def write_file(self, path, content): ...
        def stop(self): ...
        @property
        def paths(self):
            return Paths("/d", "/t")

    env = Bare(name="bare")
    assert env.instances() == [env] and env.vmm_pid is None and env.measure_startup(5) is None
    assert not env.discards_contents()  # a kind says so only where its stop() takes it all
    assert not env.attached and env.bench_ports == []
    env.pre_start()
    env.expose("198.19.0.1", [(80, "tcp")])
    assert env.attached and env.bench_addr == "198.19.0.1" and env.bench_ports == [(80, "tcp")]


def test_no_env_module_over_450_lines():
    sizes = {p.relative_to(SRC): len(p.read_text().splitlines()) for p in (SRC / "envs").rglob("*.py")}
    assert max(sizes.values()) <= 450, sizes


def test_a_kind_must_declare_its_name_on_its_spec():
    from typing import Literal

    from isobench.envs.kinds import EnvKind, EnvSpec

    class WrongSpec(EnvSpec):
        kind: Literal["other"] = "other"
        instances: int = 1

    with pytest.raises(TypeError, match="must declare kind = 'wrong'"):

        class Wrong(EnvKind):  # noqa: F841 - registering is the test
            name = "wrong"
            spec = WrongSpec

            def make(self, *a, **k): ...

    assert "wrong" not in registry.kinds()


def test_a_kinds_explain_settings_must_be_its_own_fields_and_preset():
    from typing import Literal

    from isobench.envs.kinds import EnvKind, EnvSpec

    class OwnSpec(EnvSpec):
        kind: Literal["own"] = "own"
        instances: int = 1
        network: str = "bridge"

    with pytest.raises(TypeError, match="environment kind 'own': setting field 'storage' is not one of its own"):

        class Typo(EnvKind):  # noqa: F841 - registering is the test
            name = "own"
            spec = OwnSpec
            settings = {"network": ("network",), "storage": ("storage",)}

            def make(self, *a, **k): ...

    with pytest.raises(TypeError, match="host_side preset 'own-host' is not one of its own"):

        class NoPreset(EnvKind):  # noqa: F841 - registering is the test
            name = "own"
            spec = OwnSpec
            settings = {"network": ("network",)}
            host_side = "own-host"

            def make(self, *a, **k): ...

    assert "own" not in registry.kinds()


def test_a_workload_the_kind_cannot_run_is_skipped_and_said(fake, tmp_path):
    """EnvKind.unsupported: the cells are never run (no failed samples), the
    run still ends complete, and validate and Table I say why."""
    from isobench.cli.main import main
    from isobench.results.table import UNSUPPORTED, build_table
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    text = study_text(
        '[environments.fake]\n[environments.boxed]\nkind = "fake"\nrefuse = ["compression"]\n'
        "[workloads.startup]\n[workloads.compression]\nsize_mb = 1\nthreads = 1\nlevel = 0\n"
    )
    study = parse_study(text, "f.toml")
    assert study.unsupported() == {("boxed", "compression"): "the fake sandbox has no such system call"}
    path = tmp_path / "f.toml"
    path.write_text(text)
    out = CliRunner().invoke(main, ["validate", str(path)]).output
    assert "not run: compression in boxed: the fake sandbox has no such system call" in out
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(study, store)
    rows = [(r["env"], r["workload"], r["status"]) for r in store.samples(run_id)]
    assert ("boxed", "compression") not in {(e, w) for e, w, _ in rows}
    assert {s for _, _, s in rows} == {"ok"} and ("boxed", "startup", "ok") in rows
    assert [r.status for r in store.list_runs() if r.run_id == run_id] == ["complete"]
    table = build_table(store.load_run(run_id))
    cells = {(row.key.workload, c.env): c for row in table.rows for c in row.cells}
    assert cells[("compression", "boxed")].status == UNSUPPORTED
    assert cells[("compression", "boxed")].text == "not supported"
    assert "boxed: compression not run: the fake sandbox has no such system call." in table.footnotes


def test_gvisor_refuses_netlat_up_front_and_nothing_else():
    from isobench.envs.kinds import kind_of

    docker = kind_of("docker")
    gvisor = docker.spec(runtime="runsc")
    assert "EINVAL" in docker.unsupported(gvisor, "netlat")
    assert docker.unsupported(gvisor, "compression") is None
    assert docker.unsupported(docker.spec(), "netlat") is None
    assert docker.unsupported(docker.spec(runtime="crun"), "netlat") is None


def test_a_resume_first_removes_the_runs_own_leftovers(fake, tmp_path):
    """issue 47: a resume after SIGKILL during prepare met its own container's name (409 Conflict)."""
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    study = parse_study(study_text("[environments.fake]\n[workloads.startup]\n"), "f.toml")
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(study, store)
    store.db.execute("DELETE FROM samples")  # as if killed before its first sample
    store.db.commit()
    fake.EVENTS.clear()
    assert run_study(study, store, resume=run_id) == run_id
    events = fake.EVENTS
    assert events.index(("clean", run_id)) < events.index(("start", "fake")), events
