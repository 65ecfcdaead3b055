"""Docker NAT vs host networking, compared directly in the reports."""

import pytest

from isobench.report.markdown import render_markdown
from isobench.report.netpairs import nat_vs_host, section_lines
from isobench.results.model import MetricKey, RunData


def run_with(nat, host, extra_envs=()):
    envs = ["native", "docker-nat", "docker-host", *extra_envs]
    facts = {
        "native": {"kind": "native", "options": {}},
        "docker-nat": {"kind": "docker", "options": {"network": "bridge"}},
        "docker-host": {"kind": "docker", "options": {"network": "host"}},
    }
    lat = MetricKey("netlat", "tcp", "mean_us", "µs", False)
    bw = MetricKey("netbw", "tx", "gbps", "Gbit/s", True)
    values = {
        (lat, "native"): [20.0, 20.5, 19.5],
        (lat, "docker-nat"): nat,
        (lat, "docker-host"): host,
        (bw, "native"): [10.0, 10.0],
        (bw, "docker-nat"): [9.0, 9.1],
        (bw, "docker-host"): [10.0, 9.9],
    }
    return RunData("r1", "s", "", None, "complete", {}, "", "", "native", envs, facts, [lat, bw], values)


def test_significant_nat_penalty_is_reported_as_worse():
    lines = nat_vs_host(run_with([40.0, 41.0, 39.0], [20.0, 21.0, 19.0]))
    assert len(lines) == 1  # latency metrics only, not bandwidth
    line = lines[0]
    assert (line.nat_env, line.host_env) == ("docker-nat", "docker-host")
    assert line.verdict.changed and line.verdict.pct == pytest.approx(100.0, abs=0.2)
    assert "worse: +100.1% [" in line.text() and "significant after correction" in line.text()


def test_no_difference_is_never_said_alone():
    text = section_lines(run_with([20.0, 25.0, 15.0], [21.0, 16.0, 24.0]))[2]
    assert "inconclusive at n = 3" in text and "rounds would resolve" in text
    assert "no significant difference" not in text


def test_section_in_markdown_and_absent_without_a_pair():
    md = render_markdown(run_with([40.0, 41.0, 39.0], [20.0, 21.0, 19.0]))
    assert "## NAT vs host networking" in md and "docker-nat 39.99 vs docker-host 19.98" in md  # geometric centres
    run = run_with([40.0], [20.0])
    run.env_facts["docker-host"]["options"]["network"] = "bridge"
    assert section_lines(run) == []
