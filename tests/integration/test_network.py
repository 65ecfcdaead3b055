"""The client host and the network/server workloads for real: namespace,
veth, bridge and iptables rule created and removed (also after SIGINT of
an `isobench run`), each workload natively and in docker-nat/docker-host
at tiny sizes."""

import os
import signal
import subprocess
import sys
import time

import pytest

from isobench.clienthost import ClientHost, clean_network, leftovers, link_names, netns_name
from isobench.core.owner import owning
from isobench.host.hostinfo import HostInfo
from isobench.workloads import get

pytestmark = pytest.mark.integration

HOST = HostInfo(
    cores=os.cpu_count() or 1, mem_bytes=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), disk_free_bytes=0
)

TINY = {
    "netbw": dict(duration_s=1),
    "netlat": dict(duration_s=1),
    "redis": dict(clients=[2], requests=2000),
    "oltp": dict(threads=[2], table_size=1000, time_s=1, warmup_s=0),
}


def nothing_left(run_id: str) -> None:
    namespaces, links, rules = leftovers(run_id)
    assert (namespaces, links, rules) == ([], [], [])
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(name in out for name in link_names(run_id))
    assert netns_name(run_id) not in subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout
    assert f"isobench-{run_id}" not in subprocess.run(["iptables-save"], capture_output=True, text=True).stdout


@pytest.mark.beside
def test_client_host_lifecycle():
    run_id = f"itest-ch-{os.getpid()}"
    with owning(run_id), ClientHost(run_id) as ch:
        namespaces, links, rules = leftovers(run_id)
        assert namespaces == [netns_name(run_id)]
        assert sorted(links) == sorted([ch.bridge, ch.veth_host])  # the client end lives in the netns
        assert len(rules) == 1 and ch.bridge in rules[0]
        assert ch.host_addr.startswith("198.19.") and ch.client_addr.startswith("198.19.")
        r = ch.run(["ip", "-4", "-o", "addr"], timeout=10).result
        assert r.ok and ch.client_addr in r.stdout and "eth0" not in r.stdout
        # the namespace has no default route: only the benchmarking range leaves it
        routes = ch.run(["ip", "route"], timeout=10).result.stdout
        assert "default" not in routes and "198.18.0.0/15" in routes
        slow = ch.run(["sleep", "30"], timeout=1)
        assert slow.result.timed_out and slow.result.wall_s < 5
    nothing_left(run_id)


@pytest.mark.beside
def test_clean_removes_a_crashed_client_host():
    run_id = f"itest-crash-{os.getpid()}"
    ch = ClientHost(run_id).start()  # never stopped: as after SIGKILL
    assert leftovers(run_id)[0]
    removed = clean_network(run_id)
    assert any("namespace" in r for r in removed) and any("iptables" in r for r in removed)
    nothing_left(run_id)
    ch.stop()  # and stop() after clean is harmless


def _env(kind: str, run_id: str, ch: ClientHost, ports):
    if kind == "native":
        from isobench.envs.native import NativeEnvironment

        env = NativeEnvironment(name="native", run_id=run_id)
    else:
        docker = pytest.importorskip("docker")
        from isobench.envs.docker import DockerEnvironment, DockerSpec
        from isobench.images import image_tag

        tag = image_tag()
        try:
            docker.from_env().images.get(tag)
        except Exception:  # noqa: BLE001
            pytest.skip(f"image {tag} not built (isobench images build)")
        network = "host" if kind == "docker-host" else "bridge"
        spec = DockerSpec(network=network, storage="volume" if network == "host" else "overlay")
        env = DockerEnvironment(name=kind, spec=spec, run_id=run_id, image=tag)
    env.expose(ch.host_addr, ports)
    env.start()
    return env


@pytest.mark.beside
@pytest.mark.parametrize("kind", ["native", "docker-nat", "docker-host"])
@pytest.mark.parametrize("name", list(TINY))
def test_workload_runs(name, kind):
    run_id = f"itest-{name}-{kind}-{os.getpid()}"
    cls = get(name)
    w = cls(cls.Params(**TINY[name]), HOST)
    # owned, so a global `isobench clean` of the main lane keeps its servers and namespace
    with owning(run_id), ClientHost(run_id) as ch:
        w.client = ch
        env = _env(kind, run_id, ch, list(w.ports))
        try:
            if kind == "docker-nat":
                addr, port = env.endpoint(w.ports[0][0], w.ports[0][1])
                assert addr == ch.host_addr and port != w.ports[0][0]  # published by Docker's NAT
            w.prepare(env)
            try:
                for case in w.cases():
                    m = w.run(case, env)
                    assert set(m.values) == {x.name for x in w.metrics(case)}
                    assert all(v == v and v > 0 for v in m.values.values()), m.values
            finally:
                w.cleanup(env)
            # the server was stopped after each run
            r = env.exec(
                [
                    "sh",
                    "-c",
                    "ls /proc/*/exe -l 2>/dev/null | grep -c -e iperf3 -e sockperf -e redis-server -e mariadbd || true",
                ],
                timeout=30,
            )
            assert r.stdout.strip() in ("0", ""), r.stdout
        finally:
            env.stop()
    nothing_left(run_id)


STUDY = """
[study]
name = "sigint-net"
repetitions = 3
warmup = 0
[environments.native]
[environments.docker-nat]
[workloads.netbw]
duration_s = 20
"""


# This host's noise pilot, copied into another ISOBENCH_HOME as if measured
# there (its identity names the home's scratch directory): a run in that home
# would otherwise spend 30 s measuring its own. Stale or absent: copied as it
# is, and the run measures.
SEED_PILOT = """
import dataclasses, sys
from isobench.checks import noisepilot as n
p = n.load(sys.argv[1])
if p is not None:
    n.save(dataclasses.replace(p, host=n.host_identity()))
"""


# beside: it counts iperf3 clients host-wide, and the side lane's netbw cases run theirs (CI of 551ce76);
# in that lane they run one after the other, and no main-lane test runs netbw
@pytest.mark.beside
def test_sigint_during_network_workload_leaves_nothing(tmp_path):
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    home = tmp_path / "home"  # own lock and scratch, so a study running elsewhere does not refuse this
    env = {**os.environ, "ISOBENCH_HOME": str(home), "ISOBENCH_STORE": str(tmp_path / "r.sqlite")}
    from isobench.checks.noisepilot import CACHE_FILE

    subprocess.run([sys.executable, "-c", SEED_PILOT, CACHE_FILE], env=env, check=True, timeout=60)
    proc = subprocess.Popen(
        [sys.executable, "-m", "isobench.cli.main", "run", str(study), "--no-progress"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        run_ns = None
        while time.monotonic() < deadline and run_ns is None:
            out = subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout
            run_ns = next((line.split()[0] for line in out.splitlines() if "-sigint-net-" in line), None)
            time.sleep(0.2)
        assert run_ns, "the client namespace never appeared"
        # wait until iperf3 is moving data, then interrupt (`ip netns exec`
        # execs the client in place: its command line is iperf3's own)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if subprocess.run(["pgrep", "-f", "iperf3 --client"], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the iperf3 client never started")
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output
    run_id = run_ns[len("isobench-") : -len("-client")]
    nothing_left(run_id)
    import docker

    assert not docker.from_env().containers.list(all=True, filters={"label": f"isobench.run={run_id}"})
    assert subprocess.run(["pgrep", "-f", "iperf3 --client"], capture_output=True).returncode != 0
