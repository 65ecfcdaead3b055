#!/usr/bin/env bash
# Prepare a Debian 12 host for isobench: Docker Engine, debootstrap, QEMU,
# Python, and the workload tools (`python3 -m isobench.host.packages`: each
# workload module's declared packages plus src/isobench/data/base-packages.txt,
# the same list the image is built from, so native runs use the same versions).
#
# Idempotent; run as root: sudo scripts/install-host.sh
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")

say() { echo "install-host: $*"; }
die() { echo "install-host: error: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root"
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || say "warning: made for Debian 12 (bookworm), this is ${PRETTY_NAME:-unknown}"

export DEBIAN_FRONTEND=noninteractive
# needrestart (a docker.io recommend) must not restart services behind our back
export NEEDRESTART_SUSPEND=1

# Host infrastructure (not workload tools): engine, rootfs builder, hypervisor,
# Python for isobench itself.
# crun and runsc (gVisor) are the OCI runtimes beside runc (start-dockerd.sh
# registers them with Docker; docs/environments/runtimes.md).
INFRA=(docker.io containerd runc crun runsc tini iptables debootstrap qemu-system-x86 qemu-utils
       python3 python3-venv python3-pip ca-certificates procps iproute2 util-linux
       tar e2fsprogs chromium)
# Where the kernel has AppArmor on (a Debian 12 server's does), the engine
# loads its docker-default profile with apparmor_parser, which docker.io only
# recommends: without it no container starts ("apparmor_parser": executable
# file not found; the host lane, 2026-11-29). A kernel without it needs none.
if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = "Y" ]; then
    INFRA+=(apparmor)
fi
# Under systemd a native duet side stands in a scope systemd delegates to
# isobench (host/samplecgroup.py), asked for on the system bus with busctl; a
# server installed without Debian's standard packages has no bus, and its
# native sides fell back to sched_setaffinity (the host lane, 2026-11-29).
if [ "$(cat /proc/1/comm 2>/dev/null)" = "systemd" ]; then
    INFRA+=(dbus)
fi

# No service starts because of this install (deb-systemd-invoke and
# invoke-rc.d both obey policy-rc.d). Keep an existing policy, else add a
# temporary one.
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# isobench install-host.sh: start no service during install\nexit 101\n' >"$POLICY"
    chmod 755 "$POLICY"
    trap 'rm -f "$POLICY"' EXIT
fi

say "apt-get update"
apt-get update -q >/dev/null

say "installing ${#INFRA[@]} infrastructure packages: ${INFRA[*]}"
apt-get install -y -q --no-install-recommends "${INFRA[@]}" >/dev/null
if [ "$(cat /proc/1/comm 2>/dev/null)" = "systemd" ]; then
    # policy-rc.d kept the new bus from starting; isobench asks it for scopes
    systemctl start dbus.socket dbus.service >/dev/null || die "systemctl start dbus.service failed"
fi

# The workload tools, from the workload modules themselves: Debian's python3
# (just installed) without site packages, since the venv does not exist yet.
TOOLS_OUT=$(PYTHONPATH="${ISOBENCH_PYTHONPATH:-$ROOT/src}" /usr/bin/python3 -S -m isobench.host.packages) || die "cannot list the workload tools"
mapfile -t TOOLS <<<"$TOOLS_OUT"
[ "${#TOOLS[@]}" -gt 0 ] && [ -n "${TOOLS[0]}" ] || die "empty workload tool list"

say "installing ${#TOOLS[@]} workload tool packages: ${TOOLS[*]}"
apt-get install -y -q --no-install-recommends "${TOOLS[@]}" >/dev/null

# Benchmark servers are started by the workloads themselves, on their own
# ports and data directories: a system instance would collide and use memory.
say "stopping and disabling system redis-server, mariadb and nutcracker (workloads start their own)"
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
    systemctl disable --now redis-server.service mariadb.service nutcracker.service >/dev/null 2>&1 || true
else
    for svc in redis-server mariadb nutcracker; do
        if [ -x "/etc/init.d/$svc" ]; then
            "/etc/init.d/$svc" status >/dev/null 2>&1 && "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
            update-rc.d "$svc" disable >/dev/null 2>&1 || true
        fi
    done
fi

# Versions installed, for the record (the image records its own in packages.tsv).
say "tool versions: $(dpkg-query -W -f '${Package}=${Version} ' "${TOOLS[@]}")"

# `isobench setup` runs start-dockerd.sh as a step of its own (ISOBENCH_NO_DOCKERD=1)
[ "${ISOBENCH_NO_DOCKERD:-}" = 1 ] || bash "$HERE/start-dockerd.sh"

[ -e /dev/kvm ] && say "/dev/kvm present (the first VM run probes whether it can boot a guest; else TCG)" || say "no /dev/kvm: VMs will run emulated (TCG)"
say "done"
