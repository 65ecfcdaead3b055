"""The attribution section: per-unit costs, paired test, BH verdicts, figure data."""

import json

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.report.figures.attribution import cpu_per_unit_figure
from isobench.report.html import render_html
from isobench.report.markdown import render_markdown
from isobench.report.section import ReportContext
from isobench.report.sections import sections_for
from isobench.report.terminal import render_terminal
from isobench.results.attribution import (
    ENVIRONMENT,
    HOST,
    build_rows,
    categories,
    changed,
    cpu_per_unit,
    derived,
    scope,
)
from isobench.results.model import RunData
from isobench.store.db import Store
from synthetic_runs import DECLARED, Synthetic, write_run


def sample(system_s, softirq_s, rtts=1000.0, user_s=0.5, client_s=0.1, ctxt=2000.0):
    return {
        "cpu.user_s": user_s,
        "cpu.nice_s": 0.0,
        "cpu.system_s": system_s,
        "cpu.softirq_s": softirq_s,
        "cpu.irq_s": 0.0,
        "cpu.guest_s": 0.0,
        "cpu.client_s": client_s,
        "ctxt": ctxt,
        "softirq.NET_RX": 2000.0 + 3 * softirq_s,
    }, ["round trip", rtts]


def run_with(extra_system: float) -> RunData:
    run = RunData("r1", "s", "t0", "t1", "complete", {}, "", "h", "docker-host", ["docker-host", "docker-nat"], {}, [])
    for r in range(6):
        jitter = 0.001 * (r % 3)
        d, u = sample(1.0 + jitter, 0.2 + jitter)
        run.counters.setdefault(("netlat", "tcp", "docker-host"), []).append((r, d, u))
        d, u = sample(1.0 + extra_system + jitter, 0.2 + jitter)
        run.counters.setdefault(("netlat", "tcp", "docker-nat"), []).append((r, d, u))
    return run


def test_extra_system_cpu_per_round_trip_is_found_and_ranked():
    rows = changed(build_rows(run_with(0.5)))
    names = [r.counter for r in rows]
    assert "cpu.system_s" in names and "cpu.sut_s" in names
    sys_row = next(r for r in rows if r.counter == "cpu.system_s")
    assert sys_row.unit == "µs/round trip"
    assert round(sys_row.delta) == 500  # 0.5 s over 1000 round trips
    assert "ctxt" not in names  # unchanged, not listed
    assert abs(rows[0].delta) >= abs(rows[1].delta)


def _slugs(run, fmt="md"):
    return {section.slug: blocks for section, blocks in sections_for(ReportContext(run), fmt)}


def test_nothing_changed_says_so():
    blocks = _slugs(run_with(0.0))["attribution"]
    assert any("No per-unit counter changed" in getattr(b, "text", "") for b in blocks)
    assert "attribution-unchanged" not in _slugs(run_with(0.0))


def test_no_counters_no_section():
    run = run_with(0.0)
    run.counters.clear()
    assert not {"attribution", "attribution-unchanged"} & set(_slugs(run))


def test_section_in_markdown():
    # an in-memory run has no metrics, so no primary changed: the rows are
    # not a cost, and Markdown shows that section whole
    md = render_markdown(run_with(0.5))
    assert "## Counters that changed where the result did not" in md and "system CPU (host)" in md


def test_scope_of_each_counter():
    assert scope("cgroup.user_s") == scope("vmm.vcpu_s") == ENVIRONMENT
    for name in ("cpu.system_s", "cpu.sut_s", "disk.read_bytes", "intr", "softirq.NET_RX", "conntrack.new"):
        assert scope(name) == HOST


# compression on docker-nat is 20% slower (its primary changed) and costs more
# container CPU and host system CPU per MB; compression on native reads far
# less from disk than on docker-host, the baseline, while its throughput is
# the same: the "-96% bytes read from disk" that is not a cost.
BASE = {"cgroup.user_s": 2.0, "cgroup.system_s": 0.5, "cpu.user_s": 2.2, "cpu.system_s": 0.6, "disk.read_bytes": 1e7}
COUNTERS = {
    ("docker-host", "compression"): BASE,
    ("docker-nat", "compression"): {**BASE, "cgroup.user_s": 2.6, "cpu.system_s": 0.9},
    ("native", "compression"): {k: v for k, v in BASE.items() if not k.startswith("cgroup.")}
    | {"disk.read_bytes": 4e5},
}


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(
        s,
        Synthetic(
            "a",
            envs=("native", "docker-nat", "docker-host"),
            baseline="docker-host",
            primaries=DECLARED,
            inject={("docker-nat", "compression", "throughput_mbs"): 0.8},
            counters=COUNTERS,
        ),
    )
    yield s
    s.close()


def _texts(blocks):
    return [(b.heading, [(i.text, i.sub) for i in b.items]) for b in blocks if hasattr(b, "items")]


def test_own_and_host_counters_in_separate_lists_and_only_changed_primaries_as_cost(store):
    run = store.load_run("a")
    slugs = _slugs(run)
    costs = dict(_texts(slugs["attribution"]))
    assert list(costs) == ["compression/default on docker-nat"]
    lists = dict(costs["compression/default on docker-nat"])
    own = lists["the environment's own counters (its cgroup, its VMM's threads)"]
    host = lists["host-wide counters, including neighbours (other processes on this host)"]
    assert any("container user CPU" in t for t in own) and not any("(host)" in t for t in own)
    assert any("system CPU (host)" in t for t in host) and not any("container" in t for t in host)
    # native's disk reads changed, its throughput did not: not a cost, in the other section
    others = dict(_texts(slugs["attribution-unchanged"]))
    assert list(others) == ["compression/default on native (primary result not changed)"]
    ((heading, rows),) = others["compression/default on native (primary result not changed)"]
    assert heading.startswith("host-wide") and any("bytes read from disk" in t for t in rows)
    assert not any("bytes read from disk" in t for _h, items in costs.items() for _x, sub in items for t in sub)


def test_not_a_cost_is_folded_in_the_terminal_unless_all(store):
    from rich.console import Console

    run = store.load_run("a")
    outputs = {}
    for show_all in (False, True):
        console = Console(record=True, width=120)
        render_terminal(run, console, show_all)
        outputs[show_all] = console.export_text()
    assert "system CPU (host)" in outputs[False]  # docker-nat's cost, always shown
    assert "bytes read from disk" not in outputs[False]
    assert "1 cell whose primary result did not change still shows" in outputs[False]
    assert "bytes read from disk" in outputs[True] and "primary result not changed" in outputs[True]
    html = render_html(run)
    assert "host-wide counters, including neighbours" in html and "bytes read from disk" in html  # folded


def test_report_json_has_both_lists_and_the_flag(store, tmp_path):
    store.close()
    r = CliRunner().invoke(main, ["report", "a", "--store", store.path, "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    att = json.loads(r.stdout)["attribution"]
    groups = {(g["env"], g["primary_changed"]): g for g in att["groups"]}
    assert set(groups) == {("docker-nat", True), ("native", False)}
    nat = groups[("docker-nat", True)]
    assert {x["counter"] for x in nat["environment"]} == {"cgroup.user_s"}
    assert "cpu.system_s" in {x["counter"] for x in nat["host"]} and nat["host_includes_neighbours"]
    assert [x["counter"] for x in groups[("native", False)]["host"]] == ["disk.read_bytes"]
    assert att["baseline"] == "docker-host" and att["tested"] > 0


def test_client_share_and_vmm_threads_not_double_counted():
    d = {
        "cpu.user_s": 3.0,
        "cpu.system_s": 1.0,
        "cpu.guest_s": 0.0,
        "cpu.softirq_s": 0.5,
        "cpu.client_s": 1.0,
        "vmm.vcpu_user_s": 2.0,
        "vmm.vcpu_sys_s": 0.5,
        "vmm.io_user_s": 0.0,
        "vmm.io_sys_s": 0.0,
        "vmm.main_user_s": 0.0,
        "vmm.main_sys_s": 0.0,
    }
    cat = categories(d)
    assert cat["VMM threads"] == 2.5
    assert cat["user"] + cat["system"] == 0.5  # 1.5 outside QEMU, minus the client's 1.0
    assert derived(d)["cpu.sut_s"] == 3.5 and derived(d)["vmm.vcpu_s"] == 2.5


def test_figure_from_counters():
    cells = cpu_per_unit(run_with(0.5).counters)
    unit, per_env = cells[("netlat", "tcp")]
    assert unit == "round trip" and per_env["docker-nat"]["system"] > per_env["docker-host"]["system"]
    assert cpu_per_unit_figure(cells, ["docker-host", "docker-nat"]) is not None
    assert cpu_per_unit_figure({}, []) is None


def test_compare_two_runs_finds_the_changed_counter():
    from isobench.results.attribution import compare_rows, compare_section_lines

    a, b = run_with(0.0), run_with(0.5)
    b.run_id = "r2"
    rows = [r for r in compare_rows(a, b) if r.env == "docker-nat" and r.verdict.changed]
    assert {"cpu.system_s", "cpu.sut_s"} <= {r.counter for r in rows}
    assert all(r.env == "docker-nat" for r in rows)  # docker-host did not change between the runs
    assert compare_section_lines(a, b)[0] == "Where the change comes from"


def test_a_duet_sample_counts_only_its_environment_s_own_counters():
    """Issue 55 item 16: host-wide counters of a duet's sample counted both
    sides (3.98 s of CPU a gzip run where the program used 1.64 s)."""
    from isobench.results.attribution import attributable, counters_of, cpu_per_unit

    deltas = {"cpu.user_s": 3.98, "cpu.system_s": 0.1, "cgroup.user_s": 1.64, "vmm.vcpu_s": 0.0, "ctxt": 900}
    duet = {"counters": deltas, "units": ["run", 1.0], "duet": {"partner": "native"}}
    assert attributable(deltas, duet) == {"cgroup.user_s": 1.64, "vmm.vcpu_s": 0.0}
    assert attributable(deltas, {"counters": deltas}) == deltas  # one sample at a time: the host was its own
    # native has no counters of its own: under a duet it is left out, not charged with both sides
    got = counters_of(
        {
            ("docker-nat", "gzip", "default"): [duet],
            ("native", "gzip", "default"): [
                {"counters": {"cpu.user_s": 3.9}, "units": ["run", 1.0], "duet": {"partner": "docker-nat"}}
            ],
        }
    )
    assert set(got) == {("gzip", "default", "docker-nat")}
    assert "native" not in cpu_per_unit(got)[("gzip", "default")][1]
