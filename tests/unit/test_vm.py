"""Pure parts of the VM environment: the QEMU command line, the KVM probe's
verdict cache, the study model's vm fields, the leftover-QEMU matcher."""

import json

import pytest

from isobench.envs.vm import kvm_probe
from isobench.envs.vm.kind import is_isobench_qemu
from isobench.envs.vm.qemu_cmdline import MemoryBacking, QemuConfig, Topology, build_argv, kernel_cmdline
from isobench.study import StudyError, parse_study


def cfg(**kw) -> QemuConfig:
    base = dict(
        name="isobench-r1-vm",
        accel="kvm",
        vcpus=2,
        memory_mb=2048,
        cpu_model="qemu64",
        kernel="/img/vmlinuz",
        initrd="/img/initrd.img",
        root_disk="/d/root.qcow2",
        data_disk="/d/data.raw",
        qga_socket="/s/qga.sock",
        qmp_socket="/s/qmp.sock",
        serial_log="/d/serial.log",
        pidfile="/d/qemu.pid",
    )
    base.update(kw)
    return QemuConfig(**base)


def after(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


def test_stock_kvm_argv():
    argv = build_argv(cfg())
    assert argv[0] == "qemu-system-x86_64"
    assert after(argv, "-name") == ["isobench-r1-vm,debug-threads=on"]
    assert after(argv, "-machine") == ["q35,accel=kvm"]
    assert after(argv, "-cpu") == ["qemu64"]
    assert after(argv, "-smp") == ["2"]
    assert after(argv, "-m") == ["2048M"]
    assert "-object" not in argv  # default memory
    assert "-initrd" not in argv  # root on NVMe: no initramfs needed
    assert "init=/usr/local/sbin/isobench-init" in after(argv, "-append")[0]
    drives = after(argv, "-drive")
    assert "file=/d/data.raw,if=none,id=data,format=raw,cache=none,aio=native,discard=unmap" in drives
    assert "virtio-blk-pci,drive=data,serial=isobench-data" in after(argv, "-device")
    assert "virtserialport,bus=vser0.0,chardev=qga0,name=org.qemu.guest_agent.0" in after(argv, "-device")
    assert after(argv, "-nic") == ["none"]
    assert {"-nodefaults", "-no-user-config", "-no-reboot"} <= set(argv)


def test_tuned_argv_hugetlbfs_and_topology():
    argv = build_argv(
        cfg(cpu_model="host", topology=Topology(1, 2, 1), memory=MemoryBacking("hugetlbfs", "/dev/hugepages"))
    )
    assert after(argv, "-cpu") == ["host"]
    assert after(argv, "-smp") == ["cpus=2,sockets=1,cores=2,threads=1"]
    assert after(argv, "-machine") == ["q35,accel=kvm,memory-backend=ram0"]
    assert after(argv, "-object") == [
        "memory-backend-file,id=ram0,size=2048M,mem-path=/dev/hugepages,prealloc=on,share=off"
    ]


def test_thp_prealloc_and_tcg():
    argv = build_argv(cfg(accel="tcg", cpu_model="max", memory=MemoryBacking("thp-prealloc")))
    assert after(argv, "-machine") == ["q35,accel=tcg,memory-backend=ram0"]
    assert after(argv, "-object") == ["memory-backend-ram,id=ram0,size=2048M,prealloc=on"]
    # the KVM and TCG command lines differ only in the accelerator (and CPU model)
    kvm = build_argv(cfg(cpu_model="max", memory=MemoryBacking("thp-prealloc")))
    assert [a.replace("accel=tcg", "accel=kvm") for a in argv] == kvm


def test_virtio_root_uses_initramfs_and_extra_disks():
    argv = build_argv(cfg(root_bus="virtio", extra_disks=("/img/rootfs.tar",), disk_aio="io_uring"))
    assert after(argv, "-initrd") == ["/img/initrd.img"]
    assert "root=/dev/vda" in after(argv, "-append")[0]
    assert any(d.startswith("file=/img/rootfs.tar,") and "readonly=on" in d for d in after(argv, "-drive"))
    assert any("aio=io_uring" in d and "id=data" in d for d in after(argv, "-drive"))


def test_bad_combinations():
    with pytest.raises(ValueError):
        build_argv(cfg(accel="xen"))
    with pytest.raises(ValueError):
        build_argv(cfg(disk_cache="writeback", disk_aio="native"))
    with pytest.raises(ValueError):
        build_argv(cfg(root_bus="virtio", initrd=None))


def test_systemd_guest_init():
    line = kernel_cmdline(cfg(guest_init="systemd"))
    assert "init=" not in line and "systemd.show_status=0" in line


def test_verdict_is_cached_per_key(tmp_path):
    path = str(tmp_path / "kvm.json")
    calls = []

    def probe(deadline):
        calls.append(deadline)
        return False, "hangs"

    v1 = kvm_probe.verdict(probe, "img1", deadline_s=3, path=path)
    if kvm_probe.kvm_device_problem() is None:
        assert calls == [3]
        assert v1.reason == "hangs"
    assert not v1.usable and not v1.cached
    v2 = kvm_probe.verdict(probe, "img1", deadline_s=3, path=path)
    assert v2.cached and v2.reason == v1.reason and len(calls) <= 1
    # another image (or kernel, or QEMU) asks again
    kvm_probe.verdict(probe, "img2", deadline_s=3, path=path)
    assert json.load(open(path))["key"].endswith("image=img2")


def test_cache_load_rejects_garbage(tmp_path):
    p = tmp_path / "kvm.json"
    p.write_text("{not json")
    assert kvm_probe.load("k", str(p)) is None
    p.write_text(json.dumps({"key": "k", "usable": True}))
    assert kvm_probe.load("k", str(p)) is None
    assert kvm_probe.cache_key("6.1", "7.2", "abc") == "kernel=6.1;qemu=7.2;image=abc"


STUDY = '[study]\nname = "s"\n[environments.native]\n{envs}\n[workloads.fio]\n'


def test_vm_presets():
    s = parse_study(STUDY.format(envs="[environments.vm-stock]\n[environments.vm-tuned]\n[environments.vm-docker]"))
    stock, tuned, vmd = (s.environments[n] for n in ("vm-stock", "vm-tuned", "vm-docker"))
    assert (stock.cpu_model, stock.topology, stock.pin, stock.hugepages) == ("default", "none", False, "off")
    assert (tuned.cpu_model, tuned.topology, tuned.pin, tuned.hugepages) == ("host", "auto", True, "on")
    assert vmd.docker and vmd.kind == "vm"


@pytest.mark.parametrize(
    "body, field",
    [
        ('kind = "vm"\nvcpu = 2', "environments.v.vcpu: unknown field"),
        ('kind = "vm"\naccel = "xen"', "environments.v.accel:"),
        ('kind = "vm"\ntopology = "2x2"', "environments.v.topology:"),
        ('kind = "vm"\ntopology = "2x2x1"', "topology 2x2x1 makes 4 CPUs"),
        ('kind = "vm"\ndisk_cache = "writeback"', "disk_aio native needs disk_cache none"),
        ('kind = "vm"\nmemory_mb = 10', "environments.v.memory_mb:"),
        ('kind = "qemu"', "environments.v.kind: must be one of native, docker, vm"),
    ],
)
def test_vm_spec_errors_are_one_line(body, field):
    with pytest.raises(StudyError) as err:
        parse_study(STUDY.format(envs=f"[environments.v]\n{body}"), "f.toml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("f.toml: ") and field in msg


def test_leftover_matcher_only_takes_isobench_qemu():
    assert is_isobench_qemu(["qemu-system-x86_64", "-name", "isobench-r1-vm,debug-threads=on"], "r1")
    assert is_isobench_qemu(["/usr/bin/qemu-system-x86_64", "-name", "isobench-r1-vm"], None)
    assert not is_isobench_qemu(["/usr/bin/qemu-system-x86_64", "-name", "isobench-r2-vm"], "r1")
    assert not is_isobench_qemu(["qemu-system-x86_64", "-name", "webserver"], None)
    assert not is_isobench_qemu(["python", "-name", "isobench-r1-vm"], None)
    assert not is_isobench_qemu(["qemu-system-x86_64"], None)


# -- the NIC on the client host's bridge ---------------------------------------------


def test_argv_without_nic_has_no_network():
    argv = build_argv(cfg())
    assert after(argv, "-nic") == ["none"] and "-netdev" not in argv


def test_argv_with_nic_tap_and_vhost():
    from isobench.envs.vm.qemu_cmdline import Nic

    argv = build_argv(cfg(nic=Nic(tap="ib-ab12-t0", mac="52:54:00:ab:12:00")))
    assert "-nic" not in argv
    assert after(argv, "-netdev") == ["tap,id=n0,ifname=ib-ab12-t0,script=no,downscript=no"]
    assert "virtio-net-pci,netdev=n0,mac=52:54:00:ab:12:00" in after(argv, "-device")
    argv = build_argv(cfg(nic=Nic(tap="ib-ab12-t1", mac="52:54:00:ab:12:01", vhost=True)))
    assert after(argv, "-netdev") == ["tap,id=n0,ifname=ib-ab12-t1,script=no,downscript=no,vhost=on"]
    with pytest.raises(ValueError):
        build_argv(cfg(nic=Nic(tap="a-name-longer-than-15", mac="52:54:00:00:00:00")))


def test_tap_mac_and_address_naming():
    import ipaddress

    from isobench.clienthost import LINK_RE, guest_addr, guest_mac, tag_of, tap_name

    run = "20260101-000000-vm-network-quick-abcd"
    t = tag_of(run)
    names = [tap_name(run, i) for i in (0, 1, 99)]
    assert names == [f"ib-{t}-t0", f"ib-{t}-t1", f"ib-{t}-t99"]
    assert all(len(n) <= 15 and LINK_RE.match(n) for n in names)
    assert not LINK_RE.match("ib-abcd-t100") and not LINK_RE.match("tap0")
    assert guest_mac(run, 0) == f"52:54:00:{t[:2]}:{t[2:]}:00" and guest_mac(run, 11).endswith(":0b")
    assert len({guest_mac(run, i) for i in range(100)}) == 100
    a0, a1 = guest_addr("198.19.7.1", 0), guest_addr("198.19.7.1", 1)
    assert (str(a0), str(a1)) == ("198.19.7.10/24", "198.19.7.11/24")
    assert all(guest_addr("198.19.7.1", i).ip in ipaddress.ip_network("198.18.0.0/15") for i in range(100))
    for bad in (-1, 100):
        with pytest.raises(ValueError):
            guest_addr("198.19.7.1", bad)
        with pytest.raises(ValueError):
            tap_name(run, bad)


def test_vm_endpoint_and_bind_address():
    from isobench.core.errors import EnvironmentError_
    from isobench.envs.vm.environment import VmEnvironment
    from isobench.envs.vm.spec import VmSpec

    vm = VmEnvironment(name="vm-stock", run_id="r1")
    vm.expose("198.19.3.1", [(6379, "tcp")])
    with pytest.raises(EnvironmentError_):
        vm.endpoint(6379)  # not started: no NIC yet
    vm._tap, vm._tap_index = "ib-xxxx-t2", 2
    assert vm.server_bind_addr() == "198.19.3.12" and vm.endpoint(6379) == ("198.19.3.12", 6379)
    vd = VmEnvironment(name="vm-docker", spec=VmSpec(docker=True), run_id="r1")
    vd.expose("198.19.3.1", [(6379, "tcp")])
    vd._tap, vd._tap_index, vd._published = "ib-xxxx-t0", 0, {"6379/tcp": 32768}
    assert vd.server_bind_addr() == "0.0.0.0" and vd.endpoint(6379) == ("198.19.3.10", 32768)
    with pytest.raises(EnvironmentError_):
        vd.endpoint(6379, "udp")


def test_import_room_names_the_data_disk_size_that_fits():
    from isobench.envs.vm.guestdocker import MiB, import_room

    # the web-app study's first failure: a 1.3 GB image onto a 1 GiB data disk
    why = import_room(1300 * MiB, 950 * MiB, 1008 * MiB)
    assert why == (
        "the image (1300 MiB) does not fit the guest's data disk (950 MiB free of 1008 MiB): "
        "set data_disk_mb = 2048 or more for this environment in the study"
    )
    assert import_room(1300 * MiB, 3900 * MiB, 4032 * MiB) is None
    # the suggestion itself fits
    assert import_room(1300 * MiB, (2048 - 58) * MiB, 2048 * MiB) is None
