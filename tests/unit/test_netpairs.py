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


def _flagged_run(baseline: str) -> RunData:
    """Latency only, primaries stored (p50 primary in both cases, p99 descriptive), rounds kept."""
    import math

    keys = [
        MetricKey("netlat", case, metric, "µs", False, "latency", primary=metric == "p50_us")
        for case in ("tcp", "udp")
        for metric in ("p50_us", "p99_us")
    ]
    facts = {
        "docker-nat": {"kind": "docker", "options": {"network": "bridge"}},
        "docker-host": {"kind": "docker", "options": {"network": "host"}},
    }
    values, rounds = {}, {}
    for i, key in enumerate(keys):
        for env, base in (("docker-nat", 135.0 + 10 * i), ("docker-host", 115.0 + 10 * i)):
            # a round's shared drift and each sample's own wobble, fixed numbers
            values[(key, env)] = [
                base * (1 + 0.05 * math.sin(r + i)) * (1 + 0.02 * math.cos(3 * r + len(env))) for r in range(6)
            ]
            rounds[(key, env)] = list(range(6))
    return RunData(
        "r",
        "s",
        "",
        None,
        "complete",
        {},
        "",
        "",
        baseline,
        ["docker-nat", "docker-host"],
        facts,
        keys,
        values,
        rounds=rounds,
    )


def test_nat_against_host_is_judged_exactly_as_table_i_judges_a_cell_against_its_baseline():
    from isobench.results.table import build_table

    lines = nat_vs_host(_flagged_run("docker-nat"))
    table = build_table(_flagged_run("docker-host"))  # host networking as the baseline: Table I's own verdicts
    expected = {r.key: c.verdict for r in table.rows for c in r.cells if c.verdict is not None}
    assert len(lines) == 4 and len(expected) == 4
    for line in lines:
        want = expected[line.key]
        got = line.verdict
        assert (got.verdict, got.m, got.level, got.low, got.high, got.effect.test) == (
            want.verdict,
            want.m,
            want.level,
            want.low,
            want.high,
            want.effect.test,
        )
    assert {ln.verdict.m for ln in lines} == {2}  # two families of two, as Table I's
    text = section_lines(_flagged_run("docker-nat"))
    assert text[1].startswith(
        "Compared directly, host networking in the baseline's place, with Table I's statistics: paired t-test "
        "on the per-round log ratios; Benjamini-Hochberg and the interval level within each of Table I's families "
        "(primary: m = 2, at "
    )
    assert "descriptive (d): m = 2" in text[1]
    assert [t.split(":")[0] for t in text[2:]] == ["netlat tcp", "netlat tcp", "netlat udp", "netlat udp"]
    assert sum("(d):" in t for t in text[2:]) == 2
