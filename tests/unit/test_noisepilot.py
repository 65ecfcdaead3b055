"""The host-noise pilot: its statistics on synthetic timings (pilotstats),
what a study can resolve from them (verdicts.detectable_change,
rounds_to_resolve; resolution), the timing loop with fake kernels and a
fake clock, the cache, doctor's row and validate's lines. Nothing here
measures the host: every kernel is fake, except the I/O kernel's plumbing,
run once at a few KiB in a temporary directory."""

import json
import math
import threading
import time
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import integrate
from scipy import stats as st

from isobench.analysis.budget import make_plan
from isobench.analysis.pilotstats import drift, pair_noise
from isobench.analysis.settle import rounds_to_resolve, rounds_to_settle
from isobench.analysis.verdicts import ROUNDS_NEEDED_CAP, detectable_change
from isobench.checks import noisepilot as npl
from isobench.checks import pilotkernels as pk
from isobench.checks.noisepilot import KernelNoise, Pilot
from isobench.checks.pilotkernels import Timings
from isobench.host.hostinfo import HostInfo
from unit.test_env_registry import fake, study_text  # noqa: F401 - the fake kind's fixture

HOST = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)
ME = {"hostname": "h1", "boot_id": "b1", "cpu_model": "cpu", "cores": "2", "kernel": "6.1", "scratch": "/s"}


def pairs_with(sd_sample, k, rng, offset=0.0):
    """k pairs of durations whose logs have per-sample SD sd_sample (so the
    per-pair log ratio has SD sd_sample·sqrt(2)), B slower by ``offset``."""
    a = np.exp(np.log(0.35) + sd_sample * rng.standard_normal(k))
    b = np.exp(np.log(0.35) + offset + sd_sample * rng.standard_normal(k))
    return a, b


# -- pilotstats ------------------------------------------------------------------------


def test_pair_noise_recovers_a_known_sd():
    rng = np.random.default_rng(1)
    a, b = pairs_with(0.03, 20_000, rng)
    noise = pair_noise(a, b)
    assert noise.pairs == 20_000
    assert noise.sd == pytest.approx(0.03 * math.sqrt(2), rel=0.02)
    assert noise.low < 0.03 * math.sqrt(2) < noise.high


def test_pair_noise_interval_is_the_chi_square_one_and_covers_95_percent():
    rng = np.random.default_rng(2)
    a, b = pairs_with(0.02, 20, rng)
    n = pair_noise(a, b)
    d = np.log(a) - np.log(b)
    s = np.std(d, ddof=1)
    assert n.sd == pytest.approx(s)
    assert n.low == pytest.approx(s * math.sqrt(19 / st.chi2.ppf(0.975, 19)))
    assert n.high == pytest.approx(s * math.sqrt(19 / st.chi2.ppf(0.025, 19)))
    truth = 0.02 * math.sqrt(2)
    hits = sum(n.low <= truth <= n.high for n in (pair_noise(*pairs_with(0.02, 20, rng)) for _ in range(4000)))
    assert 0.935 <= hits / 4000 <= 0.965


def test_a_constant_offset_between_a_and_b_is_not_noise():
    rng = np.random.default_rng(3)
    a, b = pairs_with(0.01, 5000, rng)
    shifted = pair_noise(a, b * 1.2)  # the second of each pair always 20% slower
    assert shifted.sd == pytest.approx(pair_noise(a, b).sd)
    same = pair_noise([0.3, 0.4, 0.5], [0.3, 0.4, 0.5])
    assert (same.sd, same.low, same.high) == (0.0, 0.0, 0.0)


def test_pair_noise_needs_two_pairs_and_positive_times():
    assert math.isnan(pair_noise([0.3], [0.31]).sd)
    with pytest.raises(ValueError):
        pair_noise([0.3, 0.0], [0.3, 0.3])
    with pytest.raises(ValueError):
        pair_noise([0.3, 0.3], [0.3])


def test_drift_recovers_a_known_slope():
    starts = np.arange(40) * 0.75  # 40 samples, 0.75 s apart
    exact = drift(starts, 0.35 * np.exp(0.01 * starts / 60))  # +1.005% per minute, no noise
    assert exact.pct_per_min == pytest.approx(math.expm1(0.01) * 100)
    assert exact.low == pytest.approx(exact.pct_per_min) and exact.high == pytest.approx(exact.pct_per_min)
    rng = np.random.default_rng(4)
    noisy = drift(starts, 0.35 * np.exp(0.05 * starts / 60 + 0.002 * rng.standard_normal(40)))
    assert noisy.low < math.expm1(0.05) * 100 < noisy.high
    flat = drift(starts, np.full(40, 0.35))
    assert flat.pct_per_min == 0.0
    assert math.isnan(drift([0, 1], [0.3, 0.4]).pct_per_min)


def test_a_stall_drifts_in_log_space_without_overflow():
    # A few milliseconds of samples, the last ones stalled: the slope of log
    # time is thousands per minute, far past what expm1 can take (~709).
    starts = np.arange(12) * 0.002
    secs = np.r_[np.full(9, 0.001), [0.5, 0.6, 0.7]]
    d = drift(starts, secs)
    fit = st.linregress(starts / 60, np.log(secs))
    assert d.slope == pytest.approx(fit.slope) and d.slope > 1000
    assert d.slope_low < d.slope < d.slope_high and math.isfinite(d.slope_high)
    assert math.isnan(d.pct_per_min) and math.isnan(d.high)  # no finite percentage: none reported
    k = npl.kernel_noise("cpu", "w", list(zip(starts, secs)))
    assert math.isnan(k.drift_pct_per_min) and k.drift_log_per_min == pytest.approx(fit.slope)
    line = Pilot(1, ME, "t", 1.0, 2.0, {"cpu": k}, {}).line(1.0)
    assert f"drift log time {fit.slope:+.3g}/min on CPU (a stall: no finite percentage)" in line
    # a steep fall has a finite percentage (-100%), so it is told as one
    assert drift(starts, secs[::-1]).pct_per_min == pytest.approx(-100.0)


def test_drift_interval_is_linregress_with_t():
    rng = np.random.default_rng(5)
    starts = np.sort(rng.uniform(0, 30, 40))
    secs = 0.35 * np.exp(0.02 * rng.standard_normal(40))
    d = drift(starts, secs)
    fit = st.linregress(starts / 60, np.log(secs))
    half = st.t.ppf(0.975, 38) * fit.stderr
    assert d.pct_per_min == pytest.approx(math.expm1(fit.slope) * 100)
    assert (d.low, d.high) == pytest.approx((math.expm1(fit.slope - half) * 100, math.expm1(fit.slope + half) * 100))


# -- what a study can resolve ----------------------------------------------------------


def power_by_integration(delta, sd, n, q):
    """P(paired t > t_{n-1}(1 - q/2)) at true mean delta, computed directly:
    T = (Z + nc) / sqrt(V/df), V ~ chi2(df), integrated over V."""
    df, nc = n - 1, delta * math.sqrt(n) / sd
    c = st.t.ppf(1 - q / 2, df)
    f = lambda v: st.norm.sf(c * math.sqrt(v / df) - nc) * st.chi2.pdf(v, df)  # noqa: E731
    return integrate.quad(f, 0, np.inf, limit=200)[0]


@pytest.mark.parametrize("n,m", [(3, 1), (5, 1), (5, 66), (10, 99), (20, 194), (40, 1000)])
def test_detectable_change_has_80_percent_power(n, m):
    q, sd = 0.05 / m, 0.041
    delta = detectable_change(sd, n, q)
    assert power_by_integration(delta, sd, n, q) == pytest.approx(0.8, abs=2e-4)
    assert st.nct.sf(st.t.ppf(1 - q / 2, n - 1), n - 1, delta * math.sqrt(n) / sd) == pytest.approx(0.8)


def test_the_noncentral_t_is_scipys_public_sf_bit_for_bit(monkeypatch):
    """detectable_change solves with nct._sf, what nct.sf returns for finite
    arguments: the same number at every point the solve asks, at the df a
    cell has (Welch's are fractional) and any level, 2 rounds at a strict one
    included."""
    from isobench.analysis import verdicts

    asked, sf = [], st.nct._sf
    monkeypatch.setattr(st.nct, "_sf", lambda c, df, nc: asked.append((c, df, nc)) or sf(c, df, nc))
    for df in (1.0, 1.5, 3.7, 4.0, 9.2, 30.0, 199.5):
        for q in (0.05, 0.05 / 9, 0.05 / 99, 0.05 / 1000):
            assert math.isfinite(verdicts._noncentrality.__wrapped__(df, q, 0.8))
    monkeypatch.undo()
    assert len(asked) > 200
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the series' own "approximate" warnings at 2 rounds
        for c, df, nc in asked:
            assert float(st.nct._sf(c, df, nc)) == float(st.nct.sf(c, df, nc)), (c, df, nc)


def test_detectable_change_is_what_paired_t_tests_find_four_times_in_five():
    rng = np.random.default_rng(6)
    n, m, sd = 5, 66, 0.041
    q = 0.05 / m
    delta = detectable_change(sd, n, q)
    d = delta + sd * rng.standard_normal((40_000, n))
    res = st.ttest_1samp(d, 0.0, axis=1)
    found = np.mean((res.pvalue < q) & (res.statistic > 0))
    assert found == pytest.approx(0.8, abs=0.01)
    # the usual shortcut (c + t_power)·sd/sqrt(n) falls short here
    c = st.t.ppf(1 - q / 2, n - 1)
    shortcut = (c + st.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    assert shortcut < delta and power_by_integration(shortcut, sd, n, q) < 0.72


def test_detectable_change_scales_with_the_noise_and_has_the_normal_limit():
    q = 0.05 / 99
    assert detectable_change(0.08, 7, q) == pytest.approx(2 * detectable_change(0.04, 7, q))
    z = st.norm.isf(q / 2) + st.norm.ppf(0.8)
    assert detectable_change(0.04, 100_000, q) == pytest.approx(z * 0.04 / math.sqrt(100_000), rel=1e-3)
    assert detectable_change(0.04, 1, q) == math.inf
    assert detectable_change(0.0, 5, q) == 0.0
    assert math.isfinite(detectable_change(0.04, 2, 0.05 / 10_000))  # huge, but a number


@pytest.mark.parametrize("sd,m,tol", [(0.041, 66, 5), (0.01, 1, 5), (0.095, 99, 5), (0.02, 10, 2)])
def test_rounds_to_resolve_is_the_smallest_n_by_brute_force(sd, m, tol):
    q = 0.05 / m
    target = math.log1p(tol / 100) / 2
    brute = next(n for n in range(2, 5000) if st.t.ppf(1 - q / 2, n - 1) * sd / math.sqrt(n) < target)
    assert rounds_to_resolve(sd, q, tol) == brute


def test_rounds_to_resolve_edges():
    assert rounds_to_resolve(0.5, 0.05 / 99, 5) == ROUNDS_NEEDED_CAP + 1
    assert rounds_to_resolve(0.04, 0.05, 0) is None
    assert rounds_to_resolve(float("nan"), 0.05, 5) is None
    assert rounds_to_resolve(0.0, 0.05, 5) == 2


# -- the timing loop -------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class FakeKernel:
    def __init__(self, name, clock, seconds, fail_at=None):
        self.name, self.clock, self.seconds, self.fail_at = name, clock, seconds, fail_at
        self.what, self.runs, self.closed = f"fake {name}", 0, False

    def run(self):
        self.runs += 1
        if self.fail_at is not None and self.runs >= self.fail_at:
            raise OSError(28, "No space left on device")
        self.clock.t += self.seconds(self.runs) if callable(self.seconds) else self.seconds

    def close(self):
        self.closed = True


def test_kernels_alternate_in_pairs_after_a_warm_up():
    clock = FakeClock()
    cpu, io = FakeKernel("cpu", clock, 0.3), FakeKernel("io", clock, 0.4)
    t = Timings()
    pk.time_kernels([cpu, io], t, threading.Event(), pairs=5, budget_s=100, clock=clock)
    assert cpu.runs == io.runs == 11  # a warm-up + 5 pairs
    assert len(t.samples["cpu"]) == len(t.samples["io"]) == 10
    starts = [s for s, _ in t.samples["cpu"]]
    assert starts[0] == pytest.approx(0.7) and starts[1] == pytest.approx(1.0)  # after both warm-ups; A then B
    assert starts[2] == pytest.approx(1.0 + 0.3 + 0.8)  # the next pair follows the I/O pair


def test_the_budget_and_stop_end_the_pilot():
    clock = FakeClock()
    k = FakeKernel("cpu", clock, 1.0)
    t = Timings()
    pk.time_kernels([k], t, threading.Event(), pairs=100, budget_s=10, clock=clock)
    assert len(t.samples["cpu"]) == 8  # 1 s warm-up, then pairs of 2 s while they end by 10 s
    stop = threading.Event()
    stop.set()
    t2 = Timings()
    pk.time_kernels([FakeKernel("cpu", clock, 1.0)], t2, stop, pairs=100, budget_s=100, clock=clock)
    assert t2.samples["cpu"] == []


def test_a_failing_kernel_is_dropped_with_its_reason_and_the_other_goes_on():
    clock = FakeClock()
    t = Timings()
    cpu, io = FakeKernel("cpu", clock, 0.3), FakeKernel("io", clock, 0.4, fail_at=5)
    pk.time_kernels([cpu, io], t, threading.Event(), pairs=6, budget_s=100, clock=clock)
    assert len(t.samples["io"]) == 2 and len(t.samples["cpu"]) == 12  # half a pair is never kept
    assert t.notes["io"] == "stopped: No space left on device"


def fake_kernels(spec):
    """A kernels factory for measure(): name -> seconds per run, or an Event to block on."""

    def make(timings):
        out = []
        for name, how in spec.items():
            k = FakeKernel(name, FakeClock(), 0)
            if isinstance(how, threading.Event):
                k.run = lambda ev=how: ev.wait(10)
            else:
                rng = np.random.default_rng(len(name))
                k.run = lambda rng=rng, s=how: time.sleep(s * math.exp(0.05 * rng.standard_normal()))
            out.append(k)
        return out

    return make


def test_a_kernels_figures_come_from_its_consecutive_pairs():
    rng = np.random.default_rng(7)
    secs = list(0.35 * np.exp(0.02 * rng.standard_normal(41)))  # an odd sample out: half a pair
    samples = [(0.8 * i, x) for i, x in enumerate(secs)]
    k = npl.kernel_noise("cpu", "w", samples)
    expected = pair_noise(secs[0:40:2], secs[1:40:2])
    assert (k.pairs, k.sd, k.low, k.high) == (20, expected.sd, expected.low, expected.high)
    assert k.drift_pct_per_min == pytest.approx(drift([s for s, _ in samples[:40]], secs[:40]).pct_per_min)
    assert k.seconds == tuple(round(x, 6) for x in secs[:40])
    p = Pilot(1, ME, "t", 1.0, 2.0, {"cpu": k}, {})
    assert Pilot.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    assert npl.kernel_noise("cpu", "w", samples[:3]) is None  # one pair: no SD


def test_measure_summarises_each_kernel():
    p = npl.measure(ME, fake_kernels({"cpu": 0.002, "io": 0.003}), pairs=6, budget_s=10, timeout_s=10)
    assert set(p.kernels) == {"cpu", "io"} and p.notes == {}
    assert p.kernels["cpu"].pairs == 6 and p.kernels["cpu"].what == "fake cpu"
    # the figures are the timed samples' own (a busy host's sleep jitter can
    # make the SD of these few-ms fakes anything, so no bound on its size)
    cpu = p.kernels["cpu"]
    own = pair_noise(cpu.seconds[0::2], cpu.seconds[1::2])
    assert cpu.sd == pytest.approx(own.sd, rel=0.01)  # the seconds are kept to 1 µs
    assert 0 < cpu.low < cpu.sd < cpu.high
    assert p.host == ME and p.version == npl.PILOT_VERSION and p.wall_s < 5


def test_measure_returns_by_its_timeout_whatever_a_kernel_does():
    hang = threading.Event()
    started = time.monotonic()
    p = npl.measure(ME, fake_kernels({"cpu": 0.001, "io": hang}), pairs=50, budget_s=60, timeout_s=0.5)
    assert time.monotonic() - started < 3
    hang.set()
    assert p.notes["pilot"] == "cut short at 0.5 s: a kernel did not return"
    assert "io" not in p.kernels  # its warm-up never returned in time


def test_the_io_kernel_writes_reads_and_removes_its_file(tmp_path, monkeypatch):
    # plumbing only, at a few KiB: O_DIRECT or the fadvise fallback, and the cleanup
    monkeypatch.setattr(pk, "IO_FILE_MIB", 1)
    monkeypatch.setattr(pk, "IO_SYNCS", 2)
    monkeypatch.setattr(pk, "IO_READS", 4)
    directory = tmp_path / "noise-pilot"
    k = pk.IoKernel(str(directory))
    k.run()
    assert (directory / "pilot.dat").stat().st_size == pk.MIB
    assert k.read_how in ("O_DIRECT", "page cache dropped for the file")
    k.close()
    assert not directory.exists()


# -- the result, the cache -------------------------------------------------------------


def kernel(name, sd, pairs=20):
    return KernelNoise(name, f"fake {name}", pairs, sd, sd * 0.76, sd * 1.46, 0.1, -0.2, 0.4, 0.35)


def pilot(at, host=ME, cpu=0.041, io=0.095, cached=False, duet=None):
    kernels = {"cpu": kernel("cpu", cpu)}
    if duet is not None:
        kernels["cpu-duet"] = kernel("cpu-duet", duet)
    if io is not None:
        kernels["io"] = kernel("io", io)
    return Pilot(npl.PILOT_VERSION, dict(host), "2025-01-01 12:00:00", at, 31.0, kernels, {}, cached)


def test_the_line_says_both_figures_with_intervals():
    p = pilot(1000.0, cached=True)
    assert p.summary() == "paired SD 4.1% per sample on CPU [3.1%, 6.0%], 9.5% on I/O [7.2%, 13.9%]"
    line = p.line(1000.0 + 720)
    assert line.startswith(p.summary() + "; drift +0.10%/min on CPU, +0.10%/min on I/O; 20 pairs in 31 s")
    assert line.endswith("measured 12 min ago, cached")
    assert npl.fmt_noise(0.0042) == "0.42%"


def test_round_trip_and_the_fact_has_no_nan():
    p = pilot(1000.0)
    assert Pilot.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    odd = Pilot(
        1,
        ME,
        "t",
        1.0,
        2.0,
        {"cpu": KernelNoise("cpu", "w", 2, 0.01, 0.005, 0.3, float("nan"), float("nan"), float("nan"), 0.3)},
        {"io": "not measured"},
    )
    fact = odd.as_fact(5.0)
    json.dumps(fact, allow_nan=False)
    assert fact["kernels"]["cpu"]["drift_pct_per_min"] is None and "I/O not measured" in fact["line"]


class Measurer:
    def __init__(self, at):
        self.calls, self.at = 0, at

    def __call__(self, identity):
        self.calls += 1
        return pilot(self.at, host=identity)


def test_cache_fresh_stale_other_host_and_forced(tmp_path):
    path = str(tmp_path / "noise-pilot.json")
    measure = Measurer(10_000.0)
    first = npl.host_noise(path=path, identity=ME, now=lambda: 10_000.0, measure_with=measure)
    assert measure.calls == 1 and not first.cached
    again = npl.host_noise(path=path, identity=ME, now=lambda: 10_000.0 + 3599, measure_with=measure)
    assert measure.calls == 1 and again.cached and again.kernels == first.kernels  # fresh: reused
    npl.host_noise(path=path, identity=ME, now=lambda: 10_000.0 + 3601, measure_with=measure)
    assert measure.calls == 2  # stale: measured again
    other = {**ME, "boot_id": "b2"}  # rebooted (or another host sharing the state directory)
    npl.host_noise(path=path, identity=other, now=lambda: 10_000.0, measure_with=measure)
    assert measure.calls == 3
    npl.host_noise(fresh=True, path=path, identity=other, now=lambda: 10_000.0, measure_with=measure)
    assert measure.calls == 4  # doctor --fresh
    assert npl.cached(ME, path) is None and npl.cached(other, path).cached  # validate: this host's, any age
    with open(path, "w") as fh:
        fh.write("{not json")
    npl.host_noise(path=path, identity=ME, now=lambda: 10_000.0, measure_with=measure)
    assert measure.calls == 5


def test_a_clock_set_back_or_another_version_is_not_reused(tmp_path):
    path = str(tmp_path / "p.json")
    npl.save(pilot(10_000.0), path)
    assert not npl.current(npl.load(path), ME, 9_000.0)
    assert npl.current(npl.load(path), ME, 10_100.0)
    data = json.loads(open(path).read())
    data["version"] = npl.PILOT_VERSION + 1
    open(path, "w").write(json.dumps(data))
    assert npl.load(path) is None


def test_a_failed_save_still_returns_the_measurement(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = npl.host_noise(path=str(blocker / "p.json"), identity=ME, now=lambda: 1.0, measure_with=Measurer(1.0))
    assert p.kernels


def test_doctor_row():
    quiet = npl.as_finding(pilot(0.0, cpu=0.008, io=0.015), now=60.0)
    assert quiet.check == "host noise" and quiet.status == "ok" and quiet.value.startswith("paired SD 0.80%")
    noisy = npl.as_finding(pilot(0.0), now=60.0)
    assert noisy.status == "warn" and noisy.fix.startswith("CPU and I/O noise above 2%")
    busy = npl.as_finding(None, "a study is running: not measured now, so as not to disturb it")
    assert busy.status == "info" and "a study is running" in busy.value


# -- validate's lines ------------------------------------------------------------------

STUDY = """[study]
name = "q"
repetitions = 6  # a whole period of the rotation: none added (docs/statistics.md#order)
warmup = 1
[environments.native]
[environments.docker-nat]
[environments.docker-host]
[workloads.compression]
size_mb = 32
threads = 0
level = 2
[workloads.fio]
size_mb = 256
runtime_s = 1
ramp_s = 1
"""


def lines_for(text, p, now=None):
    from isobench.checks.preflight import study_size
    from isobench.checks.resolution import compared_cells, resolution_lines
    from isobench.study import parse_study

    study = parse_study(text, "s.toml")
    return resolution_lines(
        study,
        study_size(study, HOST),
        compared_cells(study, HOST),
        p,
        p.measured_unix + 600 if now is None and p else (now or 0.0),
    ), study


def expected_pct(sd, n, m):
    return math.expm1(detectable_change(sd, n, 0.05 / m)) * 100


def test_the_resolution_counts_the_primary_cells_and_uses_each_kernels_figure():
    from isobench.checks.resolution import compared_cells
    from isobench.workloads import WORKLOADS

    (first, second), study = lines_for(STUDY, pilot(5000.0))
    # Table I's answer is the primary family: each case's primaries, not every metric
    per_env = {
        e.key: sum(len(w.primaries(c)) for c in w.cases())
        for e in study.workloads
        for w in [WORKLOADS[e.workload](e.params, HOST)]
    }
    every = {
        e.key: sum(len(w.metrics(c)) for c in w.cases())
        for e in study.workloads
        for w in [WORKLOADS[e.workload](e.params, HOST)]
    }
    assert per_env["fio"] == 5 and every["fio"] > per_env["fio"]
    m = 2 * (per_env["compression"] + per_env["fio"])  # two environments against the baseline
    assert compared_cells(study, HOST).cells == m and compared_cells(study, HOST).io_workloads == ("fio",)
    cpu_pct, io_pct = expected_pct(0.041, 6, m), expected_pct(0.095, 6, m)
    assert first.startswith(
        f"at 6 rounds this host can find changes of about {cpu_pct:.0f}% or more "
        f"(CPU noise 4.1%, {m} cells compared); \u00b15% equivalence needs about "
        f"{rounds_to_settle(0.041, 19, 0.05 / m, 5)} rounds (4 times in 5, about "
    )  # 4 times in 5, the pilot's SD being an estimate from its 20 pairs
    assert (
        f"; I/O-bound fio (I/O noise 9.5%): about {io_pct:.0f}%, and \u00b15% needs about "
        f"{rounds_to_settle(0.095, 19, 0.05 / m, 5)} rounds (4 times in 5" in first
    )
    assert second == (
        "a workload can be noisier than the pilot's kernels (measured 10 min ago): its "
        "inconclusive cells then say the rounds its own noise needs"
    )


def test_the_minutes_are_the_studys_own_estimate_at_that_many_rounds():
    from isobench.analysis.budget import budget_text
    from isobench.checks.preflight import study_size
    from isobench.results.numbers import fmt_duration

    (first, _), study = lines_for(
        STUDY.replace("[workloads.fio]\nsize_mb = 256\nruntime_s = 1\nramp_s = 1\n", ""), pilot(5000.0)
    )
    size = study_size(study, HOST)
    n = int(first.split("needs about ")[1].split()[0])
    assert n == rounds_to_settle(0.041, 19, 0.05 / 2, 5)  # a fixed run's rounds at its level alpha/m
    # said as a run's inconclusive cell says it (results/suggestion.py), with the --budget that settles
    # as often: a budgeted run tests at alpha/K over its K looks, and stops only at one of them
    pts = study.budget_plan() or make_plan(600.0, 6, len(study.environments), None)
    k = len(pts.points)
    r = rounds_to_settle(0.041, 19, 0.05 / 2 / k, 5)
    look = min(p for p in pts.points if p >= r)
    assert first.endswith(
        f"about {n} rounds (4 times in 5, about {fmt_duration(size.seconds_at(n))} here), or --budget "
        f"{budget_text(size.seconds_at(look))} (its {k} looks test at alpha/{k}: {r} rounds, reached at its look "
        f"at {look})"
    )
    assert r > n and size.seconds_at(study.meta.repetitions) == pytest.approx(size.estimated_s)


def test_a_budgeted_study_is_told_the_look_that_settles_and_the_budget_that_reaches_it():
    from isobench.analysis.budget import budget_text
    from isobench.checks.preflight import study_size

    text = STUDY.replace("[workloads.fio]\nsize_mb = 256\nruntime_s = 1\nramp_s = 1\n", "")
    (first, _), study = lines_for(text.replace("warmup = 1", 'warmup = 1\nbudget = "1h"'), pilot(5000.0))
    plan = study.budget_plan()
    assert plan is not None and f"tested at alpha/{plan.looks} for {plan.looks} looks" in first
    r = rounds_to_settle(0.041, 19, 0.05 / 2 / plan.looks, 5)
    look = min(p for p in plan.points if p >= r)
    said = f"\u00b15% equivalence needs about {r} rounds at its looks' alpha/{plan.looks} (4 times in 5)"
    assert f"{said}, its look at {look}, within the budget" in first
    (first, _), study = lines_for(text.replace("warmup = 1", 'warmup = 1\nbudget = "3m"'), pilot(5000.0))
    wall = study_size(study, HOST).seconds_at(look)
    assert first.endswith(f"its look at {look}: --budget {budget_text(wall)}")  # too short: the one that does


def test_a_duet_study_is_told_the_duet_kernels_figure():
    duet_study = STUDY.replace("warmup = 1", 'warmup = 1\nschedule = "duet"').replace("threads = 0", "threads = 1")
    (first, _), _ = lines_for(duet_study, pilot(5000.0, duet=0.012))
    # compression runs as duets: the duet figure; fio cannot: I/O; nothing is left for the sequential CPU one
    assert "(CPU duet noise 1.2%, " in first and "CPU noise 4.1%" not in first
    assert "; I/O-bound fio (I/O noise 9.5%)" in first
    (first, _), _ = lines_for(duet_study, pilot(5000.0))  # a pilot before the duet kernel: the CPU figure, said
    assert "(CPU noise 4.1%, the duet's not measured, " in first
    (first, _), _ = lines_for(STUDY, pilot(5000.0, duet=0.012))  # sequential: the duet figure is not its noise
    assert "(CPU noise 4.1%, " in first and "duet" not in first


def test_the_duet_kernel_times_both_sides_at_once_and_swaps_them():
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    k = pk.DuetCpuKernel(((cpus[0],), (cpus[1],)))
    k.data = k.data[:3_000_000]  # about 0.2 s: a few swaps at 0.05 s
    t0 = time.perf_counter()
    (start_a, a), (start_b, b) = k.pair(time.perf_counter, t0)
    # released together: each started before the other ended (not a fixed
    # gap: the unit lane runs at nice 19 beside the quota tests, where a
    # thread can wait 50 ms for a CPU)
    assert abs(start_a - start_b) < min(a, b)
    assert max(start_a + a, start_b + b) - min(start_a, start_b) < a + b  # they overlapped
    assert a > 0 and b > 0 and k.pairs == 1


def test_resolution_variants():
    from isobench.checks.resolution import compared_cells

    adaptive = STUDY.replace("repetitions = 6", 'repetitions = "auto"')
    (first, _), _ = lines_for(adaptive, pilot(5000.0))
    assert first.startswith("at up to 12 rounds") and "tested at alpha/4 for 4 looks" in first
    only_fio = STUDY.replace("[workloads.compression]\nsize_mb = 32\nthreads = 0\nlevel = 2\n", "")
    (first, _), _ = lines_for(only_fio, pilot(5000.0))
    assert "(I/O noise 9.5%, I/O-bound fio" in first and "CPU noise" not in first
    (first, _), _ = lines_for(STUDY, pilot(5000.0, io=None))
    assert "I/O-bound fio (I/O not measured, CPU noise 4.1%)" in first
    (_, second), _ = lines_for(STUDY, pilot(5000.0), now=5000.0 + 4 * 3600)
    assert "measured 4.0 h ago; `isobench doctor --fresh` measures again" in second
    (hint,), _ = lines_for(STUDY, None)
    assert hint.startswith("host noise not measured here lately, so what 6 rounds can resolve is unknown")
    one_env = STUDY.replace("[environments.docker-nat]\n[environments.docker-host]\n", "")
    assert lines_for(one_env, pilot(5000.0))[0] == []
    many = STUDY.replace("repetitions = 6", "repetitions = 400")
    (periods, first, _), study = lines_for(many, pilot(5000.0, cpu=0.004))
    assert periods.endswith(": 402 rounds, not 400: whole periods of the 3-environment rotation (6 rounds each)")
    m = compared_cells(study, HOST).cells
    assert (
        f"\u00b15% equivalence needs about {rounds_to_settle(0.004, 19, 0.05 / m, 5)} rounds (4 times in 5), within "
        "the planned 402" in first
    )


def test_validate_says_what_the_study_can_resolve(tmp_path, monkeypatch):
    from isobench.cli.main import main

    path = tmp_path / "s.toml"
    path.write_text(STUDY)
    monkeypatch.setattr(npl, "cached", lambda identity=None, path=None: pilot(time.time() - 60, cached=True))
    monkeypatch.setattr(npl, "measure", lambda *a, **k: pytest.fail("validate must not measure"))
    out = CliRunner().invoke(main, ["validate", str(path)])
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if not ln.startswith("  ")]  # each fact's first line
    assert lines[1].startswith("size: ")
    assert lines[2].startswith("at 6 rounds this host can find changes of about ")
    assert lines[3].startswith("a workload can be noisier than the pilot's kernels (measured just now, cached)")


def test_a_run_keeps_the_pilot_among_its_host_facts(fake, tmp_path):  # noqa: F811
    from isobench.results.runfacts import host_facts
    from isobench.run.runner import run_study
    from isobench.store.db import Store
    from isobench.study import parse_study

    study = parse_study(study_text("[environments.fake]\n[workloads.startup]\n"), "f.toml")
    store = Store(str(tmp_path / "r.sqlite"))
    p = pilot(1000.0, cached=True)
    run_id = run_study(study, store, host_noise=p.as_fact(1000.0 + 120))
    run = store.load_run(run_id)
    assert run.host_facts["host_noise"]["kernels"]["cpu"]["sd"] == 0.041
    assert ("Host noise", p.line(1000.0 + 120)) in host_facts(run)
    assert {s["workload"] for s in store.samples(run_id)} == {"startup"}  # the pilot is no sample


def test_run_takes_the_pilot_under_its_lock_says_the_resolution_and_stores_it(tmp_path, monkeypatch, capsys):
    import isobench.run.runner
    from isobench.cli import execution
    from isobench.core import lock
    from isobench.store.db import Store
    from isobench.study import parse_study

    monkeypatch.setattr(lock.RunLock.__init__, "__defaults__", (str(tmp_path / "run.lock"),))
    monkeypatch.setattr(execution.os, "geteuid", lambda: 0)
    order = []

    def host_noise(on_measure=None, **kw):
        order.append(("pilot", lock.running_run_id(str(tmp_path / "run.lock"))))  # the lock is held
        on_measure()
        return pilot(time.time() - 5)

    def run_study(study, store, bar, **kw):
        order.append(("run", kw["host_noise"]["kernels"]["cpu"]["sd"]))
        return "r1"

    monkeypatch.setattr(npl, "host_noise", host_noise)
    monkeypatch.setattr(isobench.run.runner, "run_study", run_study)
    study = parse_study(STUDY, "s.toml")
    assert execution.execute(study, Store(str(tmp_path / "r.sqlite")), progress=False) == "r1"
    assert order == [("pilot", "?"), ("run", 0.041)]
    err = capsys.readouterr().err
    assert "measuring the host's noise first (about 30 s; reused for an hour)" in err
    assert "at 6 rounds this host can find changes of about " in err
    assert err.index("measuring") < err.index("at 6 rounds")


def test_a_compare_names_the_host_noise_by_its_figures():
    from isobench.results.compare import _facts_diff
    from isobench.results.model import RunData

    def run(p: Pilot) -> RunData:
        return RunData(
            run_id="r",
            study_name="s",
            started_at="",
            finished_at=None,
            status="complete",
            host_facts={"cores": 2, "host_noise": p.as_fact(p.measured_unix + 30)},
            study_text="",
            study_hash="h",
            baseline="native",
            environments=[],
            env_facts={},
            metrics=[],
        )

    quiet, noisy = pilot(0.0, cpu=0.01), pilot(99.0, cpu=0.03)
    assert _facts_diff(run(quiet), run(noisy)) == [("host host_noise", quiet.summary(), noisy.summary())]
    assert _facts_diff(run(quiet), run(pilot(5000.0, cpu=0.01))) == []  # same figures, another time
