"""Where isobench keeps things on the host. Everything it creates lives under
these roots or carries the isobench label, so cleanup can find it."""

import os

STATE_ROOT = os.environ.get("ISOBENCH_HOME", "/var/lib/isobench")
DATA_ROOT = os.path.join(STATE_ROOT, "scratch")  # workload files on the host disk
TMP_ROOT = "/dev/shm/isobench"  # RAM-backed inputs (tmpfs)
IMAGE_ROOT = os.path.join(STATE_ROOT, "images")
DEFAULT_STORE = os.path.join(STATE_ROOT, "results.sqlite")
LABEL = "isobench"  # Docker label key on every container, volume and network

# Inside a container or guest: the environment's own storage and its tmpfs.
GUEST_DATA_DIR = "/isobench/data"
GUEST_TMP_DIR = "/isobench/tmp"


def of_run(entry: str, run_id: str) -> bool:
    """Is a scratch entry (named `<run id>-…`) the run's?"""
    return entry.startswith(f"{run_id}-")
