"""Docker NAT vs host networking, compared directly (not via the baseline):
the IBM and VMware studies' point that Docker's NAT, not the container,
costs latency. For every pair (environment with option network = "bridge",
environment with network = "host", whatever their kind) in a run, the
metrics whose role is latency are judged with Table I's own statistics,
host networking in the baseline's place: the same question
(results/analysis.reference_question: paired by round unless the order was
blocked, a duet's CPU sides where its test blocks by them), the same
per-cell test (analysis/stats.py) and the same Benjamini-Hochberg
correction and interval level over these lines, within each of Table I's
families (results/analysis.judge_families: a run's primary metrics, and
its descriptive ones marked (d)), with the same three verdicts
(analysis/verdicts.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from isobench.analysis.stats import TEST_CROSSOVER, TEST_PAIRED, TEST_WELCH_LOG
from isobench.analysis.verdicts import Verdict, fmt_level
from isobench.core.metric import LATENCY
from isobench.results.analysis import DESCRIPTIVE, PRIMARY, judge_families, reference_question, settings_of
from isobench.results.model import MetricKey, RunData
from isobench.results.roles import role_of
from isobench.results.table import DESCRIPTIVE_MARK, fmt_num, row_families, row_label

TITLE = "NAT vs host networking"


@dataclass(frozen=True)
class PairLine:
    key: MetricKey
    nat_env: str
    host_env: str
    verdict: Verdict
    family: str = ""  # Table I's: results.analysis.PRIMARY, DESCRIPTIVE, or "" (a run stored before primaries)

    def text(self) -> str:
        e = self.verdict.effect
        # the geometric centres the change is the ratio of (the means are not)
        nat = e.centre_c if math.isfinite(e.centre_c) else e.candidate.mean
        host = e.centre_b if math.isfinite(e.centre_b) else e.baseline.mean
        mark = f" {DESCRIPTIVE_MARK}" if self.family == DESCRIPTIVE else ""
        return (
            f"{self.key.workload} {row_label(self.key)}{mark}: {self.nat_env} {fmt_num(nat)} vs "
            f"{self.host_env} {fmt_num(host)}: {self.verdict.text}"
        )


def _network(run: RunData, env: str) -> str | None:
    """The environment's network option (bridge: NAT, host), if it has one."""
    return ((run.env_facts.get(env) or {}).get("options") or {}).get("network")


def nat_vs_host(run: RunData) -> list[PairLine]:
    """Every latency metric's NAT environment against each host-network one,
    judged as Table I judges a cell (the module docstring)."""
    nats = [e for e in run.environments if _network(run, e) == "bridge"]
    hosts = [e for e in run.environments if _network(run, e) == "host"]
    settings, families = settings_of(run), row_families(run)
    asked = []
    for key in run.metrics:
        if role_of(key) != LATENCY:
            continue
        for nat in nats:
            for host in hosts:
                q = reference_question(run, key, nat, host, settings)
                if q is not None:
                    asked.append((key, nat, host, q))
    family = [families.get(key, "") for key, *_ in asked]
    verdicts = judge_families([q for *_, q in asked], settings, family)
    return [PairLine(key, nat, host, v, f) for (key, nat, host, _), v, f in zip(asked, verdicts, family)]


def explanation(lines: list[PairLine]) -> str:
    """How the lines were judged, said: Table I's tests, and each family's m
    and interval level."""
    tests = ", ".join(sorted({TEST_NAMES.get(ln.verdict.effect.test, ln.verdict.effect.test) for ln in lines}))
    judged = {ln.family: ln.verdict for ln in lines if ln.verdict.effect.tested}
    named = {PRIMARY: "primary", DESCRIPTIVE: f"descriptive {DESCRIPTIVE_MARK}", "": "all"}
    levels = "; ".join(f"{named.get(f, f)}: m = {v.m}, at {fmt_level(v.level)}" for f, v in judged.items())
    within = "within each of Table I's families" if any(ln.family for ln in lines) else "over these lines"
    return (
        "Compared directly, host networking in the baseline's place, with Table I's statistics: "
        f"{tests or 'no test'}; Benjamini-Hochberg and the interval level {within}"
        + (f" ({levels})" if levels else "")
        + "; the same three verdicts. % is the NAT side's change:"
    )


# each test as Table I's legend names it, shorter
TEST_NAMES = {
    TEST_PAIRED: "paired t-test on the per-round log ratios",
    TEST_CROSSOVER: "paired crossover t-test blocked by the duet's CPU side",
    TEST_WELCH_LOG: "Welch's t-test on log values (rounds not paired)",
}


def section_lines(run: RunData) -> list[str]:
    """Plain-text lines for the renderers: title, explanation, one line per
    comparison; empty when the run has no NAT/host pair."""
    lines = nat_vs_host(run)
    if not lines:
        return []
    return [TITLE, explanation(lines), *[ln.text() for ln in lines]]
