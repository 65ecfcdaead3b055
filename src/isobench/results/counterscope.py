"""Whose a sample's counters are: the environment's own (its cgroup's, QEMU's
threads) or the host's, which count everything on it. Light, with no
numeric libraries: the store's readback imports it for every run it reads."""

from __future__ import annotations

from typing import Any

ENVIRONMENT, HOST = "environment", "host"
OWN_PREFIXES = ("cgroup.", "vmm.")


def attributable(deltas: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A sample's counters that are its own: all of them, but for a duet's
    sample (extra["duet"]) only the environment's own (its cgroup's, QEMU's
    threads), since the host-wide ones also counted the other side running
    at the same time."""
    if not isinstance(extra.get("duet"), dict):
        return deltas
    return {k: v for k, v in deltas.items() if k.startswith(OWN_PREFIXES)}
