"""Network and server workloads: parsers on outputs captured from the real
tools (tests/data), argv builders, sweep naming and the /proc/stat math."""

from pathlib import Path

import pytest

from isobench.core.proc import ExecResult
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.workloads import get
from isobench.workloads.base import ParseError
from isobench.workloads.netbw import parse_iperf3
from isobench.workloads.netlat import parse_sockperf
from isobench.workloads.oltp import parse_sysbench
from isobench.workloads.redis import parse_redis_csv
from isobench.workloads.server import (
    CpuWindow,
    cpu_window,
    parse_proc_stat,
    per_gb,
    sweep_cases,
    sweep_value,
)

DATA = Path(__file__).parent.parent / "data"
HOST = HostInfo(cores=2, mem_bytes=24 << 30, disk_free_bytes=50 << 30)


def make(name, **params):
    cls = get(name)
    return cls(cls.Params(**params), HOST)


class FakeEnv:
    name = "fake"
    paths = Paths(data="/d", tmp="/t")

    def __init__(self, bind="198.19.0.1"):
        self.bind = bind

    def server_bind_addr(self):
        return self.bind


# -- /proc/stat ------------------------------------------------------------------

PROC_STAT = """cpu  100 5 50 1000 20 3 7 2 40 0
cpu0 50 2 25 500 10 1 3 1 20 0
cpu1 50 3 25 500 10 2 4 1 20 0
intr 12345
"""


def test_proc_stat_busy_excludes_idle_iowait_and_guest_double_count():
    t = parse_proc_stat(PROC_STAT)
    assert t.busy == 100 + 5 + 50 + 3 + 7 + 2  # guest is inside user already
    assert t.total == t.busy + 1000 + 20
    assert t.ncpu == 2


def test_proc_stat_real_file_parses():
    t = parse_proc_stat(Path("/proc/stat").read_text())
    assert t.busy > 0 and t.total > t.busy and t.ncpu >= 1


def test_proc_stat_without_cpu_line_is_an_error():
    with pytest.raises(ParseError):
        parse_proc_stat("intr 1\n")


def test_cpu_window_subtracts_client_and_normalises():
    before = parse_proc_stat(PROC_STAT)
    after = parse_proc_stat(PROC_STAT.replace("cpu  100 5 50", "cpu  300 5 250"))
    w = cpu_window(before, after, wall_s=2.0, client_cpu_s=1.0, hz=100)
    assert w.host_busy_s == pytest.approx(4.0)  # 400 ticks at 100 Hz
    assert w.sut_cpu_s == pytest.approx(3.0)
    assert w.pct(w.sut_cpu_s) == pytest.approx(75.0)  # 3 CPU-s of 2 s x 2 CPUs
    assert per_gb(w.sut_cpu_s, 3e9) == pytest.approx(1.0)


def test_sut_cpu_never_negative():
    assert CpuWindow(1.0, 0.5, 0.7, 2).sut_cpu_s == 0.0


# -- sweeps --------------------------------------------------------------------------


def test_sweep_cases_are_param_equals_value():
    assert sweep_cases("clients", (1, 4)) == ["clients=1", "clients=4"]
    assert sweep_value("clients=16", "clients") == 16
    with pytest.raises(KeyError):
        sweep_value("threads=4", "clients")


# -- netbw (iperf3) --------------------------------------------------------------------


def test_iperf3_rx_and_tx():
    v, extra = parse_iperf3((DATA / "iperf3-rx.json").read_text(), reverse=False)
    assert 1 < v["gbps"] < 100 and extra["bytes"] > 1e9
    v, extra = parse_iperf3((DATA / "iperf3-tx.json").read_text(), reverse=True)
    assert 1 < v["gbps"] < 100


def test_iperf3_direction_mismatch_is_refused():
    with pytest.raises(ParseError, match="reverse"):
        parse_iperf3((DATA / "iperf3-rx.json").read_text(), reverse=True)


def test_iperf3_error_and_garbage():
    with pytest.raises(ParseError, match="unable to connect"):
        parse_iperf3('{"start": {}, "end": {}, "error": "unable to connect to server"}', reverse=False)
    with pytest.raises(ParseError):
        parse_iperf3("iperf3: error", reverse=False)


def test_netbw_argv_and_cpu_metric():
    w = make("netbw", duration_s=3)
    assert w.cases() == ["tx", "rx"]
    tx = w.client_argv("tx", "198.19.0.1", 32768)
    assert tx[:5] == ["iperf3", "--client", "198.19.0.1", "--port", "32768"] and "--reverse" in tx
    assert "--reverse" not in w.client_argv("rx", "198.19.0.1", 15201)
    assert w.server_argv("tx", FakeEnv())[:3] == ["--server", "--bind", "198.19.0.1"]
    m = w.parse("rx", ExecResult([], 0, (DATA / "iperf3-rx.json").read_text(), "", 1.0))
    w.add_cpu_metrics("rx", m, CpuWindow(wall_s=2, host_busy_s=3.0, client_cpu_s=1.0, ncpu=2, server_cpu_s=0.5))
    assert m.values["cpu_s_per_gb"] == pytest.approx(2.0 / (m.extra["bytes"] / 1e9))
    assert m.values["server_cpu_s_per_gb"] == pytest.approx(0.5 / (m.extra["bytes"] / 1e9))
    assert set(m.values) == {x.name for x in w.metrics("rx")}


def test_netbw_unknown_case_refused():
    with pytest.raises(Exception, match="cases"):
        make("netbw", cases=["sideways"])


# -- netlat (sockperf) --------------------------------------------------------------------


@pytest.mark.parametrize("case", ["tcp", "udp"])
def test_sockperf_ping_pong(case):
    v, extra = parse_sockperf((DATA / f"sockperf-{case}.txt").read_text())
    assert 1 < v["p50_us"] <= v["p99_us"] < 10_000
    assert v["mean_us"] > 1 and extra["transactions"] > 100


def test_sockperf_tcp_values():
    v, _ = parse_sockperf((DATA / "sockperf-tcp.txt").read_text())
    assert v == {"mean_us": 18.355, "p50_us": 17.465, "p99_us": 21.612}


def test_sockperf_one_way_latency_refused():
    text = (DATA / "sockperf-tcp.txt").read_text().replace("avg-rtt", "avg-latency")
    with pytest.raises(ParseError, match="full-rtt"):
        parse_sockperf(text)


def test_netlat_argv():
    w = make("netlat", duration_s=2, msg_bytes=100)
    a = w.client_argv("udp", "198.19.0.1", 11111)
    assert a[:2] == ["sockperf", "ping-pong"] and "--full-rtt" in a and "--tcp" not in a
    assert "--tcp" in w.client_argv("tcp", "198.19.0.1", 11111)
    assert w.server_port("udp") == (11111, "udp")
    assert w.server_argv("tcp", FakeEnv("0.0.0.0"))[:3] == ["server", "--ip", "0.0.0.0"]


# -- redis -------------------------------------------------------------------------------


def test_redis_csv():
    v, extra = parse_redis_csv((DATA / "redis-benchmark-c4.csv").read_text())
    s, g = 246913.58, 273972.59
    assert v["rps"] == pytest.approx(2 / (1 / s + 1 / g))
    assert v["mean_ms"] == pytest.approx((0.124 + 0.108) / 2)
    assert v["p99_ms"] == pytest.approx(0.823)
    assert set(extra["per_command"]) == {"SET", "GET"}


def test_redis_csv_needs_both_commands():
    only_set = "\n".join((DATA / "redis-benchmark-c4.csv").read_text().splitlines()[:2])
    with pytest.raises(ParseError, match="GET"):
        parse_redis_csv(only_set)


def test_redis_cases_and_argv():
    w = make("redis", clients=[1, 8], requests=1000)
    assert w.cases() == ["clients=1", "clients=8"]
    a = w.client_argv("clients=8", "198.19.0.1", 16379)
    assert a[a.index("-c") + 1] == "8" and a[a.index("-P") + 1] == "10"
    assert a[a.index("-t") + 1] == "set,get" and a[a.index("-d") + 1] == "50" and "--csv" in a
    srv = w.server_argv("clients=8", FakeEnv())
    assert srv[srv.index("--bind") + 1] == "198.19.0.1"
    assert srv[srv.index("--save") + 1] == "" and srv[srv.index("--requirepass") + 1] == w.password
    assert len(w.password) == 32


# -- oltp (sysbench) ---------------------------------------------------------------------


def test_sysbench_report():
    v, extra = parse_sysbench((DATA / "sysbench-oltp-rw-t4.txt").read_text())
    assert v == {"tps": 585.62, "p95_ms": 14.73}
    assert extra["transactions"] == 1769 and extra["ignored_errors"] == 1


def test_sysbench_missing_percentile():
    text = (DATA / "sysbench-oltp-rw-t4.txt").read_text().replace("95th percentile", "average")
    with pytest.raises(ParseError, match="percentile"):
        parse_sysbench(text)


def test_oltp_argv_and_buffer_pool():
    w = make("oltp", threads=[2, 4], table_size=10000, time_s=3)
    assert w.cases() == ["threads=2", "threads=4"]
    a = w.client_argv("threads=4", "198.19.0.1", 13306)
    assert "--threads=4" in a and "--time=3" in a and a[-1] == "run" and "--percentile=95" in a
    assert w.buffer_pool_mb() == 128
    assert make("oltp", table_size=1_000_000).buffer_pool_mb() >= 700
    srv = w.server_argv("threads=4", FakeEnv())
    assert "--bind-address=198.19.0.1" in srv and "--innodb-buffer-pool-size=128M" in srv
    assert any(x.startswith("--datadir=/d/") for x in srv)


def test_two_oltp_tables_keep_their_own_data():
    # a study's second table (studies/ab/network-sample-length.toml) was
    # prepared into the first one's datadir, with its own password: the first
    # table's warm-up then failed ("Thread initialization failed")
    a, b = make("oltp", time_s=2), make("oltp", time_s=6)
    assert a.datadir(FakeEnv()) != b.datadir(FakeEnv())
    assert a.datadir(FakeEnv()) in " ".join(a.server_argv("threads=1", FakeEnv()))


def test_server_workloads_do_not_run_in_the_environment():
    from isobench.workloads.base import WorkloadError

    with pytest.raises(WorkloadError):
        make("redis").argv("clients=1", FakeEnv.paths)


def test_proc_state_after_the_parenthesised_name():
    from isobench.workloads.procstat import proc_state

    assert proc_state("1234 (redis-server *:1) S 1 1234 1234 0 -1") == "S"
    assert proc_state("1234 (odd) name) Z 1 0") == "Z"
    assert proc_state("") == ""


def test_proc_cpu_ticks_are_utime_plus_stime():
    from isobench.workloads.procstat import proc_cpu_ticks

    line = "42 (redis-server) S 1 42 42 0 -1 4194560 500 0 0 0 123 45 0 0 20 0 5 0 100 0 0"
    assert proc_cpu_ticks(line) == 168
    assert proc_cpu_ticks("garbage") is None


@pytest.mark.parametrize("name", ["redis", "oltp", "redis-scaleout"])
def test_a_servers_password_never_reaches_a_failure_text(name):
    w = make(name)
    (secret,) = w.secrets()
    assert len(secret) >= 16
    text = f"exit 1: client -h 198.19.0.1 -a {secret} --mysql-password={secret}: Connection reset"
    assert secret not in w.hide(text) and w.hide(text).count("***") == 2
    assert make("netlat").hide(text) == text  # no secrets: unchanged


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0.3", "0.3 s is shorter than sockperf's own 0.4 s warm-up"),
        ("0", "0 s is shorter than sockperf's own 0.4 s warm-up"),
        ("0.5", "0.5 s is under a second"),
    ],
)
def test_a_sample_shorter_than_sockperfs_own_warmup_is_refused_naming_the_field(value, why):
    from isobench.study import StudyError, parse_study

    text = f'[study]\nname = "s"\n[environments.native]\n[workloads.netlat]\nduration_s = {value}\n'
    with pytest.raises(StudyError) as err:
        parse_study(text, "s.toml")
    assert str(err.value) == (
        f"s.toml: workloads.netlat.duration_s: {why}; sockperf runs whole seconds (--time), its first 0.4 s a "
        "warm-up it does not count: give 1 or more"
    )
