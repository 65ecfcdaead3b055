"""The webstore workload: the driver's real output (captured against the
real nginx/php-fpm/PostgreSQL stack, tests/data/webstore/) parsed to
metrics, the log histograms, the data generator, the request builder and
the parameters' validation."""

import json
import math
import random
from pathlib import Path

import pytest
from pydantic import ValidationError

from isobench.core.metric import FAIRNESS, PER_INSTANCE, THROUGHPUT
from isobench.drivers import loghist
from isobench.drivers.webstore_load import pick_path
from isobench.envs.base import Paths
from isobench.host.hostinfo import HostInfo
from isobench.workloads import webstore_data
from isobench.workloads.base import ParseError
from isobench.workloads.webstore import Webstore
from isobench.workloads.webstore_metrics import OPS, parse_webstore

DATA = Path(__file__).parent.parent / "data" / "webstore"
HOST = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)


def raw(name: str) -> str:
    return (DATA / name).read_text()


def test_parse_closed_loop_output():
    doc = json.loads(raw("closed-1.json"))
    values, extra = parse_webstore(raw("closed-1.json"), list(OPS), 0.05)
    orders = doc["instances"][0]["orders"]
    assert values["orders_per_min"] == pytest.approx(60 * orders / doc["duration_s"])
    assert values["instance_1_orders_per_min"] == values["orders_per_min"]
    assert values["jain"] == 1.0 and values["imbalance"] == 1.0
    for op in OPS:
        assert 0 < values[f"{op}_p50_ms"] <= values[f"{op}_p90_ms"] <= values[f"{op}_p99_ms"]
        assert values[f"{op}_p90_worst_ms"] == values[f"{op}_p90_ms"]  # one instance
    assert values["pass_250"] == 1.0 and values["pass_500"] == 1.0
    assert extra["orders"] == [orders]


def test_parse_two_instances_with_rollbacks():
    doc = json.loads(raw("open-2.json"))
    values, _ = parse_webstore(raw("open-2.json"), list(OPS), 0.05)
    orders = [i["orders"] for i in doc["instances"]]
    rollbacks = sum(i["rollbacks"] for i in doc["instances"])
    assert rollbacks > 0
    assert values["rollback_rate"] == pytest.approx(rollbacks / (rollbacks + sum(orders)))
    assert values["imbalance"] == pytest.approx(max(orders) / min(orders))
    assert values["instance_2_orders_per_min"] == pytest.approx(60 * orders[1] / doc["duration_s"])
    for op in OPS:  # the worst instance's p90 is at least the pooled one's lowest instance
        per = [1000 * loghist.quantile(loghist.from_json(i["ops"][op]["hist"]), 0.9) for i in doc["instances"]]
        assert values[f"{op}_p90_worst_ms"] == pytest.approx(max(per))


def test_pass_fail_against_the_limits():
    doc = json.loads(raw("open-1.json"))
    # move every purchase into the 300 ms bucket: fails 250 ms, passes 500 ms
    h = doc["instances"][0]["ops"]["purchase"]["hist"]
    doc["instances"][0]["ops"]["purchase"]["hist"] = {str(loghist.bucket(0.3)): sum(h.values())}
    values, _ = parse_webstore(json.dumps(doc), list(OPS), 0.05)
    assert values["pass_250"] == 0.0 and values["pass_500"] == 1.0
    # a study's own limits (limits_ms) are the ones checked
    values, _ = parse_webstore(json.dumps(doc), list(OPS), 0.05, (100.0, 320.5))
    assert values["pass_100"] == 0.0 and values["pass_320.5"] == 1.0 and "pass_250" not in values


def test_saturated_driver_and_errors_are_refused():
    doc = json.loads(raw("closed-1.json"))
    doc["driver_cpu_frac"] = 0.97
    with pytest.raises(ParseError, match="load generator"):
        parse_webstore(json.dumps(doc), list(OPS), 0.05)
    doc = json.loads(raw("closed-1.json"))
    doc["instances"][0]["ops"]["browse"]["errors"] = 10_000
    doc["instances"][0]["first_error"] = "browse: HTTP 502"
    with pytest.raises(ParseError, match="HTTP 502"):
        parse_webstore(json.dumps(doc), list(OPS), 0.05)
    with pytest.raises(ParseError, match="does not parse"):
        parse_webstore("not json", list(OPS), 0.05)


def test_histogram_quantiles_within_a_bucket():
    rng = random.Random(7)
    xs = sorted(rng.lognormvariate(-4, 1.2) for _ in range(5000))
    h = {}
    for x in xs:
        loghist.add(h, x)
    width = 10 ** (1 / loghist.PER_DECADE)
    for q in (0.5, 0.9, 0.99):
        exact = xs[math.ceil(q * len(xs)) - 1]
        assert exact / width <= loghist.quantile(h, q) <= exact * width
    assert loghist.count(loghist.merge([h, h])) == 2 * len(xs)
    assert loghist.from_json(loghist.to_json(h)) == h
    assert math.isnan(loghist.quantile({}, 0.9))
    # within a bucket the rank's place decides: one count is the middle, the
    # ranks of a crowded bucket spread across it (not one 6% step for all)
    assert loghist.quantile({100: 1}, 0.5) == pytest.approx(loghist.bucket_mid_s(100))
    crowded = {100: 1000}
    lo, hi = loghist.quantile(crowded, 0.1), loghist.quantile(crowded, 0.9)
    assert lo < loghist.bucket_mid_s(100) < hi and hi / lo == pytest.approx(width**0.8, rel=1e-3)
    with pytest.raises(ValueError):
        loghist.from_json({"x": 1})


def test_data_is_deterministic_and_sized():
    a = webstore_data.tables(500, 200, seed=3)
    assert a == webstore_data.tables(500, 200, seed=3)
    assert a["customers.tsv"] != webstore_data.tables(500, 200, seed=4)["customers.tsv"]
    assert len(a["customers.tsv"].splitlines()) == 500 and len(a["products.tsv"].splitlines()) == 200
    assert a["customers.tsv"].splitlines()[41].split("\t")[3] == "user42"
    assert all(len(line.split("\t")) == 6 for line in a["products.tsv"].splitlines())
    assert a["inventory.tsv"].splitlines()[0] == f"1\t{webstore_data.INITIAL_STOCK}\t0"


def test_requests_stay_in_range():
    cfg = {"customers": 50, "products": 30, "lines": [2, 4]}
    rng = random.Random(1)
    for _ in range(200):
        path = pick_path(rng, "purchase", cfg)
        items = path.split("items=")[1].split(",")
        assert 2 <= len(items) <= 4
        assert all(1 <= int(i.split(":")[0]) <= 30 for i in items)
    assert "by=" in pick_path(rng, "browse", cfg)
    with pytest.raises(ValueError):
        pick_path(rng, "refund", cfg)


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"mix": {"refund": 1}}, "mix"),
        ({"mix": {"login": 0}}, "mix"),
        ({"instances": [1, 1]}, "instances"),
        ({"users": 0}, "users"),
        ({"rate": -1}, "rate"),
        ({"customers": 5}, "customers"),
        ({"duration_s": 0}, "duration_s"),
        ({"mode": "half"}, "mode"),
    ],
)
def test_bad_parameters_are_refused(bad, field):
    with pytest.raises(ValidationError, match=field):
        Webstore.Params(**bad)


def test_metrics_match_parse_and_roles():
    w = Webstore(Webstore.Params(instances=[1, 2], mix={"browse": 1, "purchase": 1}), HOST)
    assert w.cases() == ["instances=1", "instances=2"]
    metrics = {m.name: m for m in w.metrics("instances=2")}
    assert metrics["orders_per_min"].role == THROUGHPUT and metrics["p90_ms"].role == ""
    assert metrics["jain"].role == FAIRNESS and metrics["instance_2_orders_per_min"].role == PER_INSTANCE
    values, _ = parse_webstore(raw("open-2.json"), w.ops(), 0.05)
    assert set(values) == set(metrics)


class _Env:
    name = "e"
    paths = Paths(data="/d", tmp="/t")

    def server_bind_addr(self):
        return "198.18.0.1"


def test_configs_and_leftover_ownership():
    w = Webstore(Webstore.Params(php_workers=3), HOST)
    files = w.config_files(_Env(), 1)
    assert "listen 198.18.0.1:18481" in files["nginx.conf"]
    assert "listen = /t/webstore-1/fpm.sock" in files["php-fpm.conf"]
    assert "pm.max_children = 3" in files["php-fpm.conf"]
    assert Webstore.owns_process("/usr/lib/postgresql/15/bin/postgres", ["postgres", "-D", "/d/webstore-0/pg"])
    assert not Webstore.owns_process("/usr/lib/postgresql/15/bin/postgres", ["postgres", "-D", "/var/lib/pg"])
    assert not Webstore.owns_process("/usr/bin/python3", ["x", "/d/webstore-0"])


def test_peak_search_brackets_the_knee():
    from isobench.workloads.webstore_metrics import peak_search

    params = Webstore.Params(peak=True, peak_min_rate=5, peak_max_rate=400, peak_steps=12)
    seen = []

    def probe(rate):  # a store whose p90 crosses 250 ms at 37 ops/s
        seen.append(rate)
        return {"browse_p90_worst_ms": 100.0 if rate <= 37 else 900.0, "orders_per_min": rate * 6}

    m = peak_search(probe, params)
    assert 35 <= m.values["peak_rate"] <= 37
    assert m.values["peak_probes"] == len(seen) <= 12
    assert m.values["peak_orders_per_min"] == m.values["peak_rate"] * 6
    failing = peak_search(lambda rate: None, params)
    assert failing.values["peak_rate"] == 0.0


def test_load_sweep_and_peak_cases():
    w = Webstore(Webstore.Params(instances=[2, 4], rates=[40, 10], peak=True), HOST)
    assert w.cases() == ["instances=2", "instances=4", "rate=10", "rate=40", "peak"]
    assert w.instance_count("rate=40") == 2 and w.instance_count("peak") == 2
    assert {m.name for m in w.metrics("peak")} == {"peak_rate", "peak_orders_per_min", "peak_probes"}
    argv = w.driver_argv("rate=40", [("198.18.0.1", 18480)])
    cfg = json.loads(argv[-1])
    assert cfg["mode"] == "open" and cfg["rate"] == 40


def test_expected_time_counts_the_set_duration_and_the_servers():
    # the study's wall-time estimate before it starts: warm-up + measured
    # time per run, the peak search's probes, and the servers of each instance
    w = Webstore(
        Webstore.Params(instances=[1, 4], rates=[10], peak=True, duration_s=20, warmup_s=5, peak_steps=4), HOST
    )
    assert [w.expected_s(c) for c in w.cases()] == [27.0, 33.0, 27.0, 4 * 25 + 2.0]


def test_each_round_draws_its_own_request_stream_shared_by_the_round(monkeypatch):
    from types import SimpleNamespace

    from isobench.workloads.multi import MultiServerWorkload

    seen = []
    monkeypatch.setattr(
        MultiServerWorkload,
        "run",
        lambda self, case, env: seen.append(
            (env.name, json.loads(self.driver_argv(case, [("198.18.0.2", 18480)])[-1])["seed"])
        ),
    )
    w = Webstore(Webstore.Params(seed=7), HOST)
    for _ in range(2):  # two rounds, interleaved as the runner does
        for name in ("native", "docker-nat"):
            w.run("instances=1", SimpleNamespace(name=name))
    assert seen == [("native", "7-0"), ("docker-nat", "7-0"), ("native", "7-1"), ("docker-nat", "7-1")]
