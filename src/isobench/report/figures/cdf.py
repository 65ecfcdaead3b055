"""Latency CDFs from the samples' histograms (extras ``<name>_hist`` =
``[[latency_us, count], ...]``), every repetition pooled."""

from __future__ import annotations

import math
from collections.abc import Iterable

from matplotlib.figure import Figure

from isobench.report.style import emulated_note, env_colors, env_label, line_style, new_figure
from isobench.results.table import Table

HIST_SUFFIX = "_hist"
Histogram = list[tuple[float, float]]  # (latency, count), sorted by latency


def pool_histograms(hists: Iterable[Iterable]) -> Histogram:
    """Repetitions' histograms pooled: counts summed per latency bin."""
    total: dict[float, float] = {}
    for hist in hists:
        for lat, count in hist:
            total[float(lat)] = total.get(float(lat), 0.0) + float(count)
    return sorted((lat, c) for lat, c in total.items() if c > 0)


def histograms(extras: dict[tuple[str, str, str], list[dict]]) -> dict[tuple[str, str, str], dict[str, Histogram]]:
    """``Store.extras`` → {(workload, case, hist name): {env: pooled histogram}}."""
    out: dict[tuple[str, str, str], dict[str, list]] = {}
    for (env, workload, case), samples in extras.items():
        for extra in samples:
            if not isinstance(extra, dict):
                continue
            for name, hist in extra.items():
                if name.endswith(HIST_SUFFIX) and isinstance(hist, list) and hist:
                    out.setdefault((workload, case, name), {}).setdefault(env, []).append(hist)
    return {k: {env: pool_histograms(h) for env, h in per_env.items()} for k, per_env in out.items()}


def latency_cdf_figure(
    table: Table, workload: str, case: str, name: str, per_env: dict[str, Histogram]
) -> Figure | None:
    """Cumulative fraction of completions against latency, one line per
    environment (histograms of all repetitions pooled)."""
    colors = env_colors(table.columns)
    lines = [(col, per_env[col.env]) for col in table.columns if per_env.get(col.env)]
    if not lines:
        return None
    fig = new_figure(7.5, 4.6)
    ax = fig.add_subplot()
    lo, hi = math.inf, 0.0
    for col, hist in lines:
        total = sum(c for _, c in hist)
        xs, ys, acc = [], [], 0.0
        for lat, c in hist:
            acc += c
            xs.append(lat)
            ys.append(acc / total)
        lo, hi = min(lo, xs[0]), max(hi, xs[-1])
        ax.step(xs, ys, where="post", color=colors[col.env], linestyle=line_style(col), label=env_label(col))
    if lo > 0 and hi / lo >= 10:
        ax.set_xscale("log")
    metric = name[: -len(HIST_SUFFIX)]
    ax.set_xlabel(f"{metric.replace('_', ' ')} (\u00b5s)")
    ax.set_ylabel("fraction of I/Os or requests \u2264 latency")
    ax.set_ylim(0, 1.01)
    ax.set_title(f"{workload} {case}: {metric.replace('_', ' ')} CDF (all repetitions pooled)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    emulated_note(fig, [c for c, _ in lines])
    return fig
