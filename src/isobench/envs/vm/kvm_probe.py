"""Can KVM run a standard guest here? Asked once per host, answered by
booting the real guest.

/dev/kvm existing is not enough: on some hosts it belongs to a paravirtual
hypervisor (PVM) that cannot run a standard guest, and QEMU with
``-accel kvm`` hangs after the real-mode stage. So the probe boots the very
guest a study would boot (same code path, same command line, accel=kvm)
with a short deadline: success is the guest agent answering. The verdict
is cached under STATE_ROOT keyed by the host kernel, the QEMU version and
the image, so later runs decide instantly; delete the file to ask again.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass

from isobench.core.workspace import STATE_ROOT

CACHE_FILE = os.path.join(STATE_ROOT, "kvm-probe.json")
PROBE_DEADLINE_S = 25.0


@dataclass(frozen=True)
class Verdict:
    usable: bool
    reason: str
    key: str
    probed_at: str
    probe_s: float
    cached: bool = False

    def line(self) -> str:
        state = "KVM can run the guest" if self.usable else "KVM cannot run the guest"
        cached = ", cached" if self.cached else ""
        return f"{state}: {self.reason} (probed {self.probed_at} in {self.probe_s:.1f} s{cached})"


NOT_PROBED = "/dev/kvm present, not probed yet"


def when_probed() -> str:
    """When and how the verdict comes, said alike by `envs` and `doctor`:
    neither of them probes; starting a guest does."""
    return (
        'the first vm environment started with accel = "auto" (isobench run, try or calibrate) boots its '
        f"guest with KVM, at most {PROBE_DEADLINE_S:.0f} s, and keeps the verdict in {CACHE_FILE} "
        "(delete it to ask again)"
    )


def qemu_version(qemu: str = "qemu-system-x86_64") -> str:
    try:
        out = subprocess.run(
            [qemu, "--version"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "not installed"
    first = out.splitlines()[0] if out else ""
    return first.replace("QEMU emulator version ", "").strip() or "unknown"


def cache_key(kernel_release: str, qemu: str, image: str) -> str:
    """What the verdict depends on: the host kernel (and its KVM), QEMU, the guest."""
    return f"kernel={kernel_release};qemu={qemu};image={image}"


def host_key(image: str) -> str:
    return cache_key(platform.release(), qemu_version(), image)


def load(key: str, path: str = CACHE_FILE) -> Verdict | None:
    """The cached verdict for key, or None (no file, other key, unreadable)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    try:
        return Verdict(
            bool(data["usable"]), str(data["reason"]), key, str(data["probed_at"]), float(data["probe_s"]), cached=True
        )
    except (KeyError, TypeError, ValueError):
        return None


def save(verdict: Verdict, path: str = CACHE_FILE) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = asdict(verdict)
    data.pop("cached", None)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
    os.replace(tmp, path)


def kvm_device_problem() -> str | None:
    """Why KVM cannot even be tried, or None."""
    if not os.path.exists("/dev/kvm"):
        return "/dev/kvm does not exist (no KVM module, or nested virtualisation is off)"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "/dev/kvm is not readable and writable by this user"
    return None


def verdict(
    boot_probe, image: str, deadline_s: float = PROBE_DEADLINE_S, path: str = CACHE_FILE, refresh: bool = False
) -> Verdict:
    """The cached verdict, or a fresh one from boot_probe(deadline_s) ->
    (usable, reason), saved for next time."""
    key = host_key(image)
    if not refresh:
        cached = load(key, path)
        if cached is not None:
            return cached
    started = time.monotonic()
    problem = kvm_device_problem()
    if problem is not None:
        usable, reason = False, problem
    else:
        usable, reason = boot_probe(deadline_s)
    v = Verdict(usable, reason, key, time.strftime("%Y-%m-%d %H:%M:%S"), time.monotonic() - started)
    try:
        save(v, path)
    except OSError:
        pass
    return v
