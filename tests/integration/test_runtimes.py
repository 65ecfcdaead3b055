"""The runtime option against the real engine: for each runtime that starts
a container here, an environment's container really runs under it (the
engine's HostConfig.Runtime; gVisor's own kernel log inside), a workload
command runs, startup is measured, and nothing is left behind."""

import os

import pytest

from isobench.core.dockerclient import engine
from isobench.core.owner import owning
from isobench.core.workspace import LABEL
from isobench.envs import runtimes as rt
from isobench.envs.docker import DockerKind, DockerSpec
from isobench.envs.native import NativeEnvironment
from isobench.host.hostinfo import host_info
from isobench.images import image_tag
from isobench.run.duet import run_duet
from isobench.workloads.compress import Compression

pytestmark = [pytest.mark.integration, pytest.mark.beside]


@pytest.fixture(scope="module")
def image():
    tag = image_tag()
    if not engine().images.list(name=tag):
        pytest.skip(f"image {tag} not built (isobench images build)")
    return tag


@pytest.mark.parametrize("runtime", ["runc", "crun", "runsc"])
@pytest.mark.parametrize("network", ["bridge", "host"])
def test_environment_runs_under_its_runtime(image, runtime, network):
    client = engine()
    if runtime != "runc":
        verdict = rt.probe(client, runtime, image, use_cache=False)
        if not verdict.works:
            pytest.skip(f"{runtime} does not run here: {verdict.reason}")
    spec = DockerSpec(runtime=runtime, network=network)
    env = DockerKind().make(
        f"rt-{runtime}-{network}", spec, run_id="itest-runtimes", host=host_info(), image=image, index=0
    )
    with owning("itest-runtimes"):  # a global `isobench clean` beside it keeps it
        _runs_under(client, env, runtime)
    left = client.containers.list(all=True, filters={"label": f"{LABEL}.run=itest-runtimes"})
    assert left == []


def _runs_under(client, env, runtime: str) -> None:
    env.start()
    try:
        attrs = client.api.inspect_container(env.container_name)
        assert attrs["HostConfig"]["Runtime"] == runtime
        kernel_log = env.exec(["dmesg"], timeout=30)
        # gVisor's Sentry has its own kernel log; under runc/crun dmesg reads the host's (or is refused)
        assert ("Starting gVisor" in kernel_log.stdout) == (runtime == "runsc"), kernel_log
        assert env.exec(["sh", "-c", "echo hi"], timeout=30).stdout == "hi\n"
        ready = env.measure_startup(120)["ready_s"]
        assert 0 < ready < 120
        facts = env.facts()
        assert facts["options"]["runtime"] == runtime
        assert facts["runtime_info"]["name"] == runtime and facts["runtime_info"]["version"] != "unknown"
    finally:
        env.stop()


def test_probe_reports_an_unregistered_runtime(image):
    """A runtime the engine does not know is reported, not raised."""
    client = engine()
    verdict = rt.probe(client, "no-such-runtime", image, use_cache=False)
    assert not verdict.works and "not registered" in verdict.reason


def test_a_gvisor_sides_filler_ends_with_its_duet(image):
    """runsc has no pidfd_open: the gate died at its first filler and the
    filler ran on beside the next duets (own-programs-e497). Here the gVisor
    side's work is the shorter one, so it fills; once the duet is over its
    gate has said how many fillers ran and none is left in the container."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("a duet needs two CPUs")
    client = engine()
    verdict = rt.probe(client, "runsc", image)
    if not verdict.works:
        pytest.skip(f"runsc does not run here: {verdict.reason}")
    run_id = "itest-gvisor-fill"
    host = host_info()
    long, short = (Compression(Compression.Params(size_mb=mb, threads=1, level=1), host) for mb in (8, 1))
    native = NativeEnvironment(name="native", run_id=run_id)
    gvisor = DockerKind().make(
        "gvisor", DockerSpec(runtime="runsc", network="host"), run_id=run_id, host=host, image=image, index=0
    )
    with owning(run_id):
        try:
            native.start()
            gvisor.start()
            long.prepare(native)
            short.prepare(gvisor)
            a, b = run_duet((long, short), "default", (native, gvisor), ((cpus[0],), (cpus[1],)))
            assert a.status == b.status == "ok", (a.error, b.error)
            assert b.extra["duet"]["fillers"] >= 1, b.extra["duet"]  # its gate lived to say so
            left = gvisor.exec(["ps", "-eo", "args"], timeout=30).stdout
            assert "pixz" not in left, left
        finally:
            long.cleanup(native)
            native.stop()  # its scratch directory in /dev/shm with it
            gvisor.stop()
    assert client.containers.list(all=True, filters={"label": f"{LABEL}.run={run_id}"}) == []
    assert not os.path.exists(native.paths.tmp) and not os.path.exists(native.paths.data)
