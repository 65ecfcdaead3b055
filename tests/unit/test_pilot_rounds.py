"""The rounds a study's primary cells need, sized from a stored pilot run
(checks/pilotrounds.py): each primary cell's paired SD in the pilot, at the
level the study corrects its primaries at (alpha/m, m its primary cells)."""

from __future__ import annotations

import math
import statistics

import pytest

from isobench.analysis.settle import rounds_to_settle
from isobench.checks.pilotrounds import primary_needs
from isobench.core.metric import Metric
from isobench.host.hostinfo import HostInfo
from isobench.store.db import Sample, Store
from isobench.study import parse_study
from synthetic_runs import fake_study

HOST = HostInfo(cores=2, mem_bytes=8 << 30, disk_free_bytes=100 << 30)
ENVS = ("native", "docker-nat", "docker-host")

STUDY = """[study]
name = "nq"
repetitions = 12
warmup = 1
[environments.native]
[environments.docker-nat]
[environments.docker-host]
[workloads.netlat]
duration_s = 1
primary = ["p50_us"]
[workloads.redis]
clients = [1, 4, 16]
primary = ["clients=1:rps", "clients=16:rps"]
"""

# the pilot: three rounds, each environment's per-round log ratio against native
LOG_RATIOS = {
    ("netlat", "tcp", "p50_us", "docker-nat"): (0.16, 0.12, 0.20),  # NAT's +17%, SD 4%
    ("netlat", "tcp", "p50_us", "docker-host"): (0.01, -0.03, 0.02),
    ("netlat", "udp", "p50_us", "docker-nat"): (0.10, 0.14, 0.09),
    ("netlat", "udp", "p50_us", "docker-host"): (0.0, 0.035, -0.035),
    ("redis", "clients=1", "rps", "docker-nat"): (-0.05, -0.02, -0.03),
    ("redis", "clients=1", "rps", "docker-host"): (0.004, -0.004, 0.0),
    ("redis", "clients=4", "rps", "docker-nat"): (0.3, -0.3, 0.0),  # a level the study leaves descriptive
}


@pytest.fixture
def pilot(tmp_path):
    store = Store(str(tmp_path / "pilot.sqlite"))
    store.create_run("pilot", fake_study(ENVS), {"cores": 2})
    cases = sorted({(w, c, m) for w, c, m, _ in LOG_RATIOS})
    for w, c, m in cases:
        store.define_metrics("pilot", w, c, [Metric(m, "x", m == "rps", primary=True)])
    for r in range(4):  # round 0 the warm-up
        for w, c, m in cases:
            for env in ENVS:
                d = 0.0 if env == "native" or r == 0 else LOG_RATIOS.get((w, c, m, env), (0.0,) * 3)[r - 1]
                value = 100.0 * (1 + 0.1 * r) * math.exp(d)  # the rounds' own level cancels in the ratio
                store.add_sample(
                    Sample("pilot", env, w, c, r, r == 0, "ok", "2026-11-28T22:48:24+0000", 2.0, {m: value}, {}, "")
                )
    yield store.load_run("pilot")
    store.close()


def test_each_primary_cell_gets_the_rounds_its_pilot_noise_needs_at_the_studys_level(pilot):
    study = parse_study(STUDY, "nq.toml")
    m, needs = primary_needs(study, HOST, pilot)
    assert m == 8  # netlat tcp, udp p50 and redis at 1 and 16 clients, in two environments; clients=4 descriptive
    got = {(n.cell, n.env): n for n in needs}
    assert list(got) == [
        (cell, env)
        for cell in ("netlat/tcp p50_us", "netlat/udp p50_us", "redis/clients=1 rps", "redis/clients=16 rps")
        for env in ("docker-nat", "docker-host")
    ]
    for (w, c, metric, env), ratios in LOG_RATIOS.items():
        if c == "clients=4":
            continue
        need = got[(f"{w}/{c} {metric}", env)]
        sd = statistics.stdev(ratios)
        assert need.sd == pytest.approx(sd, rel=1e-9) and need.pairs == 3
        assert need.rounds == rounds_to_settle(sd, 2, 0.05 / 8, 5.0)
        assert need.planned == 12  # 12 rounds of 3 environments: two whole periods
    assert got[("netlat/tcp p50_us", "docker-nat")].rounds == 55  # SD 4% from 2 df at alpha/8
    assert got[("redis/clients=1 rps", "docker-host")].settles  # SD 0.4%
    unmeasured = got[("redis/clients=16 rps", "docker-nat")]  # the pilot ran no 16 clients
    assert (unmeasured.sd, unmeasured.rounds, unmeasured.settles) == (None, None, False)


def test_the_server_models_reproduce_the_one_timed_run_of_the_earlier_network_quick():
    """Run 20261128-224824 of network-quick's earlier shape took 8 min 44 s
    (issue 56); validate's estimate, from the workloads' sample models, within 10%."""
    from isobench.checks.preflight import study_size

    earlier = (
        '[study]\nname = "network-quick"\nrepetitions = 3\nwarmup = 1\n'
        "[environments.native]\n[environments.docker-nat]\n[environments.docker-host]\n"
        "[workloads.netbw]\nduration_s = 3\n[workloads.netlat]\nduration_s = 2\n"
        "[workloads.redis]\nclients = [1, 4, 16, 64]\nrequests = 20000\n"
        "[workloads.oltp]\nthreads = [1, 4, 16]\ntable_size = 10000\ntime_s = 4\nwarmup_s = 1\n"
    )
    estimated = study_size(parse_study(earlier, "nq.toml"), HOST).estimated_s
    assert estimated == pytest.approx(8 * 60 + 44, rel=0.1)
