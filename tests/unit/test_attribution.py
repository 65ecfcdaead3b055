"""The attribution section: per-unit costs, paired test, BH verdicts, figure data."""

from isobench.report.figures.attribution import cpu_per_unit_figure
from isobench.report.markdown import render_markdown
from isobench.results.attribution import build_rows, categories, changed, cpu_per_unit, derived, section_lines
from isobench.results.model import RunData


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


def test_nothing_changed_says_so():
    lines = section_lines(run_with(0.0))
    assert any("No per-unit counter changed" in line for line in lines)


def test_no_counters_no_section():
    run = run_with(0.0)
    run.counters.clear()
    assert section_lines(run) == []


def test_section_in_markdown():
    md = render_markdown(run_with(0.5))
    assert "## Where the overhead comes from" in md and "system CPU (host)" in md


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
