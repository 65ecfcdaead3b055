"""Many instances: parsers of the drivers' real outputs, fairness, density,
pinning, the noise steps, groups, and the figures they light up."""

import json
from pathlib import Path

import pytest

from isobench.analysis.stats import jain_index, max_min_ratio
from isobench.core.proc import ExecResult
from isobench.envs.base import Environment, Paths
from isobench.envs.group import InstanceGroup, density_points, members_of, parse_pss
from isobench.envs.pinning import pinned_cpus
from isobench.host import noise
from isobench.host.hostinfo import HostInfo, numa_nodes, parse_cpulist, parse_meminfo
from isobench.report import figures as plots
from isobench.report.figures import instances as inst
from isobench.results.model import MetricKey, RunData
from isobench.results.table import build_table
from isobench.run.plan import by_step, plan
from isobench.study import StudyError, parse_study
from isobench.workloads.api import Api, ApiParams, parse_api_rounds
from isobench.workloads.base import ParseError, WorkloadError
from isobench.workloads.redis_scaleout import RedisScaleout, RedisScaleoutParams, parse_scaleout

DATA = Path(__file__).resolve().parent.parent / "data"
HOST = HostInfo(cores=2, mem_bytes=24 << 30, disk_free_bytes=100 << 30)


# -- fairness -----------------------------------------------------------------------


def test_jain_index_bounds():
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert 0.25 < jain_index([4, 3, 2, 1]) < 1
    assert max_min_ratio([2, 4, 3]) == pytest.approx(2.0)
    assert max_min_ratio([0, 1]) != max_min_ratio([0, 1])  # nan: no finite ratio


# -- parsers, on the drivers' captured outputs -----------------------------------------


def test_api_rounds_parse_per_instance_and_fairness():
    text = (DATA / "api-client-4x3.json").read_text()
    values, extra = parse_api_rounds(text, 4)
    rounds = json.loads(text)["rounds"]
    first = sum(r[0]["task_s"] for r in rounds) / len(rounds)
    assert values["instance_1_task_s"] == pytest.approx(first)
    per = [values[f"instance_{i}_task_s"] for i in range(1, 5)]
    assert values["task_s"] == pytest.approx(sum(per) / 4)
    assert values["task_s_slowest"] == max(per)
    assert values["imbalance"] == pytest.approx(max(per) / min(per))
    assert 0.25 <= values["jain"] <= 1
    assert values["task_rate"] == pytest.approx(sum(1 / t for t in per))
    assert len(extra["task_s_per_round"]) == 4


def test_api_rounds_refuse_errors_and_fewer_instances():
    with pytest.raises(ParseError):
        parse_api_rounds('{"rounds": [[{"error": "timeout"}]]}', 1)
    with pytest.raises(ParseError):
        parse_api_rounds((DATA / "api-client-4x3.json").read_text(), 5)
    with pytest.raises(ParseError):
        parse_api_rounds("not json", 1)


def test_scaleout_parse_aggregates_two_streams():
    text = (DATA / "redis-mix-3instances.json").read_text()
    doc = json.loads(text)
    values, extra = parse_scaleout(text)
    assert values["rps"] == pytest.approx((doc["get_requests"] + doc["set_requests"]) / doc["wall_s"])
    assert values["get_rps"] > values["set_rps"]  # 75% of the connections do GET
    assert values["jain"] == pytest.approx(jain_index(doc["served"]))
    assert values["instance_3_rps"] == pytest.approx(doc["served"][2] / doc["wall_s"])
    assert extra["served_per_instance"] == doc["served"]
    with pytest.raises(ParseError):
        parse_scaleout(json.dumps({**doc, "get": ""}))


def test_scaleout_cases_ports_and_no_password_in_raw():
    w = RedisScaleout(RedisScaleoutParams(instances=(4, 1, 2)), HOST)
    assert w.cases() == ["instances=1", "instances=2", "instances=4"]
    assert [p for p, _ in w.ports] == [16400, 16401, 16402, 16403]
    assert [m.name for m in w.metrics("instances=2")][-2:] == ["instance_1_rps", "instance_2_rps"]
    doc = (DATA / "redis-mix-3instances.json").read_text()
    m = w.parse("instances=4", ExecResult([], 0, doc.replace("***", w.password), "", 1.0))
    assert w.password not in m.raw


def test_api_metrics_name_each_instance():
    w = Api(ApiParams(instances=3), HOST)
    names = [m.name for m in w.metrics("default")]
    assert names[-3:] == ["instance_1_task_s", "instance_2_task_s", "instance_3_task_s"]
    assert [p for p, _ in w.ports] == [18080, 18081, 18082]


# -- groups ---------------------------------------------------------------------------


class FakeEnv(Environment):
    def __init__(self, name, log):
        super().__init__(name=name)
        self.log = log
        self.started = False

    def start(self):
        self.log.append(("start", self.name))
        self.started = True

    def exec(self, argv, timeout, cwd=None):
        self.log.append(("exec", self.name))
        return ExecResult(argv, 0, self.name, "", 0.0)

    def write_file(self, path, content):
        self.log.append(("write", self.name))

    def stop(self):
        self.log.append(("stop", self.name))

    @property
    def paths(self):
        return Paths(data=f"/d/{self.name}", tmp=f"/t/{self.name}")


def test_group_is_its_first_member_to_single_instance_workloads(monkeypatch):
    monkeypatch.setattr("isobench.envs.group.available_after_drop", lambda: (1000, True))
    log = []
    g = InstanceGroup(name="web", members=[FakeEnv("web-1", log), FakeEnv("web-2", log)])
    g.start()
    assert [m.started for m in g.members] == [True, True]
    assert g.exec(["true"], 5).stdout == "web-1"
    assert g.paths.tmp == "/t/web-1"
    assert members_of(g) == g.members and members_of(g.members[1]) == [g.members[1]]
    g.stop()
    assert log[-2:] == [("stop", "web-2"), ("stop", "web-1")]
    assert g.facts()["instances"] == 2 and len(g.facts()["density"]) == 2


def test_group_stops_started_members_when_one_fails(monkeypatch):
    monkeypatch.setattr("isobench.envs.group.available_after_drop", lambda: (1000, True))
    log = []

    class Broken(FakeEnv):
        def start(self):
            raise RuntimeError("no")

    g = InstanceGroup(name="web", members=[FakeEnv("web-1", log), Broken("web-2", log)])
    with pytest.raises(RuntimeError):
        g.start()
    assert ("stop", "web-1") in log


def test_multi_workload_names_the_missing_instances():
    w = Api(ApiParams(instances=4), HOST)
    with pytest.raises(WorkloadError, match=r"set instances = 4 in \[environments.solo\]"):
        w.instances(FakeEnv("solo", []), 4)


def test_density_points_from_memavailable():
    pts = density_points(
        10_000,
        [{"startup_s": 1.0, "mem_available": 9_000, "vmm_pss_bytes": 800}, {"startup_s": 2.0, "mem_available": 7_000}],
    )
    assert pts[0] == {
        "n": 1,
        "startup_s": 1.0,
        "mem_used_bytes": 1000,
        "mem_per_instance_bytes": 1000,
        "vmm_pss_bytes": 800,
    }
    assert pts[1]["mem_per_instance_bytes"] == 1500 and "vmm_pss_bytes" not in pts[1]


def test_meminfo_and_pss_parse():
    info = parse_meminfo("MemTotal:       24000000 kB\nMemAvailable:   22000000 kB\nHugePages_Total:       0\n")
    assert info["MemAvailable"] == 22000000 * 1024 and info["HugePages_Total"] == 0
    assert parse_pss("Rss:  100 kB\nPss:   64 kB\n") == 64 * 1024
    assert parse_pss("Rss: 1 kB\n") is None


# -- pinning ---------------------------------------------------------------------------


def test_pinning_round_robin_and_numa_nodes(tmp_path):
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    cpus = [0, 1, 2, 3]
    assert [pinned_cpus(i, "core", cpus, [cpus]) for i in range(5)] == [[0], [1], [2], [3], [0]]
    assert pinned_cpus(1, True, cpus, [cpus]) == [1]
    nodes = [[0, 1], [2, 3]]
    assert pinned_cpus(0, "node", cpus, nodes) == [0, 1]
    assert pinned_cpus(3, "node", cpus, nodes) == [2, 3]
    for n, lst in ((0, "0-1"), (1, "2-3")):
        (tmp_path / f"node{n}").mkdir()
        (tmp_path / f"node{n}" / "cpulist").write_text(lst + "\n")
    assert numa_nodes(str(tmp_path)) == nodes


def test_study_pin_and_instances_validate():
    base = '[study]\nname = "p"\n[workloads.compression]\n'
    s = parse_study(base + '[environments.native]\ninstances = 4\npin = "node"\n', "s.toml")
    assert s.environments["native"].instances == 4 and s.environments["native"].pin == "node"
    with pytest.raises(StudyError, match=r"s.toml: environments.native.pin"):
        parse_study(base + '[environments.native]\npin = "socket"\n', "s.toml")
    with pytest.raises(StudyError, match="pin and cpuset"):
        parse_study(base + '[environments.native]\n[environments.docker-nat]\npin = true\ncpuset = "0"\n', "s.toml")


# -- noise -----------------------------------------------------------------------------

NOISE_STUDY = """[study]
name = "n"
repetitions = 2
[environments.native]
[workloads.api]
instances = 1
[workloads.redis-scaleout]
instances = [1, 2]
[noise]
steps = [0, 2]
"""


def test_noise_steps_expand_every_cell_per_step():
    study = parse_study(NOISE_STUDY, "n.toml")
    cells = plan(study, HOST)
    assert [c.case for c in cells] == [
        "noise=0",
        "instances=1,noise=0",
        "instances=2,noise=0",
        "noise=2",
        "instances=1,noise=2",
        "instances=2,noise=2",
    ]
    assert [c.workload_case for c in cells[3:]] == ["default", "instances=1", "instances=2"]
    assert [step for step, _ in by_step(cells)] == [0, 2]
    assert plots.sweep_point("noise=2") == plots.SweepPoint("", "noise", 2.0)
    assert plots.sweep_point("instances=2,noise=4") == plots.SweepPoint("instances=2", "noise", 4.0)


def test_noise_spec_errors_are_one_line():
    with pytest.raises(StudyError, match=r"n.toml: noise.steps: .*ascending"):
        parse_study(NOISE_STUDY.replace("[0, 2]", "[2, 0]"), "n.toml")
    with pytest.raises(StudyError, match=r"n.toml: noise.stressor"):
        parse_study(NOISE_STUDY + 'stressor = "gpu"\n', "n.toml")
    with pytest.raises(StudyError, match=r"n.toml: noise.loudness: unknown field; allowed: .*steps"):
        parse_study(NOISE_STUDY + "loudness = 3\n", "n.toml")


def test_stress_argv_per_stressor_and_derived_size():
    spec = noise.NoiseSpec(steps=(0, 2, 4), top_fraction=0.5)
    size = noise.derive_vm_bytes(spec, 16 << 30)
    assert size == 2 << 30  # half of 16 GiB over the top step's 4 workers
    assert noise.stress_argv(spec, 0, size, "/x") == []
    argv = noise.stress_argv(spec, 2, size, "/x-noise")
    assert argv[argv.index("--vm") + 1] == "2" and argv[argv.index("--vm-bytes") + 1] == "2048M"
    assert "--timeout" in argv and "--vm-keep" in argv
    cpu = noise.stress_argv(noise.NoiseSpec(stressor="cpu", steps=(1,)), 1, 0, "/x")
    assert cpu[-2:] == ["--cpu", "1"]
    assert noise.derive_vm_bytes(noise.NoiseSpec(steps=(1,), vm_bytes_mb=256), 1 << 40) == 256 << 20
    assert noise.step_case("default", 3) == "noise=3" and noise.step_case("get", 3) == "get,noise=3"


# -- figures ---------------------------------------------------------------------------


def _run(values: dict, env_facts: dict | None = None) -> RunData:
    envs = ["native", "docker"]
    metrics = []
    for w, case, metric, unit, hib in values:
        key = MetricKey(w, case, metric, unit, hib)
        if key not in metrics:
            metrics.append(key)
    run = RunData(
        "r",
        "s",
        "t0",
        "t1",
        "complete",
        {},
        "",
        "h",
        "native",
        envs,
        env_facts or {e: {"kind": "native"} for e in envs},
        metrics,
    )
    for (w, case, metric, unit, hib), per_env in values.items():
        for env, vals in per_env.items():
            run.values[(MetricKey(w, case, metric, unit, hib), env)] = vals
    return run


def _api_values():
    out = {}
    for step in (0, 2, 4):
        for i in (1, 2):
            out[("api", f"noise={step}", f"instance_{i}_task_s", "s", False)] = {
                "native": [1 + step * 0.1 * i, 1.01 + step * 0.1 * i],
                "docker": [1.1 + step * 0.2 * i, 1.12 + step * 0.2 * i],
            }
        out[("api", f"noise={step}", "jain", "", True)] = {"native": [0.99, 0.98], "docker": [0.97 - step * 0.01] * 2}
        out[("api", f"noise={step}", "imbalance", "x", False)] = {"native": [1.02, 1.03], "docker": [1.1, 1.2]}
    return out


def test_per_instance_and_fairness_figures_from_a_noise_sweep():
    table = build_table(_run(_api_values()))
    sweep = next(s for s in plots.sweeps(table) if s.param == "noise")
    fig = inst.per_instance_figure(table, sweep)
    assert len(fig.axes) == 2  # one panel per environment
    assert [len(ax.lines) > 0 for ax in fig.axes] == [True, True]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["instance 1", "instance 2"]
    assert len(inst.fairness_figure(table, sweep).axes) == 2
    assert inst.scaleout_figure(table, sweep) is None  # not an instances sweep
    sweep_fig = plots.sweep_figure(table, sweep)
    assert all("instance_" not in ax.get_title() for ax in sweep_fig.axes)


def test_scaleout_figure_speedup_over_one_instance():
    values = {
        ("redis-scaleout", f"instances={n}", "rps", "req/s", True): {
            "native": [100.0 * n, 100.0 * n],
            "docker": [90.0 * n * 0.9, 90.0 * n * 0.9],
        }
        for n in (1, 2, 4)
    }
    table = build_table(_run(values))
    sweep = plots.sweeps(table)[0]
    fig = inst.scaleout_figure(table, sweep)
    speedup_ax = fig.axes[1]
    native = next(c for c in speedup_ax.containers if c.get_label().startswith("native"))
    assert list(native.lines[0].get_ydata()) == pytest.approx([1, 2, 4])
    assert inst.speedup([1, 2], [50, 75], [5, 5]) == ([1, 2], [1.0, 1.5], [0.1, 0.1])


def test_density_figure_needs_two_instances_and_kinds_are_listed():
    facts = {
        "native": {"kind": "native"},
        "docker": {
            "kind": "docker",
            "density": density_points(
                10 << 30,
                [
                    {"startup_s": 0.5, "mem_available": (10 << 30) - (20 << 20)},
                    {"startup_s": 0.6, "mem_available": (10 << 30) - (42 << 20)},
                ],
            ),
        },
    }
    run = _run(_api_values(), facts)
    table = build_table(run)
    fig = inst.density_figure(table, facts)
    mem = fig.axes[0].lines[0]
    assert list(mem.get_ydata()) == pytest.approx([20, 21])
    assert inst.density_figure(table, {"docker": {"density": facts["docker"]["density"][:1]}}) is None
    kinds = {s.kind for s in plots.build_figures(table, {}, facts)}
    assert {plots.KIND_INSTANCES, plots.KIND_FAIRNESS, plots.KIND_DENSITY} <= kinds


def test_markdown_shows_speedup_and_density():
    from isobench.report.markdown import render_markdown

    values = {
        ("redis-scaleout", f"instances={n}", "rps", "req/s", True): {
            "native": [100.0 * n, 100.0 * n],
            "docker": [80.0 * n, 80.0 * n],
        }
        for n in (1, 2)
    }
    facts = {
        "native": {"kind": "native"},
        "docker": {
            "kind": "docker",
            "density": density_points(
                1 << 30,
                [
                    {"startup_s": 0.5, "mem_available": (1 << 30) - (20 << 20)},
                    {"startup_s": 0.7, "mem_available": (1 << 30) - (40 << 20)},
                ],
            ),
        },
    }
    md = render_markdown(_run(values, facts))
    assert "## Scale-out" in md and "| redis-scaleout | docker | 2 | 160 | 2.00 |" in md
    assert "## Density" in md and "| docker | 2 | 0.70 | 20 | - |" in md


def test_preflight_counts_every_guest_instance():
    from isobench.checks.preflight import preflight

    s = parse_study(
        '[study]\nname = "v"\n[environments.native]\n[environments.vm]\npreset = "vm-stock"\n'
        "instances = 30\nmemory_mb = 1024\n[workloads.compression]\nsize_mb = 8\n",
        "v.toml",
    )
    assert preflight(s, HOST)[0].startswith("v.toml: environments.vm.memory_mb: ")
    assert preflight(parse_study(s.text.replace("instances = 30", "instances = 2"), "v.toml"), HOST) == []


def test_leftover_api_servers_are_recognised_but_not_other_pythons():
    from isobench.workloads.leftovers import is_server_process

    assert is_server_process("/usr/bin/python3.11", ["/usr/bin/python3", "/t/x/api_server.py", "0.0.0.0"])
    assert not is_server_process("/usr/bin/python3.11", ["python3", "-m", "http.server"])
    assert is_server_process("/usr/bin/redis-server", ["redis-server"])


def test_fairness_metrics_are_not_taken_for_throughput():
    table = build_table(_run(_api_values()))
    sweep = next(s for s in plots.sweeps(table) if s.param == "noise")
    assert sweep.throughput_metric() is None  # jain is higher-is-better but no throughput
    assert plots.throughput_latency_figure(table, sweep) is None
