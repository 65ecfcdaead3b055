"""A descriptive metric that is a primary again is not tested again (issue
55, finding 17: compression's real_s, whose every value is its size over
throughput_mbs, repeated the primary's test in the descriptive family and
widened that family's intervals). The values are shaped as the compression
workload stores them: throughput_mbs = size_mb / real_s, sample by sample."""

from __future__ import annotations

import numpy as np

from isobench.core.metric import Metric
from isobench.results.analysis import Question, proportional
from isobench.results.compare import compare_runs
from isobench.results.table import build_table
from isobench.store.db import Sample, Store
from synthetic_runs import fake_study

ENVS = ("native", "docker-nat")
SIZE_MB = 16.0
METRICS = [
    Metric("throughput_mbs", "MB/s", True, role="throughput", primary=True),
    Metric("real_s", "s", False, role="duration"),
    Metric("user_s", "s", False, role="duration"),
]


def _run(store: Store, run_id: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    store.create_run(run_id, fake_study(ENVS), {"cores": 2})
    store.define_metrics(run_id, "compression", "default", METRICS)
    for env in ENVS:
        store.set_env_facts(run_id, env, {"kind": env.split("-")[0]})
        for r in range(6):
            real = float(0.8 * (1.03 if env != "native" else 1.0) * np.exp(rng.normal(0, 0.01)))
            values = {"throughput_mbs": SIZE_MB / real, "real_s": real, "user_s": float(real * rng.uniform(1.5, 1.9))}
            store.add_sample(
                Sample(run_id, env, "compression", "default", r, False, "ok", "2026-05-01T10:00:00+0000", real, values)
            )
    store.finish_run(run_id, "complete")


def test_a_metric_that_is_the_primary_again_is_not_tested_again(tmp_path):
    store = Store(str(tmp_path / "r.sqlite"))
    _run(store, "a", 1)
    _run(store, "b", 2)
    table = build_table(store.load_run("a"))
    cells = {r.key.metric: r.cells[1].verdict for r in table.rows}
    assert cells["throughput_mbs"].effect.tested and cells["user_s"].effect.tested
    assert not cells["real_s"].effect.tested and cells["real_s"].reason.startswith("the same test as throughput_mbs")
    assert cells["user_s"].m == 1  # the descriptive family holds user_s alone
    compared = {c.key.metric: c.verdict for c in compare_runs(store.load_run("a"), store.load_run("b")).cells}
    assert not compared["real_s"].effect.tested and compared["user_s"].effect.tested


def test_proportional_is_a_constant_times_or_its_reciprocal_on_both_sides():
    from isobench.results.model import MetricKey

    key = MetricKey("w", "default", "x", "s", False)
    real = Question(key, [0.8, 0.82, 0.81], [0.78, 0.79, 0.8])
    rate = Question(key, [SIZE_MB / v for v in real.candidate], [SIZE_MB / v for v in real.reference])
    assert proportional(real, rate) and proportional(
        real, Question(key, [2 * v for v in real.candidate], [2 * v for v in real.reference])
    )
    assert not proportional(
        real, Question(key, [SIZE_MB / v for v in real.candidate], [SIZE_MB / v * 1.01 for v in real.reference])
    )
    assert not proportional(real, Question(key, [1.0, 1.1, 1.2], [1.0, 1.1, 1.2]))
