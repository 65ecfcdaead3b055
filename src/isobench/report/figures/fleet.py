"""Overhead per environment across a fleet: one marker per host, so the
host that pays most (or least) for an environment stands out. Pure:
FleetReport in, Figure out (None when there is nothing to draw)."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from isobench.report.fleet import FleetReport
from isobench.report.style import PALETTE, REFERENCE_COLOR, new_figure

MARKERS = "osD^vP*X<>"


def fleet_overhead_figure(rep: FleetReport) -> Figure | None:
    """One panel per environment; x = the table's cells, y = overhead %
    vs the host's native (baseline panel: % vs the fleet median)."""
    envs = [e for e in rep.envs if any(math.isfinite(v.pct) for c in rep.cells if c.env == e for v in c.values)]
    if not envs:
        return None
    widest = max(sum(1 for c in rep.cells if c.env == e) for e in envs)
    fig = new_figure(max(7.0, 0.5 * widest + 3), 3.2 * len(envs))
    axes = fig.subplots(len(envs), 1, squeeze=False)[:, 0]
    for ax, env in zip(axes, envs):
        cells = [c for c in rep.cells if c.env == env]
        for i, host in enumerate(rep.hosts):
            xs, ys = [], []
            for x, c in enumerate(cells):
                v = next((v for v in c.values if v.host == host), None)
                if v is not None and math.isfinite(v.pct):
                    xs.append(x)
                    ys.append(v.pct)
            ax.scatter(xs, ys, marker=MARKERS[i % len(MARKERS)], color=PALETTE[i % len(PALETTE)], label=host, zorder=3)
        ax.axhline(0, color=REFERENCE_COLOR, lw=0.8)
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels([f"{c.workload}\n{c.label}" for c in cells], fontsize=7, rotation=20, ha="right")
        base = cells[0].is_baseline if cells else False
        ax.set_ylabel("% vs fleet median" if base else "overhead vs host's baseline %")
        ax.set_title(
            f"{env}: " + ("each host vs the fleet's median" if base else "overhead per host (+ = worse)"), fontsize=10
        )
        ax.legend(fontsize=8, loc="best")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Fleet {rep.fleet_id}: {len(rep.hosts)} hosts")
    return fig
