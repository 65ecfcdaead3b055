"""validate --require-resolution PCT agrees with the gate it precedes
(issue 55 item 9): a copy of the quick study said rc 0 under `validate
--strict`, then `compare --require-resolution 5` called its run blind (fio
needed about 461 rounds)."""

import math

import pytest
from click.testing import CliRunner

from isobench.checks.resolution import expected_half_width_pct
from isobench.cli.main import main
from synthetic_runs import fake_pilot


def test_the_expected_half_width_of_a_paired_interval():
    # t(0.975, 9) = 2.262: 2.262 x 1% x sqrt(1/10) = 0.715% in log, one run; sqrt(2) wider between two
    assert expected_half_width_pct(0.01, 10, 0.05) == pytest.approx(math.expm1(0.007154) * 100, rel=1e-3)
    assert expected_half_width_pct(0.01, 10, 0.05, runs=2) == pytest.approx(math.expm1(0.010117) * 100, rel=1e-3)
    assert expected_half_width_pct(0.01, 1, 0.05) == math.inf


@pytest.mark.parametrize(("io", "code"), [(0.02, 0), (0.34, 4)])
def test_validate_exits_4_where_the_gate_would_call_the_study_blind(monkeypatch, tmp_path, io, code):
    import isobench.checks.noisepilot as pilot

    monkeypatch.setattr(pilot, "cached", lambda *a, **k: fake_pilot(0.012, io))
    args = ["validate", "quick", "--require-resolution", "5"]
    r = CliRunner().invoke(main, args, env={"ISOBENCH_STORE": str(tmp_path / "s.sqlite")})
    assert r.exit_code == code, r.output
    if code:
        assert "expected wider than ±5% here: I/O-bound fio" in " ".join(r.output.split())
        # the --strict rule alone lets it through: some cell resolves
        r = CliRunner().invoke(main, ["validate", "quick", "--strict"], env={"ISOBENCH_STORE": str(tmp_path / "s")})
        assert r.exit_code == 0, r.output
