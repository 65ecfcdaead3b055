"""Many-instance studies as numbers: which metrics of a sweep are per-
instance values or fairness, speedup over the fewest instances, and the
density readings (envs/group.py) as table rows. The figures that draw them
are in report/figures/instances.py; the Markdown report prints the rows.

Metrics are recognised by role (report.roles): ``per-instance`` values
(named ``instance_<i>_<name>``, which gives their legend), ``fairness``
(Jain's index, max/min); a sweep over ``instances`` is a scale-out.
"""

from __future__ import annotations

from isobench.core.metric import FAIRNESS, PER_INSTANCE, parse_instance_metric
from isobench.report.sweeps import Sweep
from isobench.results.table import OK, Table

SCALE_PARAM = "instances"
MiB = 1024 * 1024
UNNAMED = "per-instance value"  # the quantity of per-instance metrics not named instance_<i>_<name>


def per_instance_series(sweep: Sweep) -> tuple[str, list[tuple[str, str]]] | None:
    """The sweep's first per-instance quantity: (name, [(line label, metric)])
    by instance number; None when the sweep has none. Metrics not named
    ``instance_<i>_<name>`` form one quantity, each line its metric's name."""
    by_name: dict[str, list[tuple[int, str, str]]] = {}
    for k, metric in enumerate(sweep.metrics_with_role(PER_INSTANCE)):
        parsed = parse_instance_metric(metric)
        index, name = parsed or (k, UNNAMED)
        by_name.setdefault(name, []).append((index, f"instance {index}" if parsed else metric, metric))
    if not by_name:
        return None
    name, metrics = next(iter(by_name.items()))
    return name, [(label, metric) for _, label, metric in sorted(metrics)]


def fairness_metrics(sweep: Sweep) -> list[str]:
    """Fairness metrics with at least two swept values: indices (higher is
    better, 1 = fair) before ratios (lower is better)."""
    metrics = [m for m in sweep.metrics_with_role(FAIRNESS) if len({v for v, _ in sweep.metric_rows(m)}) >= 2]
    return sorted(metrics, key=lambda m: not sweep.metric_rows(m)[0][1].key.higher_is_better)


def speedup(xs: list[float], ys: list[float], es: list[float]) -> tuple[list[float], list[float], list[float]]:
    """Each point over the one at the fewest instances (its CI scaled alike). Pure."""
    base = ys[xs.index(min(xs))]
    if base <= 0:
        return [], [], []
    return xs, [y / base for y in ys], [e / base for e in es]


def scaleout_metric(sweep: Sweep) -> str | None:
    """The aggregate throughput of a sweep over instances."""
    return sweep.throughput_metric() if sweep.param == SCALE_PARAM else None


def density_lines(env_facts: dict[str, dict], envs: list[str]) -> list[list[str]]:
    """Rows: environment, N, startup of instance N, MiB per instance, QEMU PSS."""
    rows = []
    for env in envs:
        for p in (env_facts.get(env) or {}).get("density") or []:
            pss = p.get("vmm_pss_bytes")
            rows.append(
                [
                    env,
                    str(p["n"]),
                    f"{p['startup_s']:.2f}",
                    f"{p['mem_per_instance_bytes'] / MiB:.0f}",
                    f"{pss / MiB:.0f}" if pss else "-",
                ]
            )
    return rows


def speedup_lines(table: Table, sweeps: list[Sweep]) -> list[list[str]]:
    """Rows: workload, environment, N, mean throughput, speedup over the fewest instances."""
    rows = []
    for sweep in sweeps:
        metric = scaleout_metric(sweep)
        if metric is None:
            continue
        pts = sweep.metric_rows(metric)
        for i, col in enumerate(table.columns):
            ok = [(v, row.cells[i].mean) for v, row in pts if row.cells[i].status == OK]
            if not ok:
                continue
            base = ok[0][1]
            rows += [
                [sweep.label, col.env, f"{v:g}", f"{mean:.4g}", f"{mean / base:.2f}" if base > 0 else "-"]
                for v, mean in ok
            ]
    return rows
