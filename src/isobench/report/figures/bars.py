"""Bars of absolute values, one bar per environment: CPU cost per GB (a
group per direction) and startup time (a panel per phase)."""

from __future__ import annotations

from matplotlib.figure import Figure

from isobench.core.metric import CPU_COST
from isobench.report.style import ci_half, emulated_note, env_colors, env_label, new_figure
from isobench.report.sweeps import is_startup
from isobench.results.roles import role_of
from isobench.results.table import EMULATED, HIGHER, LOWER, OK, SIGNIFICANT, Row, Table


def bar_panels(table: Table, panels: list[tuple[str, list[Row]]], title: str, group_label) -> Figure | None:
    """Per panel (metric): groups of bars (rows), one bar per environment,
    mean with 95% CI, ``*`` where the environment differs significantly."""
    panels = [(name, rows) for name, rows in panels if any(c.status == OK for r in rows for c in r.cells)]
    if not panels:
        return None
    colors = env_colors(table.columns)
    envs = [
        (i, c) for i, c in enumerate(table.columns) if any(r.cells[i].status == OK for _, rows in panels for r in rows)
    ]
    n_env = len(envs)
    # One group per panel (startup): environments side by side, named on the axis.
    single = all(len(rows) == 1 for _, rows in panels)
    width = 0.8 if single else 0.8 / n_env
    fig = new_figure(min(max(6.0, 1.2 + 0.5 * n_env * max(len(r) for _, r in panels)) * len(panels), 15), 4.6)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (name, rows) in zip(axes, panels):
        drawn = set()
        for gi, row in enumerate(rows):
            for k, (i, col) in enumerate(envs):
                cell = row.cells[i]
                if cell.status != OK:
                    continue
                x = k if single else gi + (k - (n_env - 1) / 2) * width
                mean = cell.mean
                half = ci_half(cell)
                ax.bar(
                    x,
                    mean,
                    width=width * 0.9,
                    color=colors[col.env],
                    hatch="//" if col.emulated else None,
                    edgecolor="black" if col.emulated else "white",
                    linewidth=0.5,
                    yerr=half if half else None,
                    capsize=2,
                    label=env_label(col) if col.env not in drawn else None,
                )
                drawn.add(col.env)
                marker = SIGNIFICANT if cell.verdict is not None and cell.verdict.changed else ""
                ax.text(x, mean + half, f"{mean:.3g}{marker}", ha="center", va="bottom", fontsize=7)
        key = rows[0].key
        if single:
            ax.set_xticks(range(n_env), [c.env + (f" {EMULATED}" if c.emulated else "") for _, c in envs], fontsize=9)
        else:
            ax.set_xticks(range(len(rows)), [group_label(r) for r in rows], fontsize=9)
        ax.set_ylabel(f"{key.metric} ({key.unit})" if key.unit else key.metric)
        ax.set_title(f"{name} {HIGHER if key.higher_is_better else LOWER}", fontsize=10)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    emulated_note(fig, [c for _, c in envs])
    return fig


def cpu_cost_figure(table: Table, workload: str) -> Figure | None:
    """CPU cost per GB moved, per direction (case), per environment."""
    by_metric: dict[str, list[Row]] = {}
    for row in table.rows:
        if row.key.workload == workload and role_of(row.key) == CPU_COST:
            by_metric.setdefault(row.key.metric, []).append(row)
    return bar_panels(
        table,
        list(by_metric.items()),
        f"{workload}: CPU cost per GB (mean, 95% CI; {SIGNIFICANT} vs {table.baseline})",
        lambda r: r.key.case,
    )


def startup_figure(table: Table) -> Figure | None:
    """Start request to ready, per environment: one panel per startup metric."""
    rows = [r for r in table.rows if is_startup(r)]
    if not rows:
        return None
    panels: dict[str, list[Row]] = {}
    for r in rows:
        name = r.key.metric if r.key.case in ("", "default") else f"{r.key.case}: {r.key.metric}"
        panels.setdefault(name, []).append(r)
    return bar_panels(
        table,
        list(panels.items()),
        f"Startup time per environment (mean, 95% CI; {SIGNIFICANT} vs {table.baseline})",
        lambda r: r.key.workload,
    )
