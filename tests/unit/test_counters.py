"""Counter parsers on real copies of this machine's /proc files (tests/data/proc)."""

from pathlib import Path

import pytest

from isobench.host import counters as c

DATA = Path(__file__).parent.parent / "data" / "proc"


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_stat_cpu_split_ctxt_intr():
    s = c.parse_stat(text("stat"), hz=100)
    first = text("stat").splitlines()[0].split()
    assert s["cpu.user_s"] == int(first[1]) / 100
    assert s["cpu.softirq_s"] == int(first[7]) / 100
    assert s["cpu.guest_s"] == int(first[9]) / 100
    assert s["ctxt"] > 0 and s["intr"] > 0
    assert not any(k.startswith("cpu0") for k in s)


def test_stat_without_cpu_line_is_an_error():
    with pytest.raises(ValueError, match="cpu"):
        c.parse_stat("ctxt 5\n")


def test_softirqs_summed_over_cpus():
    s = c.parse_softirqs(text("softirqs"))
    row = next(ln for ln in text("softirqs").splitlines() if ln.strip().startswith("NET_RX:"))
    assert s["softirq.NET_RX"] == sum(int(x) for x in row.split(":")[1].split())
    assert {"softirq.NET_TX", "softirq.BLOCK", "softirq.TIMER", "softirq.SCHED", "softirq.RCU"} <= set(s)
    assert "softirq.HI" not in s


def test_vmstat_faults():
    s = c.parse_vmstat(text("vmstat"))
    assert set(s) == {"pgfault", "pgmajfault"} and s["pgfault"] >= s["pgmajfault"]


def test_diskstats_counts_whole_real_disks_only():
    s = c.parse_diskstats(text("diskstats"))
    vda = next(ln.split() for ln in text("diskstats").splitlines() if ln.split()[2] == "vda")
    assert s["disk.reads"] == int(vda[3]) + 0  # loop and zram devices left out
    assert s["disk.read_bytes"] == int(vda[5]) * 512
    assert s["disk.writes"] == int(vda[7])
    assert c.parse_diskstats(text("diskstats"), disks=set())["disk.reads"] == 0


def test_partitions_are_not_counted_twice():
    lines = (
        "   8       0 sda 10 0 80 5 20 0 160 9 0 12 14 0 0 0 0\n"
        "   8       1 sda1 10 0 80 5 20 0 160 9 0 12 14 0 0 0 0\n"
        " 259       0 nvme0n1 1 0 8 1 2 0 16 1 0 3 4 0 0 0 0\n"
        " 259       1 nvme0n1p1 1 0 8 1 2 0 16 1 0 3 4 0 0 0 0\n"
    )
    assert c.parse_diskstats(lines)["disk.reads"] == 11


def test_conntrack_sums_cpus_and_keeps_entries_once():
    s = c.parse_conntrack(text("nf_conntrack"))
    rows = [ln.split() for ln in text("nf_conntrack").splitlines()[1:] if ln.strip()]
    assert s["conntrack.entries"] == int(rows[0][0], 16)
    assert s["conntrack.found"] == sum(int(r[2], 16) for r in rows)


def test_delta_only_common_keys():
    assert c.delta({"a": 1, "b": 2}, {"a": 4, "c": 9}) == {"a": 3}


def test_disabled_by_env_var():
    assert not c.enabled({"ISOBENCH_COUNTERS": "0"})
    assert c.enabled({})
    with c.around(lambda: {"x": 1.0}, environ={"ISOBENCH_COUNTERS": "off"}) as box:
        box["extra"] = extra = {}
    assert extra == {}


def test_around_stores_host_env_and_client_share():
    reads = iter([{"cgroup.user_s": 1.0}, {"cgroup.user_s": 3.5}])
    with c.around(lambda: next(reads), environ={}) as box:
        box["extra"] = extra = {"cpu_window": {"client_cpu_s": 0.25}}
    d = extra["counters"]
    assert d["cgroup.user_s"] == 2.5 and d["cpu.client_s"] == 0.25
    assert d["wall_s"] >= 0 and "cpu.user_s" in d and "ctxt" in d


def test_around_keeps_a_narrower_window():
    with c.around(None, environ={}) as box:
        box["extra"] = extra = {"counters": {"ctxt": 7.0}}
    assert extra["counters"] == {"ctxt": 7.0}


def test_around_failing_env_reader_gives_host_counters():
    def broken():
        raise OSError("gone")

    with c.around(broken, environ={}) as box:
        box["extra"] = extra = {}
    assert "cpu.system_s" in extra["counters"]


def test_qemu_threads_by_debug_thread_names():
    pid = int(next((DATA / "qemu").iterdir()).name)
    names = {p.parent.name: p.read_text().strip() for p in (DATA / "qemu" / str(pid) / "task").glob("*/comm")}
    assert sorted(names.values()) == ["CPU 0/TCG", "CPU 1/TCG", "call_rcu", "qemu-system-x86"]
    out = c.vmm_threads(pid, hz=100, proc=str(DATA / "qemu"))
    u, s = c.parse_task_stat((DATA / "qemu" / str(pid) / "stat").read_text())
    assert out["vmm.main_user_s"] + out["vmm.vcpu_user_s"] + out["vmm.io_user_s"] == pytest.approx(u / 100)
    assert out["vmm.main_sys_s"] + out["vmm.vcpu_sys_s"] + out["vmm.io_sys_s"] == pytest.approx(s / 100)


def test_thread_roles():
    assert c.thread_role("CPU 3/KVM\n", 12, 10) == "vcpu"
    assert c.thread_role("CPU 0/TCG", 11, 10) == "vcpu"
    assert c.thread_role("qemu-system-x86", 10, 10) == "main"
    assert c.thread_role("IO iothread0", 13, 10) == "io"
    assert c.thread_role("worker", 14, 10) == "io"


def test_task_stat_comm_with_spaces_and_parens():
    line = "42 (CPU 0/TCG) (x)) S 1 2 3 0 -1 0 0 0 0 0 250 30 0 0 20 0 1 0 5 0 0"
    assert c.parse_task_stat(line) == (250, 30)


def test_cpuacct_stat_v1_real_copy():
    out = c.parse_cpuacct_stat(text("cpuacct.stat"), hz=100)
    first = dict(ln.split() for ln in text("cpuacct.stat").splitlines())
    assert out == {"cgroup.user_s": int(first["user"]) / 100, "cgroup.system_s": int(first["system"]) / 100}


def test_cgroup_cpu_missing_container_is_empty(tmp_path):
    assert c.cgroup_cpu("nosuch", root=str(tmp_path)) == {}


def test_counters_module_is_ground_floor():
    src = Path(c.__file__).read_text()
    assert "\nfrom isobench" not in src and "\nimport isobench" not in src


def test_perf_probe_on_this_hosts_real_output():
    assert c.parse_perf_probe(text("perf-stat-no-pmu.txt")).startswith("no PMU")


def test_perf_probe_with_a_pmu():
    out = "\n Performance counter stats for 'true':\n\n           512,340      instructions\n"
    assert c.parse_perf_probe(out) == "available"


def test_units_of_never_fails_a_sample():
    assert c.units_of(lambda: ["MB", 16]) == ["MB", 16.0]
    bad = c.units_of(lambda: 1 / 0)
    assert bad[:2] == ["run", 0.0] and "ZeroDivisionError" in bad[2]
