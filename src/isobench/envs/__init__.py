"""Environments, built from a study's environment specs by their kind (kinds.py)."""

from __future__ import annotations

from isobench.envs.base import Environment
from isobench.envs.kinds import kind_of
from isobench.host.hostinfo import HostInfo


def make_environment(name: str, spec, run_id: str, host: HostInfo, image: str | None) -> Environment:
    """One environment, or a group of ``spec.instances`` identical ones
    (members NAME-1 ... NAME-N)."""
    kind = kind_of(spec.kind)
    if spec.instances == 1:
        return kind.make(name, spec, run_id=run_id, host=host, image=image, index=0)
    from isobench.envs.group import InstanceGroup

    members = [
        kind.make(f"{name}-{i + 1}", spec, run_id=run_id, host=host, image=image, index=i)
        for i in range(spec.instances)
    ]
    return InstanceGroup(name=name, spec=spec, members=members)
