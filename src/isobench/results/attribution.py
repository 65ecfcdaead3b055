"""Where the overhead comes from: per-unit counter costs of each environment
against the baseline, tested like Table I's cells.

Every measured sample carries counter deltas (isobench.host.counters) and the
units of work it did (Workload.units). Per sample, a counter divided by the
units is a per-unit cost (µs of system CPU per round trip, NET_RX softirqs
per request ...). For each workload case and environment, those costs are
compared with the baseline's by ``stats.compare_cell`` (paired by round when
both have the round), and the verdicts of the whole attribution table come
from ``verdicts.adjust`` (Benjamini-Hochberg, three verdicts). The sections
list the changed rows, largest first, the environment's own counters apart
from the host-wide ones, and as a cost only where the case's primary result
changed. Meanings and limits: docs/attribution.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from isobench.analysis.stats import compare_cell
from isobench.analysis.verdicts import CHANGED, Verdict, adjust
from isobench.core.numbers import MINUS, signed
from isobench.results.counterscope import ENVIRONMENT, HOST, OWN_PREFIXES, attributable
from isobench.results.model import RunData
from isobench.results.primary import primary_keys
from isobench.results.table import Table

US = 1e6  # CPU-seconds -> µs

# (name, label, scale, unit prefix). Time counters first (µs per unit), then events.
COUNTERS: tuple[tuple[str, str, float, str], ...] = (
    ("cpu.sut_s", "host CPU, minus the client", US, "µs"),
    ("cpu.user_s", "user CPU (host)", US, "µs"),
    ("cpu.system_s", "system CPU (host)", US, "µs"),
    ("cpu.softirq_s", "softirq CPU (host)", US, "µs"),
    ("cpu.irq_s", "irq CPU (host)", US, "µs"),
    ("cpu.guest_s", "guest CPU (host)", US, "µs"),
    ("cpu.steal_s", "steal", US, "µs"),
    ("cgroup.user_s", "container user CPU", US, "µs"),
    ("cgroup.system_s", "container system CPU", US, "µs"),
    ("vmm.vcpu_s", "QEMU vCPU threads", US, "µs"),
    ("vmm.io_s", "QEMU I/O threads", US, "µs"),
    ("vmm.main_s", "QEMU main loop", US, "µs"),
    ("ctxt", "context switches", 1.0, ""),
    ("intr", "interrupts", 1.0, ""),
    ("softirq.NET_RX", "NET_RX softirqs", 1.0, ""),
    ("softirq.NET_TX", "NET_TX softirqs", 1.0, ""),
    ("softirq.BLOCK", "BLOCK softirqs", 1.0, ""),
    ("softirq.TIMER", "TIMER softirqs", 1.0, ""),
    ("softirq.SCHED", "SCHED softirqs", 1.0, ""),
    ("softirq.RCU", "RCU softirqs", 1.0, ""),
    ("pgfault", "page faults", 1.0, ""),
    ("pgmajfault", "major faults", 1.0, ""),
    ("disk.reads", "disk reads", 1.0, ""),
    ("disk.writes", "disk writes", 1.0, ""),
    ("disk.read_bytes", "bytes read from disk", 1.0, "B"),
    ("disk.write_bytes", "bytes written to disk", 1.0, "B"),
    ("conntrack.found", "conntrack lookups found", 1.0, ""),
    ("conntrack.new", "conntrack new", 1.0, ""),
    ("conntrack.search_restart", "conntrack search restarts", 1.0, ""),
)
_LABELS = {name: (label, scale, prefix) for name, label, scale, prefix in COUNTERS}
_ORDER = {name: i for i, (name, *_rest) in enumerate(COUNTERS)}

# The figure's categories, bottom to top.
CATEGORIES = ("user", "system", "softirq", "irq", "guest", "VMM threads")


def derived(d: dict[str, float]) -> dict[str, float]:
    """Counters computed from others: the host's busy CPU minus the client
    host's share (``cpu.sut_s``) and QEMU's thread roles, user + system."""
    out = dict(d)
    if "cpu.user_s" in d:
        busy = sum(d.get(f"cpu.{k}_s", 0.0) for k in ("user", "nice", "system", "irq", "softirq"))
        out["cpu.sut_s"] = max(0.0, busy - d.get("cpu.client_s", 0.0))
    for role in ("vcpu", "io", "main"):
        if f"vmm.{role}_user_s" in d:
            out[f"vmm.{role}_s"] = d[f"vmm.{role}_user_s"] + d.get(f"vmm.{role}_sys_s", 0.0)
    return out


def categories(d: dict[str, float]) -> dict[str, float]:
    """One sample's CPU-seconds by figure category, without double counting:
    QEMU's threads are taken out of user/system (and guest time, which the
    kernel counts in user and in the vCPU threads, out of them), and the
    client host's share out of user + system in proportion."""
    guest = d.get("cpu.guest_s", 0.0) + d.get("cpu.guest_nice_s", 0.0)
    vmm_user = sum(d.get(f"vmm.{r}_user_s", 0.0) for r in ("vcpu", "io", "main"))
    vmm_sys = sum(d.get(f"vmm.{r}_sys_s", 0.0) for r in ("vcpu", "io", "main"))
    vmm_user_ng = max(0.0, vmm_user - guest)
    user = max(0.0, d.get("cpu.user_s", 0.0) + d.get("cpu.nice_s", 0.0) - guest - vmm_user_ng)
    system = max(0.0, d.get("cpu.system_s", 0.0) - vmm_sys)
    client = d.get("cpu.client_s", 0.0)
    keep = 1.0 - min(1.0, client / (user + system)) if user + system > 0 else 1.0
    return {
        "user": user * keep,
        "system": system * keep,
        "softirq": d.get("cpu.softirq_s", 0.0),
        "irq": d.get("cpu.irq_s", 0.0),
        "guest": guest,
        "VMM threads": vmm_user_ng + vmm_sys,
    }


def per_unit(samples: list[tuple[int, dict[str, float], list[Any]]]) -> tuple[str, dict[str, dict[int, float]]]:
    """{counter: {round: value per unit}} of one cell's samples, and the unit's name."""
    unit: str = "run"
    out: dict[str, dict[int, float]] = {}
    for round_, deltas, units in samples:
        try:
            unit, count = str(units[0]), float(units[1])
        except (TypeError, ValueError, IndexError):
            continue
        if not count > 0:
            continue
        for name, value in derived(deltas).items():
            if name in _LABELS and isinstance(value, (int, float)):
                out.setdefault(name, {})[round_] = value * _LABELS[name][1] / count
    return unit, out


@dataclass(frozen=True)
class Row:
    workload: str
    case: str
    env: str
    counter: str
    label: str
    unit: str  # e.g. "µs/round trip"
    baseline_mean: float
    env_mean: float
    verdict: Verdict

    @property
    def delta(self) -> float:
        return self.env_mean - self.baseline_mean

    def text(self) -> str:
        sign = "+" if self.delta >= 0 else MINUS
        return (
            f"{sign}{_fmt(abs(self.delta))} {self.unit} {self.label} "
            f"({_fmt(self.baseline_mean)} \u2192 {_fmt(self.env_mean)}, {signed(self.verdict.pct, 0)}%, "
            f"p_adj {self.verdict.p_adjusted:.2g})"
        )


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def build_rows(run: RunData) -> list[Row]:
    """Every testable (cell, environment, counter) against the baseline, with
    the verdicts of the whole table (BH over all of them)."""
    pending = []
    cells = sorted({(w, c) for (w, c, _e) in run.counters}, key=lambda wc: (wc[0], wc[1]))
    for w, c in cells:
        base = run.counters.get((w, c, run.baseline))
        if not base:
            continue
        unit, base_pu = per_unit(base)
        for env in run.environments:
            if env == run.baseline or (w, c, env) not in run.counters:
                continue
            _u, env_pu = per_unit(run.counters[(w, c, env)])
            for name in sorted(set(base_pu) & set(env_pu), key=_ORDER.__getitem__):
                b, e = base_pu[name], env_pu[name]
                pairs = [(e[r], b[r]) for r in sorted(set(b) & set(e))]
                effect = compare_cell(list(e.values()), list(b.values()), False, pairs=pairs)
                label, _scale, prefix = _LABELS[name]
                pending.append(
                    (
                        w,
                        c,
                        env,
                        name,
                        label,
                        f"{prefix}/{unit}" if prefix else f"per {unit}",
                        sum(b.values()) / len(b),
                        sum(e.values()) / len(e),
                        effect,
                    )
                )
    verdicts = adjust([p[-1] for p in pending]) if pending else []
    return [Row(*p[:-1], v) for p, v in zip(pending, verdicts)]


def changed(rows: list[Row]) -> list[Row]:
    """The rows whose verdict is "changed", per cell and environment: CPU
    time first, largest per-unit delta first, then the events likewise."""

    def key(r: Row) -> tuple[str, str, str, bool, float]:
        is_time = r.unit.startswith("µs")
        return (r.workload, r.case, r.env, not is_time, -abs(r.delta) if is_time else -abs(r.verdict.pct))

    return sorted((r for r in rows if r.verdict.verdict == CHANGED), key=key)


TITLE = "Where the overhead comes from"
UNCHANGED_TITLE = "Counters that changed where the result did not"

# Where a counter is read: the environment's own (Environment.counters(): its
# cgroup, its VMM's threads) or host-wide (/proc/stat, softirqs, vmstat,
# diskstats, conntrack), which also counts every other process on the host.
SCOPE_HEADINGS = {
    ENVIRONMENT: "the environment's own counters (its cgroup, its VMM's threads)",
    HOST: "host-wide counters, including neighbours (other processes on this host)",
}


def scope(counter: str) -> str:
    return ENVIRONMENT if counter.startswith(OWN_PREFIXES) else HOST


@dataclass(frozen=True)
class Group:
    """One cell and environment's changed counters, the environment's own
    apart from the host-wide ones; ``primary_changed``: a primary metric of
    the case changed in Table I in this environment (only then are the
    counters a cost of the environment)."""

    workload: str
    case: str
    env: str
    primary_changed: bool
    own: tuple[Row, ...]
    host: tuple[Row, ...]

    @property
    def name(self) -> str:
        return f"{self.workload}/{self.case} on {self.env}"

    def lists(self) -> list[tuple[str, tuple[Row, ...]]]:
        """(scope, rows) of the non-empty lists, the environment's own first."""
        return [(s, rows) for s, rows in ((ENVIRONMENT, self.own), (HOST, self.host)) if rows]


def primary_changed_cells(run: RunData, table: Table) -> set[tuple[str, str, str]]:
    """(workload, case, env) whose primary metric (results/primary.py) changed in Table I."""
    primaries = set(primary_keys(run))
    return {
        (row.key.workload, row.key.case, cell.env)
        for row in table.rows
        if row.key in primaries
        for cell in row.cells
        if cell.verdict is not None and cell.verdict.changed
    }


def group_rows(rows: list[Row], primary_changed: set[tuple[str, str, str]]) -> list[Group]:
    """The changed rows per cell and environment (ordered as ``changed``),
    split by scope, each group flagged by whether its primary cell changed."""
    by_cell: dict[tuple[str, str, str], list[Row]] = {}
    for r in changed(rows):
        by_cell.setdefault((r.workload, r.case, r.env), []).append(r)
    return [
        Group(
            *key,
            key in primary_changed,
            tuple(r for r in rs if scope(r.counter) == ENVIRONMENT),
            tuple(r for r in rs if scope(r.counter) == HOST),
        )
        for key, rs in by_cell.items()
    ]


def intro(run: RunData, rows: list[Row]) -> str:
    return (
        f"Per-unit counter costs against {run.baseline}, changed rows only (Benjamini-Hochberg over "
        f"{rows[0].verdict.m if rows else 0} tested counters, paired by round), for the cells whose primary "
        "result changed in Table I; the environment's own counters apart from host-wide ones, which also "
        "count neighbours: docs/attribution.md."
        + (
            " Duet samples count only each environment's own counters: the host-wide ones counted both sides."
            if run.duet_starts
            else ""
        )
    )


def row_json(r: Row) -> dict[str, Any]:
    return {
        "counter": r.counter,
        "label": r.label,
        "unit": r.unit,
        "baseline": r.baseline_mean,
        "value": r.env_mean,
        "delta": r.delta,
        "pct": r.verdict.pct,
        "p_adjusted": r.verdict.p_adjusted,
        "text": r.text(),
    }


def attribution_json(run: RunData, rows: list[Row], primary_changed: set[tuple[str, str, str]]) -> dict[str, Any]:
    """The report document's ``attribution``: every group, a cost or not."""
    return {
        "baseline": run.baseline,
        "tested": rows[0].verdict.m if rows else 0,
        "groups": [
            {
                "workload": g.workload,
                "case": g.case,
                "env": g.env,
                "primary_changed": g.primary_changed,
                "environment": [row_json(r) for r in g.own],
                "host": [row_json(r) for r in g.host],
                "host_includes_neighbours": True,
            }
            for g in group_rows(rows, primary_changed)
        ],
    }


def counters_of(extras: dict[tuple[str, str, str], list[dict[str, Any]]]) -> dict[tuple[str, str, str], list[Any]]:
    """RunData.counters' shape from Store.extras ({(env, workload, case): [extra]});
    rounds unknown (0), enough for means."""
    out = {}
    for (env, w, c), items in extras.items():
        rows = [
            (0, own, e.get("units") or ["run", 1.0])
            for e in items
            if isinstance(e.get("counters"), dict) and (own := attributable(e["counters"], e))
        ]
        if rows:
            out[(w, c, env)] = rows
    return out


def cpu_per_unit(counters: dict[tuple[str, str, str], list[Any]]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """For the figure: per cell, the unit and per environment the mean µs per
    unit of each CPU category."""
    out: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for (w, c, env), samples in counters.items():
        sums = dict.fromkeys(CATEGORIES, 0.0)
        n, unit = 0, "run"
        for _round, deltas, units in samples:
            try:
                unit, count = str(units[0]), float(units[1])
            except (TypeError, ValueError, IndexError):
                continue
            if count > 0:
                for k, v in categories(deltas).items():
                    sums[k] += v * US / count
                n += 1
        if n:
            out.setdefault((w, c), (unit, {}))[1][env] = {k: v / n for k, v in sums.items()}
    return out


def compare_rows(a: RunData, b: RunData) -> list[Row]:
    """Run B against run A: per cell and environment measured in both, each
    counter's per-unit cost (Welch on logs: rounds of two runs do not pair),
    BH over the whole comparison. ``baseline_mean`` is A's, ``env_mean`` B's."""
    pending = []
    for key in sorted(set(a.counters) & set(b.counters)):
        w, c, env = key
        unit, pa = per_unit(a.counters[key])
        _u, pb = per_unit(b.counters[key])
        for name in sorted(set(pa) & set(pb), key=_ORDER.__getitem__):
            va, vb = list(pa[name].values()), list(pb[name].values())
            label, _scale, prefix = _LABELS[name]
            pending.append(
                (
                    w,
                    c,
                    env,
                    name,
                    label,
                    f"{prefix}/{unit}" if prefix else f"per {unit}",
                    sum(va) / len(va),
                    sum(vb) / len(vb),
                    compare_cell(vb, va, False),
                )
            )
    verdicts = adjust([p[-1] for p in pending]) if pending else []
    return [Row(*p[:-1], v) for p, v in zip(pending, verdicts)]


def compare_section_lines(a: RunData, b: RunData, limit: int = 8) -> list[str]:
    """As section_lines, for ``isobench compare``: what changed per unit from A to B."""
    if not (a.counters and b.counters):
        return []
    rows = compare_rows(a, b)
    out = [
        "Where the change comes from",
        f"Per-unit counter costs of {b.run_id} against {a.run_id}, changed rows only (Benjamini-Hochberg "
        f"over {rows[0].verdict.m if rows else 0} tested counters; docs/attribution.md).",
    ]
    groups = group_rows(rows, set())
    if not groups:
        out.append("No per-unit counter changed significantly between the runs.")
    for g in groups:
        out.append(f"{g.name}:")
        for where, rs in g.lists():
            out.append(f"  {SCOPE_HEADINGS[where]}:")
            out += [f"    {r.text()}" for r in rs[:limit]]
    return out
