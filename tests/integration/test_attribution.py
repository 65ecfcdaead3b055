"""Known answers for the counters on the real system (run under the heavy lock):
(a) docker-nat costs more system/softirq CPU per round trip than docker-host;
(b) a few thousand non-matching iptables rules on the forward path raise
docker-nat's per-round-trip kernel cost; (c) a TCG VM's compression shows
its CPU in QEMU's threads."""

import os
import subprocess

import pytest

from isobench.analysis.stats import compare_cell
from isobench.results.attribution import build_rows, per_unit
from isobench.run.runner import run_study
from isobench.store.db import Store
from isobench.study import parse_study

pytestmark = pytest.mark.integration
# (a) resolves a few µs per round trip on this shared host: green here
# (2026-11-23, 10 paired rounds) but close to the noise, so opt-in
# (ISOBENCH_ATTRIBUTION_KAT=1), and skipped when the host is measured busy
# (tests/conftest.py: quiet_host). (b)'s effect is several times the noise and
# always runs.
known_answer = pytest.mark.skipif(
    os.environ.get("ISOBENCH_ATTRIBUTION_KAT") != "1",
    reason="NAT-vs-host known-answer test: set ISOBENCH_ATTRIBUTION_KAT=1",
)

CHAIN = f"ISOBENCH-ATTR-{os.getpid()}"
KERNEL = ("cpu.sut_s", "cpu.system_s", "cpu.softirq_s")


def image() -> str:
    from isobench.core.dockerclient import engine
    from isobench.images import ensure_image  # the built isobench/debian image

    return ensure_image(engine(), log=lambda *a, **k: None)


def run(tmp_path, text: str, name: str) -> tuple[Store, str]:
    store = Store(str(tmp_path / f"{name}.sqlite"))
    rid = run_study(parse_study(text, name), store, image_provider=image)
    return store, rid


NETLAT = """
[study]
name = "attr-netlat"
repetitions = 10
warmup = 1
baseline = "docker-host"
[environments.docker-host]
[environments.docker-nat]
[workloads.netlat]
duration_s = 2
cases = ["tcp"]
"""


@known_answer
def test_a_nat_costs_kernel_cpu_per_round_trip(tmp_path, quiet_host):
    store, rid = run(tmp_path, NETLAT, "a")
    run_ = store.load_run(rid)
    assert run_.counters, "no counters stored with the samples"
    rows = [r for r in build_rows(run_) if r.env == "docker-nat"]
    kernel = {r.counter: r for r in rows if r.counter in KERNEL}
    print({k: (r.baseline_mean, r.env_mean, r.verdict.verdict) for k, r in kernel.items()})
    assert kernel["cpu.sut_s"].delta > 0 and kernel["cpu.sut_s"].verdict.changed
    assert any(kernel[k].delta > 0 and kernel[k].verdict.changed for k in ("cpu.system_s", "cpu.softirq_s"))


# (b)'s effect is about 5x (softirq per round trip 29 -> 215 us here; 7.5x, p
# 4e-8, with 6 rounds a side): 4 rounds a side resolve it (Welch on logs, 6
# df), where (a) needs 10; and a second of round trips (some 10,000 here) is
# plenty to read a per-round-trip cost. No warm-up: it is not among the
# rounds compared, a first round's one-off costs (ARP, the first connection)
# are a few hundred µs spread over those 10,000 round trips, and each sample
# costs about 4.7 s (sockperf sleeps 2 s before every test)
NAT_ONLY = (
    NETLAT.replace('baseline = "docker-host"', 'baseline = "docker-nat"')
    .replace("[environments.docker-host]\n", "")
    .replace("repetitions = 10", "repetitions = 4")
    .replace("warmup = 1", "warmup = 0")
    .replace("duration_s = 2", "duration_s = 1")
)


def iptables(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True, timeout=60)


def add_rules(n: int) -> None:
    """A dedicated chain of n rules that never match (sources in 198.18.255.0/24,
    which nothing uses), jumped to first from DOCKER-USER (forwarded, NAT path)
    and INPUT (the userland proxy's path)."""
    lines = ["*filter", f":{CHAIN} - [0:0]"]
    lines += [f"-A {CHAIN} -s 198.18.255.{i % 250 + 1}/32 -p tcp --dport {1024 + i} -j DROP" for i in range(n)]
    lines += [f"-I DOCKER-USER 1 -j {CHAIN}", f"-I INPUT 1 -j {CHAIN}", "COMMIT", ""]
    r = subprocess.run(
        ["iptables-restore", "-w", "5", "--noflush"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr


def remove_rules() -> None:
    for parent in ("DOCKER-USER", "INPUT"):
        while iptables("-D", parent, "-j", CHAIN).returncode == 0:
            pass
    iptables("-F", CHAIN)
    iptables("-X", CHAIN)


def kernel_per_rtt(store: Store, rid: str) -> dict[str, list[float]]:
    run_ = store.load_run(rid)
    _unit, pu = per_unit(run_.counters[("netlat", "tcp", "docker-nat")])
    return {k: list(pu[k].values()) for k in KERNEL}


def kernel_time(per_rtt: dict[str, list[float]]) -> list[float]:
    """System + softirq CPU per round trip, round by round."""
    return [a + b for a, b in zip(per_rtt["cpu.system_s"], per_rtt["cpu.softirq_s"], strict=True)]


def test_b_iptables_rules_land_in_kernel_cost(tmp_path):
    s0, r0 = run(tmp_path, NAT_ONLY, "b0")
    try:
        add_rules(3000)
        s1, r1 = run(tmp_path, NAT_ONLY, "b1")
    finally:
        remove_rules()
    assert CHAIN not in subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    before, after = kernel_per_rtt(s0, r0), kernel_per_rtt(s1, r1)
    print({k: (sum(before[k]) / len(before[k]), sum(after[k]) / len(after[k])) for k in KERNEL})
    # The rules cost kernel time (system and softirq per round trip), against
    # the control run without them in this test. cpu.sut_s counts all of the
    # host's busy time, so a CPU-bound neighbour's user time, spread over
    # fewer round trips once the rules slow them, would pass it on its own.
    effect = compare_cell(kernel_time(after), kernel_time(before), False)
    print(f"kernel time per round trip: ratio {effect.ratio:.2f}, p {effect.p:.2g}")
    assert effect.ratio > 1 and effect.p < 0.05, effect


VM = """
[study]
name = "attr-vm"
repetitions = 2
warmup = 0
baseline = "native"
[environments.native]
[environments.vm-stock]
vcpus = 2
memory_mb = 1024
data_disk_mb = 1024
[workloads.compression]
size_mb = 2
threads = 0
level = 2
"""
# 2 MB: TCG emulates every guest instruction, so QEMU's vCPU threads take
# several times the native control's CPU at any corpus size; 4 MB made each
# of the two emulated samples twice as long


@pytest.mark.beside  # per-process CPU times: a neighbour stretches the wall time only
def test_c_tcg_compression_cpu_is_in_qemu_threads(tmp_path):
    # The control is the same compression run natively in the same study: the
    # CPU its own process took (pixz's user + sys, from GNU time), which is
    # what the work costs without emulation. TCG emulates every guest
    # instruction in QEMU's vCPU threads, so in each VM sample those threads
    # alone take more host CPU than that. Both are per-process CPU times: a
    # neighbour stretches the wall time of each, not the CPU the work needs,
    # whereas the host-wide busy time the test compared with before counts
    # the neighbour too.
    store, rid = run(tmp_path, VM, "c")
    run_ = store.load_run(rid)
    cpu = [k for k in run_.metrics if k.workload == "compression" and k.metric in ("user_s", "sys_s")]
    assert len(cpu) == 2
    control = max(map(sum, zip(*(run_.values[(k, "native")] for k in cpu))))
    native = run_.counters[("compression", "default", "native")]
    assert native and not any(k.startswith("vmm.") for _r, d, _u in native for k in d)
    samples = run_.counters[("compression", "default", "vm-stock")]
    assert samples
    for _round, d, units in samples:
        vmm = d["vmm.vcpu_user_s"] + d["vmm.vcpu_sys_s"] + d.get("cpu.guest_s", 0.0)
        print(
            f"VM sample: QEMU vCPU threads {vmm:.2f} s; native control (pixz user + sys) {control:.2f} s; "
            f"host busy {d['cpu.user_s'] + d['cpu.system_s']:.2f} s"
        )
        assert units[0] == "MB" and vmm > control > 0, (vmm, control)
