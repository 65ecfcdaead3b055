"""Where the overhead comes from: per-unit counter costs of each environment
against the baseline, tested like Table I's cells.

Every measured sample carries counter deltas (isobench.host.counters) and the
units of work it did (Workload.units). Per sample, a counter divided by the
units is a per-unit cost (µs of system CPU per round trip, NET_RX softirqs
per request ...). For each workload case and environment, those costs are
compared with the baseline's by ``stats.compare_cell`` (paired by round when
both have the round), and the verdicts of the whole attribution table come
from ``verdicts.adjust`` (Benjamini-Hochberg, three verdicts). The sections
list the changed rows, largest first. Meanings and limits: docs/attribution.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from isobench.analysis.stats import compare_cell
from isobench.analysis.verdicts import CHANGED, Verdict, adjust
from isobench.core.numbers import MINUS, signed
from isobench.results.model import RunData

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


def section_lines(run: RunData, limit: int = 8) -> list[str]:
    """Title, intro, then per cell and environment a heading line followed by
    its changed counters (indented with two spaces). Empty without counters."""
    if not run.counters:
        return []
    rows = build_rows(run)
    out = [
        TITLE,
        f"Per-unit counter costs against {run.baseline}, changed rows only (Benjamini-Hochberg over "
        f"{rows[0].verdict.m if rows else 0} tested counters, paired by round; host-wide counters also "
        "see neighbours: docs/attribution.md).",
    ]
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in changed(rows):
        groups.setdefault((r.workload, r.case, r.env), []).append(r)
    if not groups:
        out.append(f"No per-unit counter changed significantly against {run.baseline}.")
    for (w, c, env), rs in groups.items():
        out.append(f"{w}/{c} on {env}:")
        out += [f"  {r.text()}" for r in rs[:limit]]
        if len(rs) > limit:
            out.append(f"  ... and {len(rs) - limit} more changed counters (see the export)")
    return out


def counters_of(extras: dict[tuple[str, str, str], list[dict[str, Any]]]) -> dict[tuple[str, str, str], list[Any]]:
    """RunData.counters' shape from Store.extras ({(env, workload, case): [extra]});
    rounds unknown (0), enough for means."""
    out = {}
    for (env, w, c), items in extras.items():
        rows = [
            (0, e["counters"], e.get("units") or ["run", 1.0])
            for e in items
            if isinstance(e.get("counters"), dict) and e["counters"]
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
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for r in changed(rows):
        groups.setdefault((r.workload, r.case, r.env), []).append(r)
    if not groups:
        out.append("No per-unit counter changed significantly between the runs.")
    for (w, c, env), rs in groups.items():
        out.append(f"{w}/{c} on {env}:")
        out += [f"  {r.text()}" for r in rs[:limit]]
    return out
