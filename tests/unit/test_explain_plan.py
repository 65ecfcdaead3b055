"""`isobench explain`'s variant construction (run/explainplan.py), pure and
on the shipped presets and studies: the settings an environment differs
from its baseline in, one variant per setting with just that setting moved
to the baseline's side, one with all of them moved, tables narrowed to the
explained cells, and the follow-up study valid as any study is."""

from pathlib import Path

import pytest

from isobench.envs.docker_spec import DockerSpec
from isobench.envs.kinds import kind_of, presets
from isobench.envs.runtimes import GVISOR_DEFAULT_PLATFORM
from isobench.envs.vm.spec import VmSpec
from isobench.run.explainplan import ExplainError, build_plan, moved, moves, narrowed, source_of

ROOT = Path(__file__).resolve().parents[2]


def shipped(name: str):
    return source_of("r1", (ROOT / "studies" / f"{name}.toml").read_text(), str(ROOT / "studies"))


def of(source, env: str, names=()):
    st = source.study
    base = st.meta.baseline
    return moves(env, st.environments[env], base, st.environments[base], tuple(names))


def plan(source, env: str, cells, names=(), schedule="sequential"):
    return build_plan(source, env, cells, of(source, env, names), rounds=5, warmup=1, schedule=schedule)


def test_docker_nat_against_native_differs_in_six_settings_and_the_joint_is_the_placebo():
    source = shipped("quick")
    found = of(source, "docker-nat")
    assert [m.label for m in found] == [
        "network host\u2192bridge",
        "storage volume\u2192overlay",
        "seccomp unconfined\u2192default",
        "apparmor unconfined\u2192default",
        "pid host\u2192private",
        "ipc host\u2192private",
    ]
    p = plan(source, "docker-nat", [("fio", "randwrite")])
    envs = p.study.environments
    assert list(envs)[:2] == ["native", "docker-nat"] and p.joint == "all-back"
    nat = envs["docker-nat"]
    for m in p.moves:  # each variant: docker-nat with that one setting on the host's side, nothing else
        ((field, value),) = m.there
        assert envs[m.variant] == nat.model_copy(update={field: value}), m.setting
    placebo = DockerSpec(**kind_of("docker").presets["docker-placebo"])
    assert envs["all-back"] == placebo and placebo.least_isolation
    assert p.study.meta.baseline == "native" and p.study.meta.repetitions == 5 and p.study.meta.warmup == 1
    assert p.study.meta.name == "explain-docker-nat"
    fact = p.fact()
    assert fact["explains"] == "r1" and fact["cells"] == [["fio", "randwrite"]] and fact["joint"] == "all-back"
    assert fact["settings"][1] == {
        "setting": "storage",
        "variant": "storage-back",
        "label": "storage volume\u2192overlay",
        "from": {"storage": "volume"},
        "to": {"storage": "overlay"},
    }


def test_docker_host_differs_from_native_only_in_its_namespaces_and_profiles():
    assert [m.setting for m in of(shipped("quick"), "docker-host")] == ["seccomp", "apparmor", "pid", "ipc"]


def test_the_same_kind_as_baseline_moves_to_the_baselines_own_values():
    source = source_of(
        "r2",
        '[study]\nname = "g"\nbaseline = "docker-nat"\n[environments.docker-nat]\n[environments.docker-gvisor]\n'
        "[workloads.startup]\n",
        ".",
    )
    [runtime] = of(source, "docker-gvisor")
    assert runtime.setting == "runtime" and runtime.label == f"runtime runc\u2192runsc/{GVISOR_DEFAULT_PLATFORM}"
    p = plan(source, "docker-gvisor", [("startup", "default")])
    assert p.joint is None  # one setting: nothing to interact with
    assert p.study.environments["runtime-back"] == p.study.environments["docker-nat"]  # the platform moves with it


def test_a_vm_moves_its_tuning_toward_vm_tuned():
    source = source_of(
        "r3",
        '[study]\nname = "v"\n[environments.native]\n[environments.vm-stock]\n[environments.vm-tuned]\n'
        "[workloads.startup]\n",
        ".",
    )
    assert [m.setting for m in of(source, "vm-stock")] == ["cpu-model", "topology", "pin", "hugepages"]
    p = plan(source, "vm-stock", [("startup", "default")])
    assert p.study.environments["all-back"] == VmSpec(**kind_of("vm").presets["vm-tuned"])
    assert p.study.environments["hugepages-back"] == VmSpec(hugepages="on")
    with pytest.raises(ExplainError, match="^vm-tuned differs from native in no setting explain can move"):
        plan(source, "vm-tuned", [("startup", "default")])


def test_every_shipped_preset_against_native_makes_a_valid_study_or_says_why_not():
    for preset, body in presets().items():
        if body["kind"] == "native":
            continue
        source = source_of(
            "r4", f'[study]\nname = "p"\n[environments.native]\n[environments.{preset}]\n[workloads.startup]\n', "."
        )
        try:
            p = plan(source, preset, [("startup", "default")])
        except ExplainError as exc:
            assert "no setting explain can move" in str(exc) and "\n" not in str(exc)
            continue
        assert len(p.study.environments) == 2 + len(p.moves) + (p.joint is not None)
        for m in p.moves:
            assert p.study.environments[m.variant] == moved(p.study.environments[preset], [m])


def test_named_settings_only_and_the_ones_that_make_no_sense_refused():
    source = shipped("quick")
    assert [m.setting for m in of(source, "docker-nat", ["storage", "network"])] == ["network", "storage"]
    with pytest.raises(ExplainError) as err:
        of(source, "docker-nat", ["hugepages"])
    assert str(err.value) == (
        "--setting hugepages: a docker environment has no such setting; its settings: network, storage, "
        "seccomp, apparmor, pid, ipc, runtime, cpus, memory"
    )
    with pytest.raises(ExplainError, match="^--setting network: docker-host does not differ from native in it; "):
        of(source, "docker-host", ["network"])
    p = plan(source, "docker-nat", [("fio", "randwrite")], ["storage"])
    assert [m.variant for m in p.moves] == ["storage-back"] and p.joint is None


def test_tables_are_narrowed_to_the_explained_cases_where_a_field_says_so():
    source = shipped("network-quick")
    assert narrowed(source, "redis", ["clients=16"])["clients"] == [16]
    assert narrowed(source, "oltp", ["threads=1", "threads=16"])["threads"] == [1, 16]
    assert narrowed(source, "netlat", ["tcp"])["cases"] == ["tcp"]
    quick = shipped("quick")
    assert narrowed(quick, "fio", ["randwrite"])["cases"] == ["randwrite"]
    assert narrowed(quick, "compression", ["default"]) == quick.raw["workloads"]["compression"]  # nothing to narrow
    p = plan(source, "docker-nat", [("redis", "clients=16")])
    [entry] = p.study.workloads
    assert entry.key == "redis" and entry.params.clients == (16,)


def test_the_follow_up_keeps_the_analysis_settings_and_the_explained_tables_only():
    source = source_of(
        "r5",
        '[study]\nname = "k"\ntolerance_pct = 3\nnoise_floor_pct = { fio = 4, startup = 9 }\n'
        '[environments.native]\n[environments.docker-host]\n[environments.storage-back]\npreset = "docker-nat"\n'
        "[workloads.fio]\n[workloads.startup]\n",
        ".",
    )
    p = plan(source, "storage-back", [("fio", "randwrite")], schedule="duet")
    meta = p.study.meta
    assert meta.tolerance_pct == 3 and meta.noise_floor_pct == {"fio": 4}
    assert meta.schedule == "duet" and [e.key for e in p.study.workloads] == ["fio"]
    assert "docker-host" not in p.study.environments  # only the baseline, the environment and its variants
    # a variant's name the environment already has is not taken again
    assert [m.variant for m in p.moves][:2] == ["network-back", "x-storage-back"]


def test_a_study_that_cannot_be_rebuilt_is_one_line():
    with pytest.raises(ExplainError) as err:
        source_of("imp1", '[study]\nname = "x"\n[environments.native]\n[workloads.nosuch]\n', ".")
    msg = str(err.value)
    assert msg.startswith("run imp1: its stored study cannot be rebuilt here (") and "\n" not in msg
    assert msg.endswith("run the study here, then explain that run")


def test_an_explain_of_a_command_that_ran_as_a_duet_runs_as_one():
    """A command table is decided from its warm-up (duet_mode "auto"), so
    before that its `duets` is False: explain asked it and ran own-programs'
    7-Zip one sample at a time (explain-docker-gvisor-4847, where 7-Zip
    moves ±40%), though the run had measured it as a duet."""
    import os

    from isobench.run.explain import _duets

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a duet needs two CPUs")
    source = shipped("own-programs")
    assert _duets(plan(source, "docker-gvisor", [("sevenzip", "default")], ("runtime",), schedule="duet"))
    assert not _duets(plan(source, "docker-gvisor", [("fio-json", "default")], ("runtime",), schedule="duet"))
