"""The webstore driver's JSON -> metrics (pure): orders per minute,
per-operation mean/p50/p90/p99 from the merged log histograms, the worst
instance's p90 per operation, error and rollback rates, CloudStone-style
pass/fail of every operation's p90 against 250 and 500 ms, and fairness
of orders across instances."""

from __future__ import annotations

import json

from isobench.analysis.stats import jain_index, max_min_ratio
from isobench.core.metric import FAIRNESS, THROUGHPUT, Metric, limit_metric
from isobench.drivers import loghist
from isobench.workloads.base import Measurement, ParseError
from isobench.workloads.multi import per_instance_metrics, per_instance_values

OPS = ("login", "newcust", "browse", "product", "purchase", "history")
LIMITS_MS = (250.0, 500.0)  # CloudStone's response-time limits: webstore's default limits_ms
DRIVER_SATURATED = 0.9  # of one core: the driver, not the store, may be the bottleneck


def parse_webstore(
    stdout: str, ops: list[str], max_error_rate: float, limits_ms: tuple[float, ...] = LIMITS_MS
) -> tuple[dict[str, float], dict]:
    try:
        doc = json.loads(stdout)
        duration = float(doc["duration_s"])
        insts = doc["instances"]
        hists = [{op: loghist.from_json(i["ops"][op]["hist"]) for op in ops} for i in insts]
        sums = [{op: float(i["ops"][op]["sum_s"]) for op in ops} for i in insts]
        errors = sum(int(i["ops"][op]["errors"]) for i in insts for op in ops)
        orders = [int(i["orders"]) for i in insts]
        rollbacks = sum(int(i["rollbacks"]) for i in insts)
        cpu = float(doc["driver_cpu_frac"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError(f"webstore driver output does not parse ({type(exc).__name__}: {exc})") from exc
    if duration <= 0 or not insts:
        raise ParseError("webstore driver output has no duration or no instances")
    if cpu > DRIVER_SATURATED:
        raise ParseError(
            f"the load generator used {cpu:.0%} of its core: it may be the bottleneck; lower users/rate or instances"
        )
    done = sum(loghist.count(h[op]) for h in hists for op in ops)
    total = done + errors
    first = next((i.get("first_error") for i in insts if i.get("first_error")), "")
    if total == 0:
        raise ParseError("webstore driver completed no operation")
    if errors / total > max_error_rate:
        raise ParseError(f"{errors} of {total} webstore operations failed (max_error_rate): {first}")
    values: dict[str, float] = {
        "orders_per_min": 60 * sum(orders) / duration,
        "ops_per_s": done / duration,
        "error_rate": errors / total,
        "rollback_rate": rollbacks / (rollbacks + sum(orders)) if rollbacks + sum(orders) else 0.0,
        "p90_ms": 1000 * loghist.quantile(loghist.merge(h[op] for h in hists for op in ops), 0.9),
        "driver_cpu_pct": 100 * cpu,
    }
    worst_p90 = []
    for op in ops:
        merged = loghist.merge(h[op] for h in hists)
        n = loghist.count(merged)
        if n == 0:
            raise ParseError(f"no successful {op} operation: the mix or the run is too short for it")
        values[f"{op}_mean_ms"] = 1000 * sum(s[op] for s in sums) / n
        for q in (50, 90, 99):
            values[f"{op}_p{q}_ms"] = 1000 * loghist.quantile(merged, q / 100)
        per = [1000 * loghist.quantile(h[op], 0.9) for h in hists if loghist.count(h[op])]
        values[f"{op}_p90_worst_ms"] = max(per)
        worst_p90.append(max(per))
    for limit in limits_ms:
        values[limit_metric(limit)] = float(all(p < limit for p in worst_p90))
    per_min = [60 * o / duration for o in orders]
    values.update(per_instance_values("orders_per_min", per_min))
    if len(orders) == 1:
        values["imbalance"], values["jain"] = 1.0, 1.0
    else:  # an instance with no order counts as one (a finite, large imbalance)
        values["imbalance"] = max_min_ratio([max(o, 1) for o in orders])
        values["jain"] = jain_index(orders) if sum(orders) else 0.0
    extra = {
        "histograms": [{op: loghist.to_json(h[op]) for op in ops} for h in hists],
        "orders": orders,
        "rollbacks": rollbacks,
        "errors": errors,
        "lag_s": doc.get("lag_s"),
        "first_error": first,
    }
    return values, extra


def peak_metrics() -> list[Metric]:
    return [
        Metric(
            "peak_rate",
            "ops/s",
            True,
            "highest arrival rate per instance at which every operation's "
            "worst-instance p90 met peak_limit_ms (0: none)",
            role=THROUGHPUT,
            primary=True,
        ),
        Metric("peak_orders_per_min", "orders/min", True, "orders per minute at the peak rate"),
        Metric("peak_probes", "", False, "open-loop runs the bounded search took"),
    ]


def meets(values: dict[str, float] | None, limit_ms: float) -> bool:
    return values is not None and all(v < limit_ms for k, v in values.items() if k.endswith("_p90_worst_ms"))


def peak_search(probe, params) -> Measurement:
    """Weathervane-style bounded search: double the rate from peak_min_rate
    while every operation meets the limit (up to peak_max_rate), then bisect
    between the last rate that met it and the first that did not, at most
    peak_steps probes in all. probe(rate) -> values or None (failed)."""
    lo, hi, best, steps = 0.0, None, None, []
    rate = float(params.peak_min_rate)
    for _ in range(params.peak_steps):
        values = probe(rate)
        ok = meets(values, params.peak_limit_ms)
        steps.append(
            {
                "rate": rate,
                "ok": ok,
                "p90_worst_ms": {k: v for k, v in (values or {}).items() if k.endswith("_p90_worst_ms")},
            }
        )
        if ok:
            lo, best = rate, values
            if hi is None and rate >= params.peak_max_rate:
                break
            rate = min(rate * 2, params.peak_max_rate) if hi is None else (lo + hi) / 2
        else:
            hi = rate
            rate = (lo + hi) / 2 if lo else rate / 2
        if hi is not None and lo and (hi - lo) / hi < 0.05:
            break
        if hi is not None and not lo and rate < 1:
            break
    values = {
        "peak_rate": lo,
        "peak_orders_per_min": best["orders_per_min"] if best else 0.0,
        "peak_probes": float(len(steps)),
    }
    return Measurement(values=values, extra={"probes": steps}, raw=json.dumps(steps))


def case_metrics(ops: list[str], limits_ms: tuple[float, ...], n: int, open_loop: bool) -> list[Metric]:
    """What a closed- or open-loop case of n instances measures. The primary:
    orders per minute in a closed loop (what the stacks serve); in an open
    loop the offered rate sets the orders, the latency is the answer."""
    out = [
        Metric(
            "orders_per_min",
            "orders/min",
            True,
            "committed purchases per minute, all instances",
            role=THROUGHPUT,
            primary=not open_loop,
        ),
        Metric("ops_per_s", "ops/s", True, "successful operations per second, all instances"),
        # a plain value: through nginx and PHP, not the NAT vs host comparison's
        # latency (LATENCY's meaning); still the throughput-vs-latency axis
        Metric("p90_ms", "ms", False, "90th percentile latency over all operations", primary=open_loop),
        Metric("error_rate", "", False, "failed operations over all operations"),
        Metric("rollback_rate", "", False, "purchases rolled back (out of stock) over purchases"),
        *(
            Metric(limit_metric(ms), "", True, f"1 when every operation's p90 (worst instance) is under {ms:g} ms")
            for ms in limits_ms
        ),
        Metric("imbalance", "x", False, "most over fewest orders of one instance", role=FAIRNESS),
        Metric("jain", "", True, "Jain's fairness index of per-instance orders", role=FAIRNESS),
        Metric("driver_cpu_pct", "%", False, "load generator's CPU use, % of one core"),
    ]
    for op in ops:
        out += [
            Metric(f"{op}_mean_ms", "ms", False, f"{op}: mean latency"),
            Metric(f"{op}_p50_ms", "ms", False, f"{op}: median latency"),
            Metric(f"{op}_p90_ms", "ms", False, f"{op}: 90th percentile latency"),
            Metric(f"{op}_p99_ms", "ms", False, f"{op}: 99th percentile latency"),
            Metric(f"{op}_p90_worst_ms", "ms", False, f"{op}: the worst instance's p90"),
        ]
    return out + per_instance_metrics(
        "orders_per_min", "orders/min", True, n, lambda i: f"instance {i}'s committed purchases per minute"
    )
