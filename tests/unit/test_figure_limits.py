"""The per-operation p90 figure picks each operation's worst-instance p90
(or the pooled one) in ms, never a throughput, never the all-ops p90."""

from types import SimpleNamespace

from isobench.report.figures.limits import p90_limits_figure, p90_metrics
from isobench.report.sweeps import Sweep


def row(unit: str, higher: bool):
    return SimpleNamespace(key=SimpleNamespace(unit=unit, higher_is_better=higher))


def test_picks_worst_instance_p90_per_operation():
    curves = {
        "orders_per_min": [(1.0, row("orders/min", True))],
        "p90_ms": [(1.0, row("ms", False))],
        "browse_p90_ms": [(1.0, row("ms", False))],
        "browse_p90_worst_ms": [(1.0, row("ms", False))],
        "login_p90_ms": [(1.0, row("ms", False))],
        "login_p99_ms": [(1.0, row("ms", False))],
        "x_p90_ms": [(1.0, row("s", False))],
    }
    sweep = Sweep("webstore", "", "instances", curves)
    assert p90_metrics(sweep) == {"browse": "browse_p90_worst_ms", "login": "login_p90_ms"}


def test_no_p90_no_figure():
    sweep = Sweep("redis", "", "clients", {"rps": [(1.0, row("req/s", True))]})
    assert p90_limits_figure(None, sweep) is None


def test_the_limit_lines_are_the_workloads_own():
    """The lines come from the pass_<L> metrics the workload emitted (its
    limits_ms), not from constants in the report."""
    from isobench.core.metric import limit_metric, parse_limit_metric
    from isobench.report.figures.limits import limits_of

    assert limit_metric(250.0) == "pass_250" and limit_metric(120.5) == "pass_120.5"
    assert parse_limit_metric("pass_250") == 250.0 and parse_limit_metric("pass_120.5") == 120.5
    assert parse_limit_metric("pass_rate") is None and parse_limit_metric("p90_ms") is None
    curves = {
        "pass_500": [(1.0, row("", True))],
        "pass_120.5": [(1.0, row("", True))],
        "browse_p90_ms": [(1.0, row("ms", False))],
    }
    assert limits_of(Sweep("webstore", "", "instances", curves)) == [120.5, 500.0]
    assert limits_of(Sweep("redis", "", "clients", {"rps": [(1.0, row("req/s", True))]})) == []


def test_webstore_limits_are_a_parameter():
    import pytest
    from pydantic import ValidationError

    from isobench.workloads.webstore import WebstoreParams

    assert WebstoreParams().limits_ms == (250.0, 500.0)  # CloudStone's
    assert WebstoreParams(limits_ms=(400.0, 100.0)).limits_ms == (100.0, 400.0)
    for bad in ((), (0.0,), (1.0, 1.0), (1.0, 2.0, 3.0, 4.0, 5.0), (70_000.0,)):
        with pytest.raises(ValidationError, match="limits_ms"):
            WebstoreParams(limits_ms=bad)
