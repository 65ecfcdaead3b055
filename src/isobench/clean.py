"""Removes what isobench created: labelled containers and volumes, scratch
directories. Never touches anything without the isobench label or outside
isobench's own directories."""

from __future__ import annotations

import os
import shutil

from isobench.workspace import DATA_ROOT, LABEL, TMP_ROOT


def _docker_client():
    try:
        import docker
        client = docker.from_env(timeout=30)
        client.ping()
        return client
    except Exception:  # noqa: BLE001 - no engine means no containers to clean
        return None


def clean(run_id: str | None = None) -> list[str]:
    """Remove isobench's leftovers (of one run, or all); returns what was removed."""
    removed: list[str] = []
    client = _docker_client()
    if client is not None:
        label = f"{LABEL}.run={run_id}" if run_id else f"{LABEL}=1"
        for container in client.containers.list(all=True, filters={"label": label}):
            container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
        for volume in client.volumes.list(filters={"label": label}):
            volume.remove(force=True)
            removed.append(f"volume {volume.name}")
    for root in (DATA_ROOT, TMP_ROOT):
        if not os.path.isdir(root):
            continue
        for entry in sorted(os.listdir(root)):
            if run_id is None or entry.startswith(run_id):
                shutil.rmtree(os.path.join(root, entry), ignore_errors=True)
                removed.append(f"directory {os.path.join(root, entry)}")
    return removed
