"""Workloads by name, as study files refer to them."""

from __future__ import annotations

# envs/__init__ imports workloads.base (for HostInfo), and workloads.base
# imports envs.base: loading the envs package first makes every import
# order work (importing workloads.base first would otherwise find it half
# initialised). The clean fix is a TYPE_CHECKING import in envs/__init__.
import isobench.envs  # noqa: F401,I001
from isobench.workloads.base import Workload
from isobench.workloads.compress import Compression
from isobench.workloads.fio import Fio
from isobench.workloads.hpcc import Hpcc
from isobench.workloads.startup import Startup
from isobench.workloads.netbw import Netbw
from isobench.workloads.netlat import Netlat
from isobench.workloads.oltp import Oltp
from isobench.workloads.redis import Redis
from isobench.workloads.redis_scaleout import RedisScaleout
from isobench.workloads.api import Api

WORKLOADS: dict[str, type[Workload]] = {cls.name: cls for cls in (Compression, Hpcc, Fio, Startup,
                                                                  Netbw, Netlat, Redis, Oltp,
                                                                  RedisScaleout, Api)}


def get(name: str) -> type[Workload]:
    try:
        return WORKLOADS[name]
    except KeyError:
        known = ", ".join(sorted(WORKLOADS))
        raise KeyError(f"unknown workload {name!r}; known: {known}") from None


__all__ = ["WORKLOADS", "get", "Compression", "Fio", "Hpcc"]
