"""The host against the image (issue 55 item 10): `setup --check` names the
packages the tools run on at other versions than the image's, `setup
--match-image` upgrades the host's older ones, and a refusal of a command
names the versions of the executable's package, not only its digests."""

import subprocess

from tests.unit.test_setup_cmd import READY, invoke

from isobench.cli import setup_cmd
from isobench.host import imagematch, prepare
from isobench.host.packages import depends_names
from isobench.results.programs import differences, refusal

HOST = {"python3.11-minimal": "3.11.2-6+deb12u6", "libc6": "2.36-9+deb12u10", "pixz": "1.0.7-2"}
IMAGE = {"python3.11-minimal": "3.11.2-6+deb12u9", "libc6": "2.36-9+deb12u10", "sysbench": "1.0.20+ds-5"}


def test_depends_names_keeps_every_package_and_alternative():
    assert depends_names("python3 (>= 3.11~), libc6:any (>= 2.34), libluajit2-5.1-2 | libluajit-5.1-2,\n") == [
        "libc6",
        "libluajit-5.1-2",
        "libluajit2-5.1-2",
        "python3",
    ]


def test_only_packages_both_have_at_other_versions_differ():
    found = imagematch.differing(HOST, IMAGE)
    assert found == [("python3.11-minimal", "3.11.2-6+deb12u6", "3.11.2-6+deb12u9")]
    assert imagematch.describe(found) == "python3.11-minimal 3.11.2-6+deb12u6 here, 3.11.2-6+deb12u9 in the image"


def test_older_on_host_asks_dpkg_for_the_order_of_debian_versions():
    found = [("a", "3.11.2-6+deb12u6", "3.11.2-6+deb12u9"), ("b", "1:2.0", "3.0"), ("c", "1.0~rc1", "1.0")]
    # an epoch outranks any version without one, and ~ sorts before the release: dpkg's rules, not string order
    assert imagematch.older_on_host(found, run=subprocess.run) == [found[0], found[2]]


def test_setup_check_names_the_differences_and_the_way_to_match(monkeypatch):
    state = prepare.HostState(**{**READY.__dict__, "unlike_image": imagematch.differing(HOST, IMAGE)})
    monkeypatch.setattr(setup_cmd, "_state", lambda: state)
    r = invoke("setup", "--check")
    assert r.exit_code == 1
    text = " ".join(r.stdout.split())
    assert "1 packages the tools run on differ from the image's" in text
    assert "python3.11-minimal 3.11.2-6+deb12u6 here, 3.11.2-6+deb12u9 in the image" in text
    assert "isobench setup --match-image" in text


def test_a_refused_command_names_its_package_versions_and_the_remedy():
    native = {"executable": "/usr/bin/python3.11", "sha256": "a" * 64, "owner": "python3.11-minimal 3.11.2-6+deb12u6"}
    docker = {**native, "sha256": "b" * 64, "owner": "python3.11-minimal 3.11.2-6+deb12u9"}
    found = differences({"native": native, "docker-host": docker}, "native")
    line = refusal("try-python3", found, "native")
    assert "from python3.11-minimal 3.11.2-6+deb12u6 in native, python3.11-minimal 3.11.2-6+deb12u9 in docker-host" in (
        line
    )
    assert "isobench setup --match-image" in line
    # another package (or none known): no versions remedy
    other = differences({"native": native, "docker-host": {**docker, "owner": "python3.12-minimal 3.12"}}, "native")
    assert "--match-image" not in refusal("t", other, "native")
