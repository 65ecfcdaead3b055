"""The isobench image, built for real and run in the real Docker Engine.

Needs root and a running engine (scripts/start-dockerd.sh). The first run
builds the rootfs (debootstrap + apt from deb.debian.org: several minutes);
later runs reuse the cached image.
"""

import os
import time

import pytest

from isobench import images
from isobench.core.owner import owner_labels
from isobench.core.workspace import LABEL

pytestmark = [pytest.mark.integration, pytest.mark.beside]

docker = pytest.importorskip("docker")


@pytest.fixture(scope="module")
def client():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    try:
        c = docker.from_env()
        c.ping()
    except docker.errors.DockerException as exc:
        pytest.skip(f"Docker Engine not answering ({exc}); run scripts/start-dockerd.sh")
    yield c
    c.close()


@pytest.fixture(scope="module")
def tag(client):
    return images.ensure_image(client, timeout_s=3600)


def test_ensure_image_builds_or_reuses(client, tag):
    assert tag == images.image_tag()
    img = client.images.get(tag)
    assert img.labels.get(LABEL) == "1"
    assert img.labels.get(f"{LABEL}.recipe") == images.recipe_hash()
    assert "fio=" in img.labels.get(f"{LABEL}.tools", "")

    started = time.monotonic()
    again = images.ensure_image(client)
    assert again == tag
    assert time.monotonic() - started < 5, "second ensure_image should reuse the image"
    assert client.images.get(again).id == img.id


def test_image_files_and_facts(client, tag):
    info = images.image_info(client)
    assert info["tag"] == tag
    assert info["docker_image_id"] and info["docker_size_bytes"] > 0
    assert os.path.isfile(info["rootfs_tar"])
    # the future VM environment boots the cloud kernel directly
    assert info["kernel"] and os.path.getsize(info["kernel"]) > 1_000_000
    assert info["initrd"] and os.path.getsize(info["initrd"]) > 1_000_000
    assert "cloud-amd64" in info["kernel_version"]
    versions = images.tool_versions()
    assert all(versions[name] for name in images.tool_packages()), versions


def _run(container, argv):
    result = container.exec_run(argv, demux=False)
    return result.exit_code, result.output.decode(errors="replace")


def test_container_has_the_tools(client, tag):
    container = client.containers.run(
        tag, detach=True, labels={LABEL: "1", **owner_labels()}, name=f"isobench-test-images-{os.getpid()}"
    )
    try:
        code, out = _run(container, ["fio", "--version"])
        assert code == 0 and out.startswith("fio-"), out
        code, out = _run(container, ["xz", "--version"])
        assert code == 0 and "xz (XZ Utils)" in out, out
        code, out = _run(container, ["pixz", "-h"])
        assert "pixz" in out, out
        for path in [
            "/usr/bin/hpcc",
            "/usr/bin/mpirun",
            "/usr/bin/sysbench",
            "/usr/bin/redis-server",
            "/usr/sbin/mariadbd",
            "/usr/bin/iperf3",
            "/usr/bin/sockperf",
            "/usr/bin/qperf",
            "/usr/bin/stress-ng",
        ]:
            code, out = _run(container, ["test", "-x", path])
            assert code == 0, f"{path} missing"
        code, out = _run(container, ["test", "-d", "/isobench/data"])
        assert code == 0
        code, out = _run(container, ["test", "-d", "/isobench/tmp"])
        assert code == 0
        code, out = _run(container, ["cat", images.IMAGE_STAMP])
        assert code == 0 and f"ISOBENCH_RECIPE={images.recipe_hash()}" in out, out
        # no service was started by the image: PID 1 is the CMD
        code, out = _run(container, ["cat", "/proc/1/comm"])
        assert out.strip() == "sleep", out
    finally:
        container.remove(force=True)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupted_build_leaves_no_staging_mount_or_process(tmp_path, sig):
    """Ctrl-C or SIGTERM in the middle of debootstrap: the staging tree, its
    mounts and its processes go; the cached image is not touched."""
    import signal
    import subprocess
    import sys

    home = tmp_path / "home"  # its own IMAGE_ROOT, so the real cache is never at risk
    env = {**os.environ, "ISOBENCH_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "isobench.cli.main", "images", "build", "--force"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    images_dir = home / "images"
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not any(p.name.startswith(".staging-") for p in images_dir.glob(".staging-*")):
            time.sleep(0.2)
        assert any(images_dir.glob(".staging-*")), "the build never started"
        time.sleep(5)  # well inside debootstrap
        proc.send_signal(getattr(signal, sig))
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert not list(images_dir.glob(".staging-*"))
    with open("/proc/mounts") as fh:
        assert str(home) not in fh.read()
    ps = subprocess.run(["pgrep", "-af", str(home)], capture_output=True, text=True).stdout
    assert ps.strip() == "", ps
