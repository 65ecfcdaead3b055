"""Environments keep their typed spec and read it: every option has one
default, the spec model's, and what an environment records in its facts is
the spec (plus where its instance was pinned), with the keys and values
stored runs and reports have always read. No Docker, no QEMU: the engine
and the QEMU process are stand-ins."""

from __future__ import annotations

import dataclasses
import os

import pytest

from isobench.envs import make_environment
from isobench.envs import runtimes as rt
from isobench.envs.base import Environment
from isobench.envs.docker import DockerEnvironment, DockerKind, DockerSpec
from isobench.envs.kinds import kind_of
from isobench.envs.native import NativeEnvironment, NativeSpec
from isobench.envs.pinning import placement
from isobench.envs.vm import environment as vme
from isobench.envs.vm import qemu as vq
from isobench.envs.vm.environment import VmEnvironment
from isobench.envs.vm.kind import VmKind
from isobench.envs.vm.qemu import qemu_config
from isobench.envs.vm.qemu_cmdline import Topology
from isobench.envs.vm.spec import VmSpec
from isobench.host import daemonconf
from isobench.host.hostinfo import HostInfo, parse_cpulist

HOST = HostInfo(cores=8, mem_bytes=16 * 2**30, disk_free_bytes=0)
DOCKER_OPTIONS = [
    *("network", "storage", "pid", "ipc", "seccomp", "apparmor"),
    *("cpuset", "cpus", "memory_mb", "tmpfs_mb", "runtime", "gvisor_platform"),
]
VM_OPTIONS = [
    "vcpus",
    "memory_mb",
    "cpu_model",
    "topology",
    "pin",
    "hugepages",
    "disk_cache",
    "disk_aio",
    "accel",
    "data_disk_mb",
    "tmpfs_mb",
    "root_bus",
    "guest_init",
    "docker",
]


def default(model, name):
    return model.model_fields[name].default


def make(kind: str, index: int = 0, **body):
    spec = kind_of(kind).spec.model_validate({"kind": kind, **body})
    return kind_of(kind).make("e", spec, run_id="r1", host=HOST, image="img", index=index)


# -- the environment holds the spec, not a dict ------------------------------------


def test_environments_keep_their_spec_object():
    assert "options" not in {f.name for f in dataclasses.fields(Environment)}
    for kind, cls in (("native", NativeSpec), ("docker", DockerSpec), ("vm", VmSpec)):
        env = make(kind)
        assert type(env.spec) is cls and env.spec == cls()
    # an environment made without a spec has its kind's defaults
    assert DockerEnvironment(name="d").spec == DockerSpec()
    assert VmEnvironment(name="v").spec == VmSpec()
    assert NativeEnvironment(name="n").spec == NativeSpec()


# -- docker --------------------------------------------------------------------------


def engine_attrs(kwargs: dict) -> dict:
    """What the engine's container inspect says of a container run with these
    arguments (Docker 20.10 on a host without AppArmor): the read-back start checks."""
    volumes = kwargs.get("volumes") or {}
    return {
        "HostConfig": {
            "NetworkMode": kwargs["network_mode"],
            "PidMode": kwargs.get("pid_mode", ""),
            "IpcMode": kwargs.get("ipc_mode", "private"),
            "SecurityOpt": kwargs.get("security_opt"),
            "Tmpfs": kwargs.get("tmpfs"),  # `--tmpfs` mounts are here, not among Mounts
        },
        "Mounts": [{"Type": "volume", "Name": n, "Destination": v["bind"]} for n, v in volumes.items()],
        "AppArmorProfile": "",
    }


class FakeEngine:
    """What DockerEnvironment.start and measure_startup ask of the engine;
    ``inspect`` is what it reports of a container run with these arguments."""

    def __init__(self, inspect=engine_attrs):
        self.runs: list[dict] = []
        self.removed: list[str] = []
        engine = self

        class Volume:
            def __init__(self, name, labels):
                self.name = name

            def remove(self, **kwargs):
                engine.removed.append(self.name)

        self.volumes = type("Volumes", (), {"create": staticmethod(Volume)})
        self.inspect = inspect

    @property
    def containers(self):
        engine = self

        class Container:
            id, ports = "c1", {}

            def __init__(self, kwargs):
                self.attrs = engine.inspect(kwargs)

            def reload(self):
                pass

            def remove(self, **kwargs):
                engine.removed.append(self.id)

        class Containers:
            @staticmethod
            def run(image, *args, **kwargs):
                engine.runs.append(kwargs)
                return Container(kwargs)

        return Containers

    def info(self):
        return {"Driver": "overlay2", "Runtimes": {"crun": {"path": None}}}

    def close(self):
        pass


@pytest.fixture
def fake_engine(monkeypatch):
    eng = FakeEngine()
    monkeypatch.setattr("isobench.envs.docker.engine", lambda timeout=None: eng)
    return eng


def test_docker_without_a_runtime_runs_and_records_the_specs_default(fake_engine):
    assert default(DockerSpec, "runtime") == "runc"  # the one default, stated once more here on purpose
    env = make("docker")
    assert env.facts()["options"]["runtime"] == default(DockerSpec, "runtime")
    assert env.engine_runtime == default(DockerSpec, "runtime")
    env.start()
    env.measure_startup(10)
    assert [run["runtime"] for run in fake_engine.runs] == ["runc", "runc"]
    assert [run["network_mode"] for run in fake_engine.runs] == ["bridge", "bridge"]  # the spec's network


def test_docker_follows_its_spec_not_a_default_of_its_own(fake_engine):
    class OtherDefaults(DockerSpec):  # a spec whose defaults are not today's
        network: str = "host"
        storage: str = "volume"
        runtime: str = "crun"
        memory_mb: int | None = 512
        tmpfs_mb: int | None = 64

    env = DockerEnvironment(name="d", spec=OtherDefaults(), image="img")
    env.expose("198.19.0.1", [(6379, "tcp")])
    env.start()
    [run] = fake_engine.runs
    assert run["runtime"] == "crun" and run["network_mode"] == "host" and run["mem_limit"] == "512m"
    assert run["tmpfs"] == {"/isobench/tmp": f"size={64 * 2**20}"} and "volumes" in run
    assert env.server_bind_addr() == "198.19.0.1" and env.endpoint(6379) == ("198.19.0.1", 6379)
    facts = env.facts()
    assert facts["options"]["runtime"] == "crun" and facts["runtime_info"]["name"] == "crun"


def test_docker_recorded_options_keep_their_keys_and_values():
    facts = make("docker").facts()
    assert list(facts["options"]) == DOCKER_OPTIONS  # no kind, instances or pin: as stored runs have them
    assert facts["options"] == {name: default(DockerSpec, name) for name in DOCKER_OPTIONS}
    assert "pinning" not in facts
    limited = make("docker", cpuset="0-1", cpus=1.5, memory_mb=512, tmpfs_mb=64).facts()
    assert limited["options"]["cpuset"] == "0-1" and limited["options"]["cpus"] == 1.5
    assert limited["pinning"] == {"cpuset": "0-1", "how": "docker --cpuset-cpus"}


def test_a_pinned_docker_instance_records_the_cpuset_pin_gave_it():
    env = make("docker", index=1, pin=True)
    assert env.spec.pin is True and env.spec.cpuset is None  # the study's spec, unchanged
    cpuset = placement(True, 1)
    assert env.cpuset == cpuset
    facts = env.facts()
    assert "pin" not in facts["options"] and facts["options"]["cpuset"] == cpuset
    assert list(facts["options"]) == DOCKER_OPTIONS
    assert facts["pinning"] == {"cpuset": cpuset, "how": "docker --cpuset-cpus"}


def test_gvisor_platform_has_one_default():
    # what scripts/start-dockerd.sh registers runsc with (daemonconf imports nothing of isobench)
    assert daemonconf.GVISOR_PLATFORMS["runsc"] == rt.GVISOR_DEFAULT_PLATFORM
    assert rt.GVISOR_PLATFORMS[0] == rt.GVISOR_DEFAULT_PLATFORM
    assert DockerKind.presets["docker-gvisor"]["gvisor_platform"] == rt.GVISOR_DEFAULT_PLATFORM
    assert default(DockerSpec, "gvisor_platform") is None  # the study's value: none given
    runsc = make("docker", runtime="runsc")
    assert runsc.facts()["options"]["gvisor_platform"] == rt.GVISOR_DEFAULT_PLATFORM  # recorded as it runs
    assert rt.platform_used("runsc") == rt.GVISOR_DEFAULT_PLATFORM and rt.platform_used("runc") is None
    assert runsc.engine_runtime == "runsc" == rt.engine_name("runsc", rt.GVISOR_DEFAULT_PLATFORM)
    assert make("docker", runtime="runsc", gvisor_platform=rt.GVISOR_DEFAULT_PLATFORM).facts() == runsc.facts()
    assert make("docker", runtime="crun").facts()["options"]["gvisor_platform"] is None
    assert DockerKind().unsupported(runsc.spec, "netlat") and not DockerKind().unsupported(DockerSpec(), "netlat")


# -- native --------------------------------------------------------------------------


def test_native_records_its_spec_and_the_cpu_pin_gave_it(monkeypatch):
    assert make("native").facts() == {"kind": "native", "options": {"pin": False}}
    env = make("native", index=1, pin=True)
    cpu = placement(True, 1)
    assert env.facts()["options"] == {"pin": True, "cpu": cpu}
    assert env.facts()["pinning"] == {"host_cpu": cpu, "how": "taskset"}
    ran = []
    monkeypatch.setattr(
        "isobench.envs.native.run_argv", lambda argv, timeout, cwd=None, live=None, own_session=False: ran.append(argv)
    )
    env.exec(["true"], 5)
    make("native").exec(["true"], 5)
    assert ran == [["taskset", "-c", cpu, "true"], ["true"]]


# -- vm ------------------------------------------------------------------------------


class OtherVmDefaults(VmSpec):
    """Every default the VM's code once repeated, changed in the spec alone."""

    vcpus: int = 4
    memory_mb: int = 1024
    cpu_model: str = "host"
    topology: str = "auto"
    disk_cache: str = "writeback"
    disk_aio: str = "threads"
    accel: str = "tcg"
    data_disk_mb: int = 1024
    root_bus: str = "virtio"
    guest_init: str = "systemd"


def config(spec, accel="tcg"):
    cfg, _ = qemu_config(
        spec,
        accel=accel,
        name="isobench-r1-v",
        vm_dir="/vm",
        sock_dir="/s",
        kernel=("/k", "/i"),
        extra_disks=(),
        nic=None,
    )
    return cfg


def test_qemu_config_takes_every_default_from_the_spec(monkeypatch):
    monkeypatch.setattr(vq, "thp_mode", lambda: "madvise")
    cfg = config(VmSpec(), accel="kvm")
    assert (cfg.vcpus, cfg.memory_mb, cfg.cpu_model, cfg.topology) == (2, 2048, "qemu64", None)
    assert (cfg.disk_cache, cfg.disk_aio, cfg.root_bus, cfg.guest_init) == ("none", "native", "nvme", "isobench")
    assert (cfg.vcpus, cfg.memory_mb) == (default(VmSpec, "vcpus"), default(VmSpec, "memory_mb"))
    assert (cfg.disk_cache, cfg.disk_aio) == (default(VmSpec, "disk_cache"), default(VmSpec, "disk_aio"))
    assert (cfg.root_bus, cfg.guest_init) == (default(VmSpec, "root_bus"), default(VmSpec, "guest_init"))
    other = config(OtherVmDefaults())
    assert (other.vcpus, other.memory_mb, other.cpu_model, other.topology) == (4, 1024, "max", Topology(1, 4, 1))
    assert (other.disk_cache, other.disk_aio, other.root_bus, other.guest_init) == (
        "writeback",
        "threads",
        "virtio",
        "systemd",
    )
    assert config(VmSpec(tmpfs_mb=64)).kernel_args == ("isobench.tmpfs_mb=64",) and cfg.kernel_args == ()


class FakeQemu:
    def __init__(self, owner, vm_dir):
        self.pid = 1

    def spawn(self, argv):
        pass

    def connect(self, cfg, deadline):
        return type("GA", (), {"boot_times": lambda s, init: {"init": init}, "close": lambda s: None})()

    def wait_agent(self, *args):
        pass

    def pin_vcpus(self, node_cpus, offset):
        return {"node_cpus": node_cpus, "offset": offset}

    def stop(self):
        pass


@pytest.fixture
def fake_boot(monkeypatch, tmp_path):
    """_boot_vm with QEMU, qemu-img and the disks stood in for: what it did."""
    did: dict = {}
    monkeypatch.setattr(vme, "DATA_ROOT", str(tmp_path / "d"))
    monkeypatch.setattr(vme, "SOCKET_ROOT", str(tmp_path / "s"))
    monkeypatch.setattr(vme, "QemuProcess", FakeQemu)
    monkeypatch.setattr(vme, "_check_run", lambda argv, timeout: None)
    monkeypatch.setattr("isobench.envs.vm.disk.make_data_disk", lambda path, size_mb: did.update(data_mb=size_mb))
    monkeypatch.setattr(vq, "thp_mode", lambda: "madvise")
    monkeypatch.setattr(vq, "hugetlbfs_free_mb", lambda: (0, None))
    return did


def test_the_vm_boots_with_its_specs_defaults(fake_boot, monkeypatch):
    from isobench.envs.vm import kvm_probe

    asked = []
    monkeypatch.setattr(
        kvm_probe,
        "verdict",
        lambda probe, image: asked.append(image) or kvm_probe.Verdict(True, "booted", "k", "t", 1.0),
    )
    vm = make("vm")
    assert default(VmSpec, "accel") == "auto"
    assert vm._resolve_accel() == "kvm" and asked  # auto: the KVM probe decides
    vm.accel = "tcg"
    vm._boot_vm("/base", ("/k", "/i"))
    assert fake_boot["data_mb"] == default(VmSpec, "data_disk_mb") == 4096
    assert vm._boot["init"] == default(VmSpec, "guest_init") == "isobench"
    assert vm._pinning == {}  # not pinned: pin's default is False


def test_the_vm_follows_its_spec_not_a_default_of_its_own(fake_boot):
    vm = VmEnvironment(name="v", spec=OtherVmDefaults(), run_id="r1")
    assert vm._resolve_accel() == "tcg" and vm.accel_note == "accel=tcg as configured"
    vm.accel = "tcg"
    vm._boot_vm("/base", ("/k", "/i"))
    assert fake_boot["data_mb"] == 1024 and vm._boot["init"] == "systemd"
    assert vm.facts()["cpu_model_used"] == "max"


def test_vm_recorded_options_keep_their_keys_and_values(monkeypatch):
    monkeypatch.setattr("isobench.envs.vm.kvm_probe.qemu_version", lambda qemu="": "9.9")
    facts = make("vm").facts()
    assert facts["kind"] == "vm" and list(facts["options"]) == VM_OPTIONS
    assert facts["options"] == {name: default(VmSpec, name) for name in VM_OPTIONS}
    assert make("vm", docker=True).facts()["kind"] == "vm-docker"
    node = make("vm", index=1, pin="node")
    cpus = parse_cpulist(placement("node", 1))
    assert node.facts()["options"] == {**facts["options"], "pin": "node", "pin_cpus": cpus}
    assert node.pin_cpus == cpus and node.pin_offset == default(VmSpec, "vcpus")
    assert "pin_cpus" not in make("vm", pin=True).facts()["options"]


def test_the_kvm_probe_and_the_startup_twin_boot_this_spec(fake_boot, monkeypatch):
    booted = []

    def fake_start(self):
        booted.append(self)

    monkeypatch.setattr(VmEnvironment, "start", fake_start)
    vm = make("vm", pin="node", tmpfs_mb=64, docker=True)
    vm._kvm_boot_probe(5.0)
    vm.accel = "tcg"
    vm.measure_startup(10)
    probe, twin = booted
    assert (probe.spec.vcpus, probe.spec.memory_mb, probe.spec.data_disk_mb) == (1, 512, 256)
    assert (probe.spec.docker, probe.spec.pin, probe.spec.hugepages, probe.spec.tmpfs_mb) == (False, False, "off", 64)
    assert probe.kind == "vm" and probe.accel == "kvm" and probe.pin_cpus == vm.pin_cpus
    assert vm.spec.vcpus == default(VmSpec, "vcpus") and vm.spec.docker  # the environment's own spec untouched
    assert twin.spec == vm.spec and twin.kind == "vm-docker" and twin.pin_cpus == vm.pin_cpus


def test_vm_footprint_and_make_read_the_spec():
    spec = VmSpec(memory_mb=1024, instances=3, vcpus=2)
    [fp] = VmKind().footprint(spec)
    assert fp.bytes == 1024 * 2**20 * 3
    made = [VmKind().make("v", spec, run_id="r", host=HOST, image=None, index=i) for i in range(3)]
    assert [vm.pin_offset for vm in made] == [0, 2, 4] and all(vm.spec is spec for vm in made)


# -- groups --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["native", "docker", "vm"])
def test_a_group_records_its_first_members_options(kind, monkeypatch):
    monkeypatch.setattr("isobench.envs.vm.kvm_probe.qemu_version", lambda qemu="": "9.9")
    spec = kind_of(kind).spec.model_validate({"kind": kind, "instances": 2})
    group = make_environment("g", spec, "r1", HOST, "img")
    assert group.spec is spec and [m.spec for m in group.members] == [spec, spec]
    assert group.facts()["options"] == group.members[0].facts()["options"]
    assert "instances" not in group.facts()["options"] and group.facts()["instances"] == 2


NEEDLES = ("options.get(", "opts.get(", 'or "runc"', "self.options", '"ptrace"')


def test_no_option_is_read_from_a_dict_in_envs():
    """No option read from a dict, no default or gVisor platform written
    again: runtimes.GVISOR_DEFAULT_PLATFORM is the only "ptrace"."""
    root = os.path.join(os.path.dirname(__file__), "..", "..", "src", "isobench", "envs")
    found = []
    for base, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                for line in open(os.path.join(base, name), encoding="utf-8"):
                    found += [f"{name}: {needle}" for needle in NEEDLES if needle in line]
    assert found == ['runtimes.py: "ptrace"']
