"""Metric roles choose what the report draws and compares; the old naming
conventions apply only to metrics stored without a role."""

from isobench.core.metric import CPU_COST, CPU_UTIL, FAIRNESS, LATENCY, PER_INSTANCE, THROUGHPUT
from isobench.report import figures
from isobench.report.netpairs import nat_vs_host
from isobench.results.model import MetricKey, RunData
from isobench.results.roles import role_of
from isobench.results.table import build_table

ENVS = ["native", "nat", "host"]
# a runtime the report has never heard of: only its network option counts
FACTS = {
    "native": {"kind": "native", "options": {}},
    "nat": {"kind": "podman", "options": {"network": "bridge"}},
    "host": {"kind": "podman", "options": {"network": "host"}},
}


def _run(keys: list[MetricKey], values: dict[str, list[float]] | None = None) -> RunData:
    run = RunData("r", "s", "", None, "complete", {}, "", "", "native", ENVS, FACTS, keys)
    for key in keys:
        for env in ENVS:
            run.values[(key, env)] = (values or {}).get(env, [10.0, 11.0, 12.0])
    return run


def test_an_oddly_named_latency_enters_the_nat_vs_host_comparison():
    odd = MetricKey("mything", "default", "roundtrip_hops", "µs", False, LATENCY)
    plain = MetricKey("mything", "default", "widgets", "1/s", True, THROUGHPUT)
    run = _run([odd, plain], {"native": [10.0, 10.5, 9.5], "nat": [20.0, 21.0, 19.0], "host": [10.0, 11.0, 9.0]})
    lines = nat_vs_host(run)
    assert [(ln.key.metric, ln.nat_env, ln.host_env) for ln in lines] == [("roundtrip_hops", "nat", "host")]
    assert lines[0].verdict.changed


def test_a_declared_role_wins_over_the_old_names():
    # netlat's metrics were all latency by name; a declared role says otherwise
    assert role_of(MetricKey("netlat", "tcp", "mean_us", "µs", False)) == LATENCY
    declared = MetricKey("netlat", "tcp", "mean_us", "µs", False, THROUGHPUT)
    assert role_of(declared) == THROUGHPUT
    assert nat_vs_host(_run([declared])) == []


def test_old_names_give_roles_to_metrics_stored_without_one():
    def role(workload, metric, unit="x"):
        return role_of(MetricKey(workload, "c", metric, unit, False))

    assert role("api", "instance_2_task_s") == PER_INSTANCE
    assert role("api", "jain") == FAIRNESS == role("api", "imbalance")
    assert role("oltp", "cpu_util_pct") == CPU_UTIL
    assert role("netbw", "cpu_s_per_gb") == CPU_COST == role("netbw", "cost", "Gcycles/GB")
    assert role("redis", "p99_ms") == LATENCY and role("redis", "p50_ms") == ""
    assert role("oltp", "cpu_pct") == ""


def test_roles_pick_the_figures():
    keys = []
    for c in (1, 4):
        keys += [
            MetricKey("w", f"clients={c}", "done", "ops/s", True, THROUGHPUT),
            MetricKey("w", f"clients={c}", "busy", "%", False, CPU_UTIL),
            MetricKey("w", f"clients={c}", "first", "s", False, PER_INSTANCE),
            MetricKey("w", f"clients={c}", "second", "s", False, PER_INSTANCE),
            MetricKey("w", f"clients={c}", "evenness", "", True, FAIRNESS),
        ]
    keys.append(MetricKey("w", "tx", "effort", "J/op", False, CPU_COST))
    table = build_table(_run(keys))
    (sweep,) = figures.sweeps(table)
    assert sweep.throughput_metric() == "done"  # evenness is higher-is-better, but fairness
    assert sweep.cpu_metric() == "busy"
    kinds = {s.kind for s in figures.build_figures(table)}
    assert {figures.KIND_TPUT_CPU, figures.KIND_INSTANCES, figures.KIND_FAIRNESS, figures.KIND_CPU_COST} <= kinds
    sweep_fig = figures.sweep_figure(table, sweep)
    assert [ax.get_title() for ax in sweep_fig.axes] == ["done \u2191", "busy \u2193", "evenness \u2191"]
    per_instance = figures.per_instance_figure(table, sweep)
    assert [t.get_text() for t in per_instance.axes[0].get_legend().get_texts()] == ["first", "second"]
