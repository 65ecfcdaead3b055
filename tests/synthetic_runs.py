"""Synthetic runs written through the Store API, for report, compare and
export tests. Values are deterministic (seeded) and shaped like the studies'
results, and cover every figure: plain metrics, a fio-style read-latency
histogram, a swept server workload (clients=N) with latency and CPU
utilisation, a network workload with CPU cost per GB per direction, startup
time, and an emulated (TCG) VM column."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from isobench.core.metric import Metric
from isobench.store.db import Sample

ENVS = ("native", "docker-nat", "docker-host", "vm-tcg")

STUDY_TEXT = """# synthetic study written by tests/synthetic_runs.py
[study]
name = "synthetic"
repetitions = 5
warmup = 1
baseline = "native"

[environments.native]
[environments.docker-nat]
[environments.docker-host]
[environments.vm-tcg]
preset = "vm-stock"
accelerator = "tcg"
"""

# workload -> case -> [(metric, unit, higher_is_better, native mean, rel sd)]
PLAIN = {
    "compression": {"default": [("throughput_mbs", "MB/s", True, 42.0, 0.01), ("real_s", "s", False, 0.76, 0.01)]},
    "fio": {
        "randread": [
            ("iops", "IO/s", True, 9000.0, 0.02),
            ("read_clat_p50_us", "µs", False, 110.0, 0.02),
            ("read_clat_p99_us", "µs", False, 480.0, 0.04),
        ],
        "seqwrite": [("bandwidth_mbs", "MB/s", True, 800.0, 0.02)],
    },
    "nuttcp": {
        "transmit": [("throughput_gbps", "Gbit/s", True, 9.3, 0.005), ("cpu_s_per_gb", "CPU-s/GB", False, 0.9, 0.03)],
        "receive": [("throughput_gbps", "Gbit/s", True, 9.3, 0.005), ("cpu_s_per_gb", "CPU-s/GB", False, 1.1, 0.03)],
    },
    "startup": {"default": [("ready_s", "s", False, 0.01, 0.05)]},
}
CLIENTS = (1, 4, 16, 64)
# environment -> multiplier of the native value, per metric direction
# (throughput-like, latency-like); vm-tcg is emulated and slow.
ENV_FACTOR = {"native": (1.0, 1.0), "docker-nat": (0.97, 1.06), "docker-host": (1.0, 1.0), "vm-tcg": (0.35, 2.8)}
STARTUP_S = {"native": 0.01, "docker-nat": 0.6, "docker-host": 0.55, "vm-tcg": 14.0}
# (workload, metric) flagged primary in every case that has it, as a run
# measured since workloads declare primaries stores them
DECLARED = (
    ("compression", "throughput_mbs"),
    ("fio", "iops"),
    ("fio", "bandwidth_mbs"),
    ("nuttcp", "throughput_gbps"),
    ("startup", "ready_s"),
    ("redis", "throughput_rps"),
)


@dataclass
class Synthetic:
    run_id: str
    envs: tuple[str, ...] = ENVS
    repetitions: int = 5
    seed: int = 1
    # (env, workload, metric) -> multiplier applied after everything else
    inject: dict[tuple[str, str, str], float] = field(default_factory=dict)
    # skip noise: every repetition gets exactly the mean (for A/A identity tests)
    constant: bool = False
    # (workload, metric) stored as primaries (DECLARED); empty: a run stored
    # before primaries, no metric flagged
    primaries: tuple[tuple[str, str], ...] = ()
    baseline: str = "native"
    # (env, workload) -> counter deltas of each measured sample (extra["counters"],
    # 1% noise per sample from a generator of their own), over COUNTER_UNITS
    counters: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)


COUNTER_UNITS = ["MB", 100.0]


def fake_study(envs=ENVS, baseline="native"):
    """The few attributes Store.create_run reads; these workloads need not exist yet."""
    text = STUDY_TEXT
    return SimpleNamespace(
        meta=SimpleNamespace(name="synthetic", baseline=baseline),
        path="studies/synthetic.toml",
        text=text,
        hash=hashlib.sha256(text.encode()).hexdigest()[:16],
        environments={e: None for e in envs},
    )


def _hist(rng, median_us: float, n: int = 4000) -> list[list[float]]:
    lat = rng.lognormal(np.log(median_us), 0.35, n)
    bins = np.unique(np.round(lat, -1 if median_us > 50 else 0), return_counts=True)
    return [[float(v), int(c)] for v, c in zip(*bins)]


def write_run(store, spec: Synthetic) -> str:
    rng = np.random.default_rng(spec.seed)
    counter_rng = np.random.default_rng(spec.seed + 1000)  # the values' sequence stays what it was
    run_id = spec.run_id
    store.create_run(
        run_id,
        fake_study(spec.envs, spec.baseline),
        {
            "cpu_model": "Synthetic CPU @ 2.0GHz",
            "cores": 2,
            "mem_bytes": 24 * 2**30,
            "kernel": "6.1.0-test-amd64",
            "thp": "madvise",
            "governor": "performance",
            "docker_version": "20.10.24",
        },
    )
    for env in spec.envs:
        kind = "vm" if env.startswith("vm") else "docker" if env.startswith("docker") else "native"
        facts = {
            "kind": kind,
            "options": {"network": "bridge"} if env == "docker-nat" else {},
            "tool_versions": {"fio": "3.33-3", "xz-utils": "5.4.1-0.2"},
        }
        if kind == "vm":
            facts.update({"accelerator": "tcg", "emulated": True, "qemu_version": "7.2.0"})
        store.set_env_facts(run_id, env, facts)

    cells = []  # (workload, case, [(metric, unit, hib, native, rel_sd)])
    for w, cases in PLAIN.items():
        for case, metrics in cases.items():
            cells.append((w, case, metrics))
    for c in CLIENTS:
        # Little's law flavour: throughput saturates, latency grows with clients.
        tput = 110_000 * c / (c + 3)
        cells.append(
            (
                "redis",
                f"clients={c}",
                [
                    ("throughput_rps", "req/s", True, tput, 0.02),
                    ("latency_mean_us", "µs", False, c / tput * 1e6, 0.02),
                    ("cpu_util_pct", "%", False, min(100.0, 25 * c**0.5), 0.02),
                ],
            )
        )
    for w, case, metrics in cells:
        store.define_metrics(
            run_id, w, case, [Metric(m, u, h, primary=(w, m) in spec.primaries) for m, u, h, _, _ in metrics]
        )

    for round_ in range(1 + spec.repetitions):
        warm = round_ == 0
        for w, case, metrics in cells:
            for env in spec.envs:
                up, down = ENV_FACTOR.get(env, (1.0, 1.0))
                vals = {}
                for m, _u, hib, native, rel_sd in metrics:
                    mean = STARTUP_S[env] if w == "startup" else native * (up if hib else down)
                    v = mean if spec.constant else float(rng.normal(mean, mean * rel_sd))
                    vals[m] = v * spec.inject.get((env, w, m), 1.0)
                extra = {}
                if w == "fio" and case == "randread":
                    extra["read_clat_hist"] = _hist(rng, vals["read_clat_p50_us"])
                if (env, w) in spec.counters:
                    deltas = spec.counters[(env, w)]
                    noise = counter_rng.normal(1.0, 0.01, len(deltas))
                    extra["counters"] = {k: v * f for (k, v), f in zip(deltas.items(), noise)}
                    extra["units"] = COUNTER_UNITS
                store.add_sample(
                    Sample(
                        run_id,
                        env,
                        w,
                        case,
                        round_,
                        warm,
                        "ok",
                        f"2026-05-01T10:{round_:02d}:00+0000",
                        1.5,
                        vals,
                        extra,
                        "raw output",
                    )
                )
    # one failed repetition, as real runs have
    store.add_sample(
        Sample(
            run_id,
            spec.envs[-1],
            "compression",
            "default",
            spec.repetitions + 1,
            False,
            "timeout",
            "2026-05-01T11:00:00+0000",
            600.0,
            error="timed out after 600 s",
        )
    )
    store.finish_run(run_id, "complete")
    return run_id


def simple_run(
    store,
    run_id: str,
    values: dict[str, list[float]],
    metric=("throughput_mbs", "MB/s", True),
    workload="compression",
    case="default",
    envs=("native", "docker-nat"),
    study=None,
) -> str:
    """A one-metric run: values[env] are that environment's repetitions;
    stored as a run of STUDY (a loaded study) when given."""
    store.create_run(run_id, study or fake_study(envs), {"cores": 2})
    store.define_metrics(run_id, workload, case, [Metric(*metric)])
    for env in envs:
        store.set_env_facts(run_id, env, {"kind": env.split("-")[0]})
        for i, v in enumerate(values[env]):
            store.add_sample(
                Sample(run_id, env, workload, case, i, False, "ok", "2026-05-01T10:00:00+0000", 1.0, {metric[0]: v})
            )
    store.finish_run(run_id, "complete")
    return run_id


HISTORY_HOST = {
    "hostname": "bench1",
    "cpu_model": "Synthetic CPU @ 2.0GHz",
    "cores": 2,
    "mem_bytes": 24 * 2**30,
    "kernel": "6.1.0-test-amd64",
    "docker_version": "20.10.24",
    "loadavg": "0.10 0.20 0.30 1/100 1",
}


def history_run(
    store,
    run_id: str,
    day: int,
    ratio: float,
    *,
    noise: float = 0.01,
    seed: int = 0,
    rounds: int = 5,
    host: dict | None = None,
    env_facts: dict | None = None,
    study_text: str | None = None,
    status: str = "complete",
    metric=("throughput_mbs", "MB/s", True),
    envs=("native", "docker-host"),
    ratios: dict | None = None,
) -> str:
    """One run of a history series: native around 100 and each other
    environment at RATIO times it (or ratios[env]), per-round noise NOISE
    (relative sd), started on 2026-05-DAY (day may run past 31: the month
    moves on), with host facts HOST (default HISTORY_HOST) and per-environment
    facts ENV_FACTS merged over the defaults."""
    import datetime as _dt

    rng = np.random.default_rng(seed)
    study = fake_study(envs)
    if study_text is not None:
        study.text = study_text
        study.hash = hashlib.sha256(study_text.encode()).hexdigest()[:16]
    store.create_run(run_id, study, dict(HISTORY_HOST if host is None else host))
    started = _dt.datetime(2026, 5, 1, 10, 0, tzinfo=_dt.UTC) + _dt.timedelta(days=day - 1)
    with store.db:
        store.db.execute(
            "UPDATE runs SET started_at=? WHERE run_id=?", (started.strftime("%Y-%m-%dT%H:%M:%S%z"), run_id)
        )
    store.define_metrics(run_id, "compression", "default", [Metric(*metric)])
    for env in envs:
        facts = {
            "kind": env.split("-")[0],
            "options": {"cpus": 1.0} if env != "native" else {},
            "container": f"isobench-{run_id}-{env}",
        }
        facts.update((env_facts or {}).get(env, {}))
        store.set_env_facts(run_id, env, facts)
    base = 100.0 * np.exp(rng.normal(0, noise, rounds))  # round effects shared by every environment
    for env in envs:
        r = 1.0 if env == envs[0] else (ratios or {}).get(env, ratio)
        vals = base * r * np.exp(rng.normal(0, noise, rounds))
        for i, v in enumerate(vals):
            store.add_sample(
                Sample(
                    run_id,
                    env,
                    "compression",
                    "default",
                    i,
                    False,
                    "ok",
                    started.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    1.0,
                    {metric[0]: float(v)},
                )
            )
    store.finish_run(run_id, status)
    return run_id


def fake_pilot(cpu: float | None = 0.01, io: float | None = 0.02, age_s: float = 60.0):
    """A host-noise pilot (isobench.checks.noisepilot.Pilot) measured AGE_S
    ago with per-sample paired SDs CPU and IO (a kernel left out at None),
    for what `validate` and `run` say a study can resolve here."""
    import time

    from isobench.checks.noisepilot import PILOT_VERSION, KernelNoise, Pilot

    kernels = {
        name: KernelNoise(name, f"fake {name}", 20, sd, sd * 0.76, sd * 1.46, 0.1, -0.2, 0.4, 0.35)
        for name, sd in (("cpu", cpu), ("io", io))
        if sd is not None
    }
    host = {"hostname": "h1", "boot_id": "b1", "cpu_model": "cpu", "cores": "2", "kernel": "6.1", "scratch": "/s"}
    return Pilot(PILOT_VERSION, host, "2026-05-01 12:00:00", time.time() - age_s, 31.0, kernels, {}, True)
