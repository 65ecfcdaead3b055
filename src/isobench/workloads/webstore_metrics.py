"""The webstore driver's JSON -> metrics (pure): orders per minute,
per-operation mean/p50/p90/p99 from the merged log histograms, the worst
instance's p90 per operation, error and rollback rates, CloudStone-style
pass/fail of every operation's p90 against 250 and 500 ms, and fairness
of orders across instances."""
from __future__ import annotations

import json

from isobench.drivers import loghist
from isobench.stats import jain_index, max_min_ratio
from isobench.workloads.base import ParseError
from isobench.workloads.multi import per_instance_values

OPS = ("login", "newcust", "browse", "product", "purchase", "history")
LIMITS_MS = (250, 500)
DRIVER_SATURATED = 0.9  # of one core: the driver, not the store, may be the bottleneck


def parse_webstore(stdout: str, ops: list[str], max_error_rate: float) -> tuple[dict[str, float], dict]:
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
        raise ParseError(f"the load generator used {cpu:.0%} of its core: it may be the bottleneck; "
                         "lower users/rate or instances")
    done = sum(loghist.count(h[op]) for h in hists for op in ops)
    total = done + errors
    first = next((i.get("first_error") for i in insts if i.get("first_error")), "")
    if total == 0:
        raise ParseError("webstore driver completed no operation")
    if errors / total > max_error_rate:
        raise ParseError(f"{errors} of {total} webstore operations failed (max_error_rate): {first}")
    values: dict[str, float] = {
        "orders_per_min": 60 * sum(orders) / duration, "ops_per_s": done / duration,
        "error_rate": errors / total,
        "rollback_rate": rollbacks / (rollbacks + sum(orders)) if rollbacks + sum(orders) else 0.0,
        "p90_ms": 1000 * loghist.quantile(loghist.merge(h[op] for h in hists for op in ops), 0.9),
        "driver_cpu_pct": 100 * cpu}
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
    for limit in LIMITS_MS:
        values[f"pass_{limit}"] = float(all(p < limit for p in worst_p90))
    per_min = [60 * o / duration for o in orders]
    values.update(per_instance_values("orders_per_min", per_min))
    if len(orders) == 1:
        values["imbalance"], values["jain"] = 1.0, 1.0
    else:  # an instance with no order counts as one (a finite, large imbalance)
        values["imbalance"] = max_min_ratio([max(o, 1) for o in orders])
        values["jain"] = jain_index(orders) if sum(orders) else 0.0
    extra = {"histograms": [{op: loghist.to_json(h[op]) for op in ops} for h in hists],
             "orders": orders, "rollbacks": rollbacks, "errors": errors, "lag_s": doc.get("lag_s"),
             "first_error": first}
    return values, extra
