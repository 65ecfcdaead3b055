"""Checks a valid study against this host before anything starts: sizes
that cannot fit in its memory or on its disk are refused with one line
naming the file and the field."""

from __future__ import annotations

from isobench.envs.kinds import kind_of
from isobench.study import Study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import WorkloadError
from isobench.hostinfo import HostInfo

MEMORY_SHARE = 0.8  # leave the kernel, engine and VMM room to breathe
DISK_SHARE = 0.9

GiB = 2**30


def preflight(study: Study, host: HostInfo) -> list[str]:
    """One-line problems; empty when the study fits. Every environment holds
    its own copy of each workload's inputs at the same time (all are
    prepared before the first round), so needs are multiplied by their count."""
    n_envs = len(study.environments)
    problems: list[str] = []
    totals = {"memory": 0, "disk": 0}
    biggest: dict[str, tuple[str, int]] = {}
    for entry in study.workloads:
        workload = WORKLOADS[entry.workload](entry.params, host)
        try:
            prints = workload.footprint()
        except WorkloadError as exc:
            problems.append(f"{study.path}: workloads.{entry.key}: {exc}")
            continue
        for fp in prints:
            need = fp.bytes * n_envs
            totals[fp.resource] += need
            if need > biggest.get(fp.resource, ("", -1))[1]:
                biggest[fp.resource] = (f"workloads.{entry.key}.{fp.field}", need)
    # what each kind holds of the host itself (a guest's RAM), all instances
    for name, spec in study.environments.items():
        problems += [f"{study.path}: environments.{name}.{field}: {problem}"
                     for field, problem in kind_of(spec.kind).check(spec)]
        for fp in kind_of(spec.kind).footprint(spec):
            totals[fp.resource] += fp.bytes
            if fp.bytes > biggest.get(fp.resource, ("", -1))[1]:
                biggest[fp.resource] = (f"environments.{name}.{fp.field}", fp.bytes)
    limits = {"memory": (host.mem_bytes * MEMORY_SHARE, f"{MEMORY_SHARE:.0%} of this host's "
                         f"{host.mem_bytes / GiB:.1f} GiB of memory"),
              "disk": (host.disk_free_bytes * DISK_SHARE, f"{DISK_SHARE:.0%} of the "
                       f"{host.disk_free_bytes / GiB:.1f} GiB free on the disk")}
    for resource, total in totals.items():
        limit, what = limits[resource]
        if total and limit and total > limit:
            field, _ = biggest[resource]
            problems.append(f"{study.path}: {field}: {n_envs} environments need {total / GiB:.1f} GiB of "
                            f"{resource} in all, more than {what}; lower it")
    return problems
