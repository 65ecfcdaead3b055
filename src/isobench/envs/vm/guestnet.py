"""A guest's NIC on the client host's bridge (clienthost.py): the host's tap,
joined to the bridge, and the guest's interface addressed through the
guest agent."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from isobench.core.errors import EnvironmentError_
from isobench.core.proc import ExecResult, run_argv
from isobench.envs.vm.guestagent import GuestAgent
from isobench.envs.vm.qemu_cmdline import Nic

VHOST_NET = "/dev/vhost-net"
NET_STEP_TIMEOUT_S = 30
NET_READY_TIMEOUT_S = 30
# In the guest: load virtio_net, find the NIC by its MAC, give it the
# address on the client host's bridge. Prints the interface's name.
GUEST_NET_SCRIPT = r"""
modprobe virtio_net 2>/dev/null
dev=; i=0
while [ -z "$dev" ] && [ $i -lt 200 ]; do
  for d in /sys/class/net/*; do
    [ "$(cat "$d/address" 2>/dev/null)" = "$1" ] && dev="${d##*/}"
  done
  [ -n "$dev" ] || { sleep 0.05; i=$((i + 1)); }
done
[ -n "$dev" ] || { echo "no network interface with MAC $1" >&2; exit 1; }
ip link set "$dev" mtu 1500 up && ip addr add "$2" dev "$dev" && echo "$dev"
"""


def ip_step(argv: list[str]) -> ExecResult:
    """An `ip` step on the host; never raises (the caller reads returncode)."""
    return run_argv(argv, NET_STEP_TIMEOUT_S)


def nic(run_id: str, tap: str, index: int) -> Nic:
    from isobench.clienthost import guest_mac

    return Nic(tap=tap, mac=guest_mac(run_id, index), vhost=os.path.exists(VHOST_NET))


def create_tap(run_id: str, owner: str) -> tuple[str, int]:
    """The first free ``ib-XXXX-tI`` of this run (a twin booted beside the
    measured guest takes the next one, and so the next address): (name,
    index). join_bridge() then joins it to the client host's bridge."""
    from isobench.clienthost import MAX_GUESTS, tap_name

    for index in range(MAX_GUESTS):
        name = tap_name(run_id, index)
        if ip_step(["ip", "link", "show", "dev", name]).returncode == 0:
            continue  # another guest of this run has it
        r = ip_step(["ip", "tuntap", "add", "dev", name, "mode", "tap"])
        if r.returncode != 0:
            if ip_step(["ip", "link", "show", "dev", name]).returncode == 0:
                continue  # lost a race for the name
            raise EnvironmentError_(f"{owner}: cannot create tap {name}: {r.stderr.strip()}")
        return name, index
    raise EnvironmentError_(f"{owner}: no free tap name for this run")


def join_bridge(run_id: str, tap: str, owner: str) -> None:
    """The tap on the client host's bridge, MTU 1500, up."""
    from isobench.clienthost import link_names

    bridge = link_names(run_id)[0]
    for step in (
        ["ip", "link", "set", "dev", tap, "mtu", "1500"],
        ["ip", "link", "set", "dev", tap, "master", bridge],
        ["ip", "link", "set", "dev", tap, "up"],
    ):
        r = ip_step(step)
        if r.returncode != 0:
            raise EnvironmentError_(f"{owner}: {' '.join(step)}: {r.stderr.strip()}")


def delete_tap(tap: str) -> None:
    ip_step(["ip", "link", "del", "dev", tap])


def guest_iface(bench_addr: str, index: int):
    """The guest's interface address (IPv4Interface) for tap `index`."""
    from isobench.clienthost import guest_addr

    return guest_addr(bench_addr, index)


def reaches(addr: str) -> bool:
    """A TCP connection attempt from the host to addr:9 is answered (RST or accept)."""
    try:
        socket.create_connection((addr, 9), 0.5).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return True


def configure_guest(ga: GuestAgent, run_id: str, nic_: Nic, iface, check_alive: Callable[[], None]) -> dict:
    """Address the NIC through the guest agent (virtio_net is a module of
    the cloud kernel, so the kernel's ip= cannot do it without an
    initramfs), then wait until the host reaches the guest. Returns the
    NIC's facts."""
    from isobench.clienthost import link_names

    t0 = time.monotonic()
    r = ga.exec(["sh", "-c", GUEST_NET_SCRIPT, "sh", nic_.mac, str(iface)], NET_STEP_TIMEOUT_S)
    if not r.ok:
        raise EnvironmentError_(f"{ga.owner}: cannot configure the guest's NIC: {r.describe()}")
    deadline = time.monotonic() + NET_READY_TIMEOUT_S
    while not reaches(str(iface.ip)):
        check_alive()
        if time.monotonic() > deadline:
            raise EnvironmentError_(f"{ga.owner}: the host cannot reach the guest at {iface.ip} (tap {nic_.tap})")
        time.sleep(0.1)
    return {
        "tap": nic_.tap,
        "bridge": link_names(run_id)[0],
        "mac": nic_.mac,
        "model": "virtio-net-pci",
        "vhost": bool(nic_.vhost),
        "address": str(iface),
        "guest_interface": r.stdout.strip(),
        "setup_s": round(time.monotonic() - t0, 3),
    }
