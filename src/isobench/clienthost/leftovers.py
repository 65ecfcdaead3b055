"""What a crashed run left of the client host (isobench clean, and the next
start): namespaces, links and iptables rules recognised by their names and
comments (addresses.py)."""

from __future__ import annotations

import shlex
from functools import partial

from isobench.clienthost.addresses import COMMENT_PREFIX, LINK_RE, NETNS_PREFIX, NETNS_SUFFIX, netns_name, tag_of
from isobench.clienthost.namespace import ip_step
from isobench.core.owner import Keeper


def leftovers(run_id: str | None = None) -> tuple[list[str], list[str], list[str]]:
    """(namespaces, links, iptables rule lines) that are isobench's (of one run, or all)."""
    ns_out = ip_step(["ip", "netns", "list"], check=False).stdout
    namespaces = []
    for line in ns_out.splitlines():
        name = line.split()[0] if line.split() else ""
        if run_id is not None:
            if name == netns_name(run_id):
                namespaces.append(name)
        elif name.startswith(NETNS_PREFIX) and name.endswith(NETNS_SUFFIX):
            namespaces.append(name)
    link_out = ip_step(["ip", "-o", "link", "show"], check=False).stdout
    prefix = f"ib-{tag_of(run_id)}-" if run_id is not None else None
    links = []
    for line in link_out.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        name = parts[1].strip().split("@")[0]
        if LINK_RE.match(name) and (prefix is None or name.startswith(prefix)):
            links.append(name)
    # a missing or hung iptables-save reads as no rules (run_argv never raises)
    saved = ip_step(["iptables-save", "-t", "filter"], check=False).stdout
    rules = [line for line in saved.splitlines() if line.startswith("-A ") and rule_is_ours(line, run_id)]
    return namespaces, links, rules


def rule_is_ours(line: str, run_id: str | None) -> bool:
    """An iptables-save line carrying isobench's comment (of one run, or any)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if "--comment" not in words:
        return False
    comment = words[words.index("--comment") + 1]
    if run_id is not None:
        return comment == f"{COMMENT_PREFIX}{run_id}"
    return comment.startswith(COMMENT_PREFIX)


def netns_of(name: str, run_id: str) -> bool:
    return name == netns_name(run_id)


def link_of(name: str, run_id: str) -> bool:
    return name.startswith(f"ib-{tag_of(run_id)}-")


def clean_network(run_id: str | None = None, keeper: Keeper | None = None) -> list[str]:
    """Remove isobench's namespaces, links and iptables rules, but none of a
    live run (`keeper`'s); returns what went."""
    keeper = keeper or Keeper()
    removed = []
    namespaces, links, rules = leftovers(run_id)
    for line in rules:
        if keeper.keeps_run(f"iptables rule {line}", partial(rule_is_ours, line)):
            continue
        words = shlex.split(line)
        if ip_step(["iptables", "-w", "5", "-D", *words[1:]], check=False).ok:
            removed.append(f"iptables rule {line}")
    for name in namespaces:
        if keeper.keeps_run(f"network namespace {name}", partial(netns_of, name)):
            continue
        if ip_step(["ip", "netns", "del", name], check=False).ok:
            removed.append(f"network namespace {name}")
    for name in sorted(links, key=lambda n: n.endswith("-br")):  # veths and taps before bridges
        if keeper.keeps_run(f"link {name}", partial(link_of, name)):
            continue
        if ip_step(["ip", "link", "del", name], check=False).ok:
            removed.append(f"link {name}")
    return removed
