"""The per-operation p90 figure picks each operation's worst-instance p90
(or the pooled one) in ms, never a throughput, never the all-ops p90."""

from types import SimpleNamespace

from isobench.report.figures.limits import p90_limits_figure, p90_metrics
from isobench.report.sweeps import Sweep


def row(unit: str, higher: bool):
    return SimpleNamespace(key=SimpleNamespace(unit=unit, higher_is_better=higher))


def test_picks_worst_instance_p90_per_operation():
    curves = {"orders_per_min": [(1.0, row("orders/min", True))],
              "p90_ms": [(1.0, row("ms", False))],
              "browse_p90_ms": [(1.0, row("ms", False))],
              "browse_p90_worst_ms": [(1.0, row("ms", False))],
              "login_p90_ms": [(1.0, row("ms", False))],
              "login_p99_ms": [(1.0, row("ms", False))],
              "x_p90_ms": [(1.0, row("s", False))]}
    sweep = Sweep("webstore", "", "instances", curves)
    assert p90_metrics(sweep) == {"browse": "browse_p90_worst_ms", "login": "login_p90_ms"}


def test_no_p90_no_figure():
    sweep = Sweep("redis", "", "clients", {"rps": [(1.0, row("req/s", True))]})
    assert p90_limits_figure(None, sweep) is None
