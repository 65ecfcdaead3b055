"""Docker NAT vs host networking, compared directly (not via the baseline):
the IBM and VMware studies' point that Docker's NAT, not the container,
costs latency. For every pair (environment with option network = "bridge",
environment with network = "host", whatever their kind) in a run, the
metrics whose role is latency are compared with the same Welch test as
Table I, host networking as the reference."""

from __future__ import annotations

from dataclasses import dataclass

from isobench.metric import LATENCY
from isobench.report.model import MetricKey, RunData
from isobench.report.roles import role_of
from isobench.report.table import fmt_num, fmt_pct, row_label
from isobench.stats import Comparison, compare

TITLE = "Docker NAT vs host networking"


@dataclass(frozen=True)
class PairLine:
    key: MetricKey
    nat_env: str
    host_env: str
    comparison: Comparison

    def text(self) -> str:
        c = self.comparison
        verdict = f"{c.verdict}, significant" if c.significant else c.verdict
        if c.p_value == c.p_value:  # not nan
            verdict += f" (p={c.p_value:.2g})"
        return (f"{self.key.workload} {row_label(self.key)}: {self.nat_env} {fmt_num(c.candidate.mean)} vs "
                f"{self.host_env} {fmt_num(c.baseline.mean)}: {fmt_pct(c.pct)}, {verdict}")


def _network(run: RunData, env: str) -> str | None:
    """The environment's network option (bridge: NAT, host), if it has one."""
    return ((run.env_facts.get(env) or {}).get("options") or {}).get("network")


def nat_vs_host(run: RunData) -> list[PairLine]:
    nats = [e for e in run.environments if _network(run, e) == "bridge"]
    hosts = [e for e in run.environments if _network(run, e) == "host"]
    lines = []
    for key in run.metrics:
        if role_of(key) != LATENCY:
            continue
        for nat in nats:
            for host in hosts:
                a, b = run.values.get((key, nat)), run.values.get((key, host))
                if a and b:
                    lines.append(PairLine(key, nat, host, compare(a, b, key.higher_is_better)))
    return lines


def section_lines(run: RunData) -> list[str]:
    """Plain-text lines for the renderers: title, explanation, one line per
    comparison; empty when the run has no NAT/host pair."""
    lines = nat_vs_host(run)
    if not lines:
        return []
    return [TITLE, "Compared directly, host networking as the reference (Welch's t-test, two-sided, "
                   "p < 0.05; % is the NAT mean's change):", *[ln.text() for ln in lines]]
