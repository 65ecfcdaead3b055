"""Which hosts an Ansible inventory names. Ansible itself reads the file
(INI or YAML, host and group variables: `ansible-inventory --list`); the
pure part here turns its JSON into host names and applies --limit."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path


class InventoryError(RuntimeError):
    pass


def ansible_bin(name: str) -> str:
    """The ansible tool next to this Python (the locked venv), else PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def inventory_json(path: str, timeout: float = 60) -> dict:
    if not os.path.exists(path):
        raise InventoryError(f"{path}: no such inventory file")
    try:
        out = subprocess.run(
            [ansible_bin("ansible-inventory"), "-i", path, "--list"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InventoryError(f"{path}: ansible-inventory failed ({exc}); is ansible-core installed?") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise InventoryError(f"{path}: Ansible cannot read this inventory: {last}")
    return json.loads(out.stdout)


def _group_hosts(inv: dict, group: str, seen: set[str] | None = None) -> list[str]:
    seen = seen if seen is not None else set()
    if group in seen:
        return []
    seen.add(group)
    node = inv.get(group, {})
    out = list(node.get("hosts", []))
    for child in node.get("children", []):
        out += _group_hosts(inv, child, seen)
    return out


def hosts_of(inv: dict, limit: str | None = None) -> list[str]:
    """Host names in the inventory's `all` group, in first-seen order,
    restricted by LIMIT: comma- or colon-separated host or group names or
    shell patterns (`web*`), `!name` to exclude."""
    hosts = list(dict.fromkeys(_group_hosts(inv, "all") + list(inv.get("_meta", {}).get("hostvars", {}))))
    if not limit:
        return hosts
    groups = [g for g in inv if g != "_meta"]
    include: set[str] = set()
    exclude: set[str] = set()
    terms = [t.strip() for t in limit.replace(":", ",").split(",") if t.strip()]
    for term in terms:
        target = exclude if term.startswith("!") else include
        pattern = term.lstrip("!&")
        for g in groups:
            if fnmatch.fnmatchcase(g, pattern):
                target.update(_group_hosts(inv, g))
        target.update(h for h in hosts if fnmatch.fnmatchcase(h, pattern))
    if not any(not t.startswith("!") for t in terms):
        include = set(hosts)
    return [h for h in hosts if h in include and h not in exclude]
