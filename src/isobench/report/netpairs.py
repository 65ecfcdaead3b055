"""Docker NAT vs host networking, compared directly (not via the baseline):
the IBM and VMware studies' point that Docker's NAT, not the container,
costs latency. For every pair (environment with option network = "bridge",
environment with network = "host", whatever their kind) in a run, the
metrics whose role is latency are compared with the same tests and
corrections as Table I (results/analysis.py), host networking as the
reference, rounds paired."""

from __future__ import annotations

import math
from dataclasses import dataclass

from isobench.analysis.verdicts import Verdict
from isobench.core.metric import LATENCY
from isobench.results.analysis import Question, judge_cells, pairs, settings_of
from isobench.results.model import MetricKey, RunData
from isobench.results.roles import role_of
from isobench.results.table import fmt_num, row_label

TITLE = "NAT vs host networking"


@dataclass(frozen=True)
class PairLine:
    key: MetricKey
    nat_env: str
    host_env: str
    verdict: Verdict

    def text(self) -> str:
        e = self.verdict.effect
        # the geometric centres the change is the ratio of (the means are not)
        nat = e.centre_c if math.isfinite(e.centre_c) else e.candidate.mean
        host = e.centre_b if math.isfinite(e.centre_b) else e.baseline.mean
        return (
            f"{self.key.workload} {row_label(self.key)}: {self.nat_env} {fmt_num(nat)} vs "
            f"{self.host_env} {fmt_num(host)}: {self.verdict.text}"
        )


def _network(run: RunData, env: str) -> str | None:
    """The environment's network option (bridge: NAT, host), if it has one."""
    return ((run.env_facts.get(env) or {}).get("options") or {}).get("network")


def nat_vs_host(run: RunData) -> list[PairLine]:
    nats = [e for e in run.environments if _network(run, e) == "bridge"]
    hosts = [e for e in run.environments if _network(run, e) == "host"]
    asked = []
    for key in run.metrics:
        if role_of(key) != LATENCY:
            continue
        for nat in nats:
            for host in hosts:
                a, b = run.values.get((key, nat)), run.values.get((key, host))
                if a and b:
                    asked.append((key, nat, host, Question(key, a, b, pairs(run, key, nat, host))))
    verdicts = judge_cells([q for *_, q in asked], settings_of(run))
    return [PairLine(key, nat, host, v) for (key, nat, host, _), v in zip(asked, verdicts)]


def section_lines(run: RunData) -> list[str]:
    """Plain-text lines for the renderers: title, explanation, one line per
    comparison; empty when the run has no NAT/host pair."""
    lines = nat_vs_host(run)
    if not lines:
        return []
    return [
        TITLE,
        "Compared directly, host networking as the reference (paired or Welch test on logs, "
        "Benjamini-Hochberg over these lines; % is the NAT side's change):",
        *[ln.text() for ln in lines],
    ]
