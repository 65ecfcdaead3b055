"""The runtime option of the docker kind: daemon.json merge, spec, presets,
refusal messages (no engine: pure functions and the study model)."""

from __future__ import annotations

import json

import pytest

from isobench.envs import runtimes as rt
from isobench.envs.docker import DockerKind, DockerSpec
from isobench.host import daemonconf
from isobench.study import StudyError, parse_study

STUDY = '[study]\nname = "r"\nrepetitions = 1\nwarmup = 0\n{envs}\n[workloads.startup]\n'


def test_merge_keeps_other_keys_and_runtimes():
    conf = {"debug": True, "bip": "203.0.113.1/24", "runtimes": {"kata": {"path": "/opt/kata"}}}
    merged = daemonconf.merge(conf, {"crun": {"path": "/usr/bin/crun"}})
    assert merged["debug"] is True
    assert merged["bip"] == "198.18.0.1/24"
    assert merged["runtimes"] == {"kata": {"path": "/opt/kata"}, "crun": {"path": "/usr/bin/crun"}}
    assert conf["runtimes"] == {"kata": {"path": "/opt/kata"}}  # input untouched
    assert "runtimes" not in daemonconf.merge({}, {})


def test_runtime_entries_only_for_installed_binaries():
    found = {"crun": "/usr/bin/crun", "runsc": "/usr/bin/runsc"}
    entries = daemonconf.runtime_entries(which=found.get)
    assert entries["crun"] == {"path": "/usr/bin/crun"}
    assert entries["runsc"] == {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace", "--network=host"]}
    assert daemonconf.runtime_entries(which=lambda name: None) == {}


def test_update_file_reports_what_changed(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"log-level": "warn"}))
    assert daemonconf.update_file(str(path), {}) == (True, False)  # base keys: a restart
    assert daemonconf.update_file(str(path), {}) == (False, False)
    assert daemonconf.update_file(str(path), {"crun": {"path": "/usr/bin/crun"}}) == (True, True)  # SIGHUP
    conf = json.loads(path.read_text())
    assert conf["log-level"] == "warn" and conf["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert daemonconf.main([str(path)]) == 0


def test_update_file_refuses_a_non_object(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text("[1]")
    with pytest.raises(ValueError, match="not a JSON object"):
        daemonconf.update_file(str(path), {})


def test_spec_defaults_presets_and_engine_names():
    assert DockerSpec().runtime == "runc"
    assert DockerKind.presets["docker-crun"]["runtime"] == "crun"
    assert DockerKind.presets["docker-gvisor"]["runtime"] == "runsc"
    assert rt.engine_name("runc") == "runc" and rt.engine_name("runsc", "ptrace") == "runsc"


def test_unknown_runtime_refused_naming_the_field():
    with pytest.raises(StudyError) as err:
        parse_study(STUDY.format(envs='[environments.d]\nkind = "docker"\nruntime = "kata"\n'), "s.toml")
    line = str(err.value)
    assert "environments.d.runtime" in line and "unknown runtime 'kata'" in line and "runc, crun, runsc" in line
    assert "\n" not in line.strip()


def test_gvisor_platform_only_with_runsc():
    with pytest.raises(StudyError, match=r"environments\.d.*gvisor_platform is for runtime"):
        parse_study(
            STUDY.format(envs='[environments.d]\nkind = "docker"\nruntime = "crun"\ngvisor_platform = "ptrace"\n'),
            "s.toml",
        )


def test_engine_error_reduced_to_one_line():
    raw = (
        "500 Server Error for http+docker://localhost/v1.41/containers/x/start: Internal Server Error "
        '("failed to create shim: OCI runtime create failed: cgroups in hybrid mode not supported, drop '
        'all controllers from cgroupv2: unknown")'
    )
    assert rt.one_line(raw) == (
        "failed to create shim: OCI runtime create failed: cgroups in hybrid mode not "
        "supported, drop all controllers from cgroupv2: unknown"
    )
    assert len(rt.one_line("x" * 1000)) == 240


def test_probe_cache_round_trip(tmp_path):
    path = str(tmp_path / "probe.json")
    assert rt.load("k", path) is None
    rt.save(rt.Verdict(False, "no", "k", "2026-01-01T00:00:00Z", 1.5), path)
    v = rt.load("k", path)
    assert v is not None and v.cached and not v.works and v.line() == "not working: no (cached)"
    assert rt.load("other", path) is None


def test_check_refuses_a_runtime_that_does_not_work(monkeypatch):
    kind = DockerKind()
    monkeypatch.setattr("isobench.envs.docker.engine_or_none", lambda: _Engine())
    monkeypatch.setattr(
        rt,
        "states",
        lambda client, image: {
            "runc": "available (Docker's default)",
            "crun": "not working: cgroups in hybrid mode not supported",
            "runsc": "available (runsc version 0.0~20221219.0)",
        },
    )
    assert kind.check(DockerSpec()) == []
    assert kind.check(DockerSpec(runtime="runsc")) == []
    [(field, problem)] = kind.check(DockerSpec(runtime="crun"))
    assert field == "runtime"
    assert problem == (
        "crun cannot run here: not working: cgroups in hybrid mode not supported; this host has runc, runsc"
    )


class _Engine:
    class images:  # noqa: N801 - the SDK's attribute name
        @staticmethod
        def list(name):
            return ["image"]
