"""A TCG guest on the client host's bridge (virtio-net on a tap): netlat
and redis served from a vm-stock guest, measured from the client
namespace, and no tap, QEMU or namespace left afterwards. One boot (~5 s)
plus a few seconds of load."""

import os
import subprocess

import pytest

from isobench.clienthost import ClientHost, leftovers, tag_of
from isobench.core.owner import owning
from isobench.envs.vm.environment import VmEnvironment
from isobench.envs.vm.spec import VmSpec
from isobench.host.hostinfo import HostInfo
from isobench.workloads import get

from .test_vm import isobench_qemus

pytestmark = [pytest.mark.integration, pytest.mark.beside]

HOST = HostInfo(
    cores=os.cpu_count() or 1, mem_bytes=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), disk_free_bytes=0
)
SPEC = VmSpec(vcpus=1, memory_mb=1024, accel="tcg", data_disk_mb=512)
WORKLOADS = {"netlat": dict(duration_s=1, cases=["tcp"]), "redis": dict(clients=[1], requests=2000)}


def test_vm_serves_netlat_and_redis_to_the_client_host():
    run_id = f"itvmnet{os.getpid()}"
    workloads = []
    for name, params in WORKLOADS.items():
        cls = get(name)
        fields = getattr(cls.Params, "model_fields", {})
        workloads.append(cls(cls.Params(**{k: v for k, v in params.items() if k in fields}), HOST))
    with owning(run_id), ClientHost(run_id) as ch:
        env = VmEnvironment(name="vm-stock", spec=SPEC, run_id=run_id)
        env.expose(ch.host_addr, sorted({p for w in workloads for p in w.ports}))
        try:
            env.start()
            nic = env.facts()["nic"]
            assert nic["tap"] == f"ib-{tag_of(run_id)}-t0" and nic["vhost"] is os.path.exists("/dev/vhost-net")
            assert nic["address"] == f"{env.guest_addr}/24" and env.guest_addr != ch.host_addr
            assert env.endpoint(6379) == (env.guest_addr, 6379) == (env.server_bind_addr(), 6379)
            for w in workloads:
                w.client = ch
                w.prepare(env)
                try:
                    for case in w.cases():
                        m = w.run(case, env)
                        assert m.values and all(v == v and v > 0 for v in m.values.values()), (w.name, m.values)
                finally:
                    w.cleanup(env)
        finally:
            env.stop()
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=30).stdout
    assert f"ib-{tag_of(run_id)}-" not in out
    assert leftovers(run_id) == ([], [], [])
    assert isobench_qemus(run_id) == []


def test_clean_removes_a_leftover_tap_only_of_isobench():
    from isobench.clienthost import clean_network, tap_name

    run_id = f"itvmtap{os.getpid()}"
    tap = tap_name(run_id, 5)
    subprocess.run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"], check=True, timeout=30)
    try:
        assert leftovers(run_id)[1] == [tap]
        assert f"link {tap}" in clean_network(run_id)
        assert leftovers(run_id) == ([], [], [])
    finally:
        subprocess.run(["ip", "link", "del", "dev", tap], capture_output=True, timeout=30)
