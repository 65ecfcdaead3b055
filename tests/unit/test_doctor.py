from isobench.checks.doctor import judge

GiB = 2**30
CLEAN = {
    "governors": ["performance"],
    "turbo": "off",
    "thp": "madvise",
    "irqbalance": False,
    "swap_devices": 0,
    "loadavg1": 0.1,
    "cores": 2,
    "busy": [],
    "hugepages_total": 512,
    "kinds": {
        "vm": {"kvm_present": True, "kvm_verdict": (True, ""), "vhost_net": True},
        "docker": {"driver": "overlay2"},
    },
    "mem_available": 20 * GiB,
    "disk_free": 70 * GiB,
}


def by_check(readings):
    return {f.check: f for f in judge(readings)}


def test_a_tuned_host_has_no_warnings():
    assert [f.check for f in judge(CLEAN) if f.status == "warn"] == []


def test_each_bias_warns_with_a_fix():
    bad = {
        **CLEAN,
        "governors": ["powersave"],
        "turbo": "on",
        "irqbalance": True,
        "swap_devices": 1,
        "loadavg1": 1.9,
        "busy": [("stress-ng", 99.0)],
        "kinds": {
            "vm": {"kvm_present": True, "kvm_verdict": (False, "hangs after real mode"), "vhost_net": False},
            "docker": {"driver": "vfs"},
        },
        "mem_available": 1 * GiB,
        "disk_free": 2 * GiB,
    }
    found = by_check(bad)
    for check in (
        "cpu governor",
        "turbo boost",
        "irqbalance",
        "swap",
        "load",
        "kvm",
        "docker storage driver",
        "free memory",
        "free disk",
    ):
        assert found[check].status == "warn", check
        assert found[check].fix, check
    assert "stress-ng (99%)" in found["load"].value
    assert "hangs after real mode" in found["kvm"].value


def test_unexposed_governor_is_information_not_a_warning():
    f = by_check({**CLEAN, "governors": [], "turbo": None})
    assert f["cpu governor"].status == "info" and f["turbo boost"].status == "info"


def test_each_kind_judges_its_own_settings():
    # the kinds' checks come from the kinds (doctor names none of them), and
    # a kind whose readings are missing still says something rather than fail
    found = by_check({**CLEAN, "kinds": {}})
    assert found["kvm"].status == "warn" and "/dev/kvm missing" in found["kvm"].value
    assert found["docker storage driver"].value == "engine not reachable"
    assert found["vhost-net"].status == "info" and "modprobe vhost_net" in found["vhost-net"].fix
    unprobed = by_check({**CLEAN, "kinds": {"vm": {"kvm_present": True, "kvm_verdict": None}}})
    assert unprobed["kvm"].status == "info" and unprobed["kvm"].value == "/dev/kvm present, not probed yet"


def test_doctor_and_envs_say_the_same_about_an_unprobed_kvm(monkeypatch):
    """Neither command probes KVM; both say, in one sentence, that starting a
    vm environment does, and where its verdict is kept."""
    from isobench.envs.kinds import kinds
    from isobench.envs.vm import kind as vmkind
    from isobench.envs.vm import kvm_probe

    monkeypatch.setattr(vmkind.shutil, "which", lambda _name: "/usr/bin/qemu-system-x86_64")
    monkeypatch.setattr(kvm_probe, "qemu_version", lambda: "7.2.0")
    monkeypatch.setattr(kvm_probe, "kvm_device_problem", lambda: None)
    monkeypatch.setattr(kvm_probe, "load", lambda *_a, **_k: None)
    envs_line = kinds()["vm"].probe().details
    doctor = by_check({**CLEAN, "kinds": {"vm": {"kvm_present": True, "kvm_verdict": None}}})["kvm"]
    said = kvm_probe.when_probed()
    assert f"KVM: {doctor.value} ({doctor.fix})" in envs_line and doctor.fix == said
    assert "isobench run" in said and kvm_probe.CACHE_FILE in said and "envs probes" not in said
