from pathlib import Path

import pytest

from isobench.envs.docker import DockerSpec
from isobench.envs.native import NativeSpec
from isobench.study import StudyError, load_study, parse_study

GOOD = """
[study]
name = "t"
repetitions = 2
warmup = 0

[environments.native]
[environments.docker-nat]
[environments.docker-host]
[environments.limited]
kind = "docker"
cpus = 1.5

[workloads.compression]
size_mb = 8

[workloads.fio-deep]
workload = "fio"
size_mb = 64
"""

ROOT = Path(__file__).resolve().parents[2]


def err(text: str) -> str:
    with pytest.raises(StudyError) as info:
        parse_study(text, "s.toml")
    msg = str(info.value)
    assert "\n" not in msg, "errors are one line"
    assert msg.startswith("s.toml: ")
    return msg


def test_presets_expand_and_order_is_kept():
    study = parse_study(GOOD, "s.toml")
    assert list(study.environments) == ["native", "docker-nat", "docker-host", "limited"]
    assert isinstance(study.environments["native"], NativeSpec)
    nat, host = study.environments["docker-nat"], study.environments["docker-host"]
    assert (nat.network, nat.storage) == ("bridge", "overlay")
    assert (host.network, host.storage) == ("host", "volume")
    assert study.environments["limited"] == DockerSpec(cpus=1.5)
    assert [(w.key, w.workload) for w in study.workloads] == [("compression", "compression"), ("fio-deep", "fio")]
    assert study.workloads[1].params.size_mb == 64


def test_hash_follows_text():
    assert parse_study(GOOD).hash == parse_study(GOOD).hash
    assert parse_study(GOOD).hash != parse_study(GOOD.replace("repetitions = 2", "repetitions = 3")).hash


def test_misspelt_workload_field_names_file_field_and_allowed():
    msg = err(GOOD.replace("size_mb = 8", "sise_mb = 8"))
    assert "workloads.compression.sise_mb: unknown field" in msg
    assert "size_mb" in msg.split("allowed:")[1]


def test_misspelt_study_field():
    msg = err(GOOD.replace("repetitions = 2", "repetitons = 2"))
    assert "study.repetitons: unknown field" in msg and "repetitions" in msg


def test_impossible_values():
    assert "study.repetitions" in err(GOOD.replace("repetitions = 2", "repetitions = 0"))
    assert "environments.limited.cpus" in err(GOOD.replace("cpus = 1.5", "cpus = -1"))
    assert "environments.docker-nat.network" in err(
        GOOD.replace("[environments.docker-nat]", "[environments.docker-nat]\nnetwork = 'nat'")
    )


def test_unknown_kind_preset_workload_and_baseline():
    assert "environments.limited.kind" in err(GOOD.replace('kind = "docker"', 'kind = "lxc"'))
    assert "unknown preset" in err(GOOD.replace('kind = "docker"', 'preset = "docker-fast"'))
    assert "unknown workload 'fioo'" in err(GOOD.replace('workload = "fio"', 'workload = "fioo"'))
    assert "study.baseline" in err(GOOD.replace("warmup = 0", "warmup = 0\nbaseline = 'bare'"))


def test_bad_names_and_toml():
    assert "bad name" in err(GOOD.replace("[environments.limited]", "[environments.'Lim ited']"))
    assert "not valid TOML" in err("[study\nname='x'")
    assert "study: a [study] table" in err("[environments.native]\n[workloads.fio]\n")
    assert "unknown table" in err(GOOD + "\n[extras]\nx = 1\n")


def test_cpuset_refuses_shell_metacharacters():
    assert "environments.limited.cpuset" in err(GOOD.replace("cpus = 1.5", "cpuset = '0;rm -rf /'"))


def test_shipped_studies_validate(monkeypatch):
    # (no time limit here: speed targets live in benchmarks, not in unit tests on a shared host)
    from isobench.workloads import command_params

    asked = []
    monkeypatch.setattr(command_params, "debian_has", lambda name: asked.append(name) or True)
    paths = sorted((ROOT / "studies").rglob("*.toml"))
    assert {
        "ku2020-memory-pressure.toml",
        "vmware-redis-scaleout.toml",
        "insa2016-pxz.toml",
        "quick-docker-throttled.toml",
        "own-programs.toml",
    } <= {p.name for p in paths}
    for path in paths:
        load_study(path)
    assert asked == [
        "openssl",
        "libssl3",
        "libpython3.11-minimal",
        "p7zip-full",
    ]  # apt is asked only of packages isobench does not install


def test_unreadable_file():
    with pytest.raises(StudyError, match="cannot read"):
        load_study("/nonexistent/study.toml")
