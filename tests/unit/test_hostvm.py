"""The host said up front: a run on a virtual machine says so in the
report's first lines (which hypervisor, that native means native inside
it, the steal time seen during the run); a bare-metal run says nothing;
the hypervisor's name, a stored string, is escaped in every format."""

import pytest
from rich.console import Console

from isobench.core.metric import Metric
from isobench.host.facts import has_hypervisor_flag, parse_hypervisor
from isobench.report.html import render_html
from isobench.report.markdown import render_markdown
from isobench.report.terminal import render_terminal
from isobench.results.runfacts import steal_seen, vm_lines
from isobench.store.db import Sample, Store
from synthetic_runs import fake_study

VM_CPUINFO = "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor avx2\n"
METAL_CPUINFO = "processor\t: 0\nflags\t\t: fpu vme sse2 avx2\nbugs\t\t: hypervisor_none\n"


def test_the_hypervisor_is_named_from_the_flag_then_detect_virt_then_dmi():
    assert has_hypervisor_flag(VM_CPUINFO) and not has_hypervisor_flag(METAL_CPUINFO)
    assert parse_hypervisor(METAL_CPUINFO, "kvm\n", "QEMU") == "none"  # no flag: bare metal, whatever else says
    assert parse_hypervisor(VM_CPUINFO, "kvm\n", "QEMU") == "kvm"
    assert parse_hypervisor(VM_CPUINFO, "", "Microsoft Corporation\n") == "Microsoft Corporation"
    assert parse_hypervisor(VM_CPUINFO, "none\n", None) == "unnamed"


def cpu(user, steal, idle=0.0):
    return {"cpu.user_s": user, "cpu.system_s": 0.0, "cpu.idle_s": idle, "cpu.steal_s": steal, "cpu.guest_s": user}


def stored_run(path, hypervisor, counters):
    """A run of two environments whose samples carry COUNTERS (one dict a round)."""
    s = Store(str(path))
    facts = {"cores": 2, "cpu_model": "Intel Xeon Processor"}
    if hypervisor is not None:
        facts["hypervisor"] = hypervisor
    s.create_run("r", fake_study(("native", "docker-nat")), facts)
    s.define_metrics("r", "compression", "default", [Metric("throughput_mbs", "MB/s", True)])
    for env in ("native", "docker-nat"):
        s.set_env_facts("r", env, {"kind": env.split("-")[0]})
        for i, deltas in enumerate(counters):
            extra = {"counters": deltas} if deltas else {}
            value = {"throughput_mbs": 100.0 + i}
            s.add_sample(Sample("r", env, "compression", "default", i, False, "ok", "t", 1.0, value, extra))
    s.finish_run("r", "complete")
    run = s.load_run("r")
    s.close()
    return run


def test_steal_is_the_share_of_cpu_time_over_the_samples(tmp_path):
    run = stored_run(tmp_path / "s.sqlite", "kvm", [cpu(1.8, 0.2), cpu(1.0, 0.0, idle=1.0), cpu(2.0, 0.0)])
    share, peak = steal_seen(run)
    # guest time is inside user already: 0.2 stolen of 1.8 + 0.2 + 2 + 2 = 6 s per environment
    assert share == pytest.approx(0.2 / 6.0) and peak == pytest.approx(0.1)
    first, second = vm_lines(run)
    assert first.startswith("This host is itself a virtual machine (kvm): native here means native inside that VM")
    assert second == (
        "Steal time during the run: 3.3% of the host's CPU time (the hypervisor ran something else on "
        "these CPUs), at most 10.0% in one sample."
    )


@pytest.mark.parametrize(
    "hypervisor, counters, expected",
    [
        ("none", [cpu(1.0, 0.5)], []),  # bare metal says nothing (a counter glitch is not a VM)
        (None, [cpu(1.0, 0.0)], []),  # a run stored before the fact, no steal: nothing to say
        (None, [cpu(1.8, 0.2)], ["a virtual machine:", "10.0%"]),  # steal says it is a VM
        ("unnamed", [None, None], ["a virtual machine:", "not measured"]),
        ("kvm", [cpu(1.0, 0.0)], ["(kvm)", "none seen"]),
    ],
)
def test_what_is_said_and_when(tmp_path, hypervisor, counters, expected):
    lines = vm_lines(stored_run(tmp_path / "s.sqlite", hypervisor, counters))
    text = " ".join(lines)
    assert len(lines) == (2 if expected else 0)
    for part in expected:
        assert part in text, text


def test_the_report_opens_with_it_in_every_format_and_escapes_the_name(tmp_path):
    hostile = "[bold red]kvm[/] *x* <b>y</b>"
    run = stored_run(tmp_path / "s.sqlite", hostile, [cpu(1.8, 0.2), cpu(2.0, 0.0)])
    console = Console(record=True, width=100, force_terminal=False)
    render_terminal(run, console)
    terminal = console.export_text().splitlines()
    assert terminal[0] == "The host is a virtual machine"  # before Table I, before the answer
    assert f"This host is itself a virtual machine ({hostile})" in " ".join(terminal[1:4])
    md = render_markdown(run)
    assert md.index("This host is itself a virtual machine") < md.index("The answer")
    assert "\\[bold red\\]kvm" in md or "\\*x\\*" in md  # Markdown-escaped, not markup
    html = render_html(run)
    assert "&lt;b&gt;y&lt;/b&gt;" in html and "<b>y</b>" not in html
    assert html.index("This host is itself a virtual machine") < html.index('<section id="answer">')


def test_a_bare_metal_run_opens_with_table_one_as_before(tmp_path):
    run = stored_run(tmp_path / "s.sqlite", "none", [cpu(1.0, 0.0), cpu(1.0, 0.0)])
    console = Console(record=True, width=100, force_terminal=False)
    render_terminal(run, console)
    text = console.export_text()
    assert "virtual machine" not in text and "Hypervisor" in text  # the fact, in the host's facts only
