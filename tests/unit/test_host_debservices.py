"""The services a study's new packages would bring, read from their .debs:
real `dpkg-deb -c` listings of Debian 12 packages (tests/data/packages/
dpkg-deb-c-*: cron, openbsd-inetd, openssh-server with services, tcpd
without) parsed into their units and init scripts; the fetch bounded in
size (texlive-full's real `apt-get download --print-uris`: 3.8 GB) and time,
its directory removed and its processes ended whatever happens; the plan
saying the services, or why it cannot tell."""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from isobench.host import aptplan
from isobench.host.aptplan import AptPlan, Change, describe, parse_simulation, with_services
from isobench.host.debservices import Unknown, download_bytes, services_in, services_of

DATA = Path(__file__).resolve().parents[1] / "data" / "packages"


def ended(pid: int, marker: bytes, within_s: float = 10.0) -> bool:
    """The process is gone, a zombie, or its PID now another's, within a few
    seconds: a SIGKILLed process exits when next scheduled, which at nice 19
    on a busy host (the unit lane's) took longer than the check once
    (2026-11-28: state R); this host's pid_max is 32768, so a PID comes back."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z" or marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        time.sleep(0.05)
    return False


def listing(name: str) -> str:
    return (DATA / f"dpkg-deb-c-{name}.stdout").read_text()


def test_the_units_of_real_packages():
    assert services_in(listing("cron")) == ("cron.service",)  # /etc/init.d/cron: the unit replaces it
    # openbsd-inetd.service is a link to inetd.service (an alias), and names the init script's unit
    assert services_in(listing("openbsd-inetd")) == ("inetd.service",)
    assert services_in(listing("openssh-server")) == ("ssh.service", "ssh.socket")  # not rescue-ssh.target
    assert services_in(listing("tcpd")) == ()
    assert services_in("") == ()


def test_an_init_script_without_a_unit_a_template_and_the_usr_lib_layout():
    cron = listing("cron")
    no_unit = "\n".join(ln for ln in cron.splitlines() if "cron.service" not in ln)
    assert services_in(no_unit) == ("/etc/init.d/cron",)
    assert services_in(cron.replace("./lib/systemd/", "./usr/lib/systemd/")) == ("cron.service",)  # Debian 13
    template = cron.replace("cron.service", "cron@.service")
    assert services_in(template) == ("/etc/init.d/cron",)
    timer = cron.replace("cron.service", "cron.timer")
    assert services_in(timer) == ("cron.timer", "/etc/init.d/cron")


def test_the_bytes_to_download():
    uris = (DATA / "apt-get-download-print-uris-texlive-full.stdout").read_text()
    assert download_bytes(uris) == 3_799_075_606 and len(uris.splitlines()) == 355
    assert download_bytes("") == 0


def fake(tmp_path, monkeypatch, apt: str, dpkg_deb: str = "exit 9\n") -> Path:
    """apt-get and dpkg-deb as scripts on PATH; temporary directories in
    ``tmp_path / "tmp"`` (returned), to see them removed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, script in (("apt-get", apt), ("dpkg-deb", dpkg_deb)):
        (bin_dir / name).write_text("#!/bin/sh\n" + script)
        (bin_dir / name).chmod((bin_dir / name).stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_the_debs_are_fetched_listed_and_removed(tmp_path, monkeypatch):
    apt = f"""case "$*" in *--print-uris*) head -2 "{DATA}/apt-get-download-print-uris-texlive-full.stdout"; exit;; esac
echo "$*" > "{tmp_path}/asked"; : > cron_3.0pl1-162_amd64.deb; : > tcpd_7.6.q-32_amd64.deb
"""
    lister = f'case "$2" in cron_*) cat "{DATA}/dpkg-deb-c-cron.stdout";; *) cat "{DATA}/dpkg-deb-c-tcpd.stdout";; esac'
    tmp = fake(tmp_path, monkeypatch, apt, lister)
    assert services_of([("cron", "3.0pl1-162"), ("tcpd", "7.6.q-32")]) == (("cron", "cron.service"),)
    assert (tmp_path / "asked").read_text().split() == ["download", "-q", "cron=3.0pl1-162", "tcpd=7.6.q-32"]
    assert list(tmp.iterdir()) == []


def test_too_big_unknown_to_apt_or_too_slow_cannot_tell_and_leaves_nothing(tmp_path, monkeypatch):
    plan = parse_simulation((DATA / "apt-get-s-texlive-full.stdout").read_text())
    texlive = [(c.package, c.new or "") for c in plan.install]
    tmp = fake(tmp_path, monkeypatch, f'cat "{DATA}/apt-get-download-print-uris-texlive-full.stdout"\n')
    with pytest.raises(Unknown) as err:
        services_of(texlive)
    assert str(err.value) == (
        "the 355 new packages are 3799 MB to download, over the 100 MB isobench fetches to read them"
    )
    # apt's own refusal (its real line for a version it does not have)
    fake(tmp_path, monkeypatch, "echo \"E: Version '9.9' for 'cron' was not found\" >&2\nexit 100\n")
    with pytest.raises(Unknown) as err:
        services_of([("cron", "9.9")])
    assert str(err.value) == "apt-get download: E: Version '9.9' for 'cron' was not found"
    # a download that hangs: it and what it started are ended
    fake(tmp_path, monkeypatch, f'sleep 30.0417 & echo $! > "{tmp_path}/child"\nwait\n')
    start = time.monotonic()
    with pytest.raises(Unknown) as err:
        services_of([("cron", "3.0pl1-162")], timeout_s=1.0)
    assert str(err.value) == "reading the new packages took over 1 s (at apt-get download)"
    assert time.monotonic() - start < 10
    assert ended(int((tmp_path / "child").read_text()), b"30.0417")
    assert list(tmp.iterdir()) == []


OPENSSH = AptPlan(
    install=(Change("runit-helper", None, "2.15.2"), Change("openssh-server", None, "1:9.2p1-2+deb12u10")),
    upgrade=(Change("openssh-client", "1:9.2p1-2+deb12u6", "1:9.2p1-2+deb12u10"),),
)


def test_the_plan_says_the_services_of_its_new_packages_or_why_it_cannot(monkeypatch):
    asked = []

    def read(packages, timeout_s):
        asked.append(packages)
        return tuple((name, unit) for name, _ in packages for unit in services_in(listing_or_none(name)))

    monkeypatch.setattr(aptplan, "services_of", read)
    plan = with_services(OPENSSH)
    assert asked == [[("runit-helper", "2.15.2"), ("openssh-server", "1:9.2p1-2+deb12u10")]]  # not the upgrade
    assert describe(plan) == (
        "adds 2 (runit-helper, openssh-server), upgrades 1 (openssh-client 1:9.2p1-2+deb12u6 -> 1:9.2p1-2+deb12u10), "
        "removes none, starts services: ssh.service (openssh-server), ssh.socket (openssh-server)"
    )
    assert describe(plan, most=1).endswith("starts services: ssh.service (openssh-server), and 1 more")
    assert plan.as_dict()["services"] == [
        {"package": "openssh-server", "unit": "ssh.service"},
        {"package": "openssh-server", "unit": "ssh.socket"},
    ]
    assert plan.as_dict()["services_unknown"] is None
    quiet = with_services(AptPlan(install=(Change("tcpd", None, "7.6.q-32"),)))
    assert describe(quiet) == "adds 1 (tcpd), upgrades none, removes none, starts no service"
    assert quiet.as_dict()["services"] == []
    upgrade_only = AptPlan(upgrade=OPENSSH.upgrade)
    assert with_services(upgrade_only) is upgrade_only and len(asked) == 2  # nothing new: nothing fetched

    def offline(packages, timeout_s):
        raise Unknown("apt-get download: E: Failed to fetch http://deb.debian.org/debian/pool/main/c/cron/x.deb")

    monkeypatch.setattr(aptplan, "services_of", offline)
    unknown = with_services(OPENSSH)
    assert describe(unknown).endswith(
        "removes none, services: could not tell (apt-get download: E: Failed to fetch "
        "http://deb.debian.org/debian/pool/main/c/cron/x.deb)"
    )
    assert unknown.as_dict()["services"] is None and unknown.as_dict()["services_unknown"].startswith("apt-get")


def listing_or_none(name: str) -> str:
    path = DATA / f"dpkg-deb-c-{name}.stdout"
    return path.read_text() if path.exists() else ""
