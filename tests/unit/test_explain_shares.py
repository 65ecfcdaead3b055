"""The attribution arithmetic of `isobench explain` (analysis/shares.py): each
setting's part of a gap as a log ratio with its interval, corrected over the
settings; the unexplained part; whether the parts add up (the interaction);
and the parts, the unexplained part and the whole adding up exactly as log
ratios."""

import math

import numpy as np
import pytest

from isobench.analysis.shares import common_rounds, contrast, shares
from isobench.analysis.verdicts import adjust

ROUNDS = 8


def per_round(mean: float, seed: int, sd: float = 0.01) -> dict[int, float]:
    """A log ratio to the baseline for each round: ``mean`` plus noise."""
    rng = np.random.default_rng(seed)
    return {r: mean + float(rng.normal(0, sd)) for r in range(ROUNDS)}


def storage_and_network(storage: float = -0.30, network: float = -0.05, both: float = 0.0) -> dict:
    """An environment whose gap is a storage cost plus a network cost
    (``both``: more that only the two together cost), and its variants."""
    return {
        "docker-nat": per_round(storage + network + both, 1),
        "storage-back": per_round(network, 2),
        "network-back": per_round(storage, 3),
        "all-back": per_round(0.0, 4),
    }


PARTS = [("storage", "storage-back"), ("network", "network-back")]


def test_each_setting_gets_its_own_part_and_the_parts_add_up():
    found = shares(storage_and_network(), "docker-nat", PARTS, "all-back", higher_is_better=True)
    part = dict(found.parts)
    assert part["storage"].effect.log_ratio == pytest.approx(-0.30, abs=0.02)
    assert part["network"].effect.log_ratio == pytest.approx(-0.05, abs=0.02)
    assert part["storage"].changed and part["network"].changed  # both intervals exclude no change
    assert part["storage"].high < 1 and part["network"].high < 1
    # nothing is left: the unexplained part and the interaction hold no change
    for v in (found.unexplained, found.interaction, found.residual):
        assert v is not None and v.low <= 1.0 <= v.high
    assert found.adds_up and found.rounds == ROUNDS
    assert found.explained == pytest.approx(1.0, abs=0.1) and found.explained_told == found.explained
    # as log ratios the whole is exactly the parts plus the unexplained part
    logs = [v.effect.log_ratio for _, v in found.parts]
    assert found.whole.effect.log_ratio == pytest.approx(sum(logs) + found.unexplained.effect.log_ratio, abs=1e-12)
    # so the ratios multiply
    product = math.prod(v.effect.ratio for _, v in found.parts) * found.unexplained.effect.ratio
    assert found.whole.effect.ratio == pytest.approx(product, rel=1e-12)


def test_settings_that_cost_only_together_do_not_add_up_and_say_so():
    # the gap appears only when both settings are there: moving either one
    # back takes all of it away, so the parts sum to twice the whole
    d = {
        "docker-nat": per_round(-0.30, 1),
        "storage-back": per_round(0.0, 2),
        "network-back": per_round(0.0, 3),
        "all-back": per_round(0.0, 4),
    }
    found = shares(d, "docker-nat", PARTS, "all-back", higher_is_better=True)
    assert not found.adds_up
    assert found.interaction is not None and found.interaction.low > 1.0  # +0.30 beyond the parts' -0.60
    assert found.interaction.effect.log_ratio == pytest.approx(0.30, abs=0.02)
    assert found.unexplained.low > 1.0  # whole minus the sum: +0.30
    assert found.explained == pytest.approx(2.0, abs=0.1)
    assert found.strongest(2) == ["storage", "network"] or found.strongest(2) == ["network", "storage"]


def test_what_no_setting_moves_is_the_residual():
    # every setting moved back, the environment still costs 10%: its kind's own
    d = {**storage_and_network(-0.20, -0.05), "all-back": per_round(-0.10, 4)}
    d["docker-nat"] = per_round(-0.35, 1)
    d["storage-back"] = per_round(-0.15, 2)
    d["network-back"] = per_round(-0.30, 3)
    found = shares(d, "docker-nat", PARTS, "all-back", higher_is_better=True)
    assert found.adds_up  # the parts add up ...
    assert found.residual is not None and found.residual.high < 1.0  # ... and something is left beyond them
    assert found.unexplained.effect.log_ratio == pytest.approx(-0.10, abs=0.02)
    assert found.unexplained.high < 1.0


def test_one_setting_has_no_interaction_to_check():
    d = {"docker-nat": per_round(-0.20, 1), "cpus-back": per_round(0.0, 2)}
    found = shares(d, "docker-nat", [("cpus", "cpus-back")], None, higher_is_better=True)
    assert found.interaction is None and found.residual is None and found.adds_up
    ((name, part),) = found.parts
    assert name == "cpus" and part.effect.log_ratio == pytest.approx(-0.20, abs=0.02)
    assert found.unexplained.low <= 1.0 <= found.unexplained.high
    assert found.explained == pytest.approx(1.0, abs=0.1)


def test_the_parts_are_corrected_over_the_settings():
    d = storage_and_network(-0.30, -0.004)
    found = shares(d, "docker-nat", PARTS, "all-back", higher_is_better=True)
    parts = [v for _, v in found.parts]
    assert {v.m for v in parts} == {2}  # one Benjamini-Hochberg family: the settings
    # the same tests, corrected together, are what each part says
    alone = [contrast([d["docker-nat"][r] - d[v][r] for r in range(ROUNDS)], True) for _, v in PARTS]
    again = adjust([a.effect for a in alone])
    for got, want in zip(parts, again):
        assert (got.low, got.high, got.p_adjusted) == pytest.approx((want.low, want.high, want.p_adjusted))
    # one rejection of two: the interval is at 1 - 1 x 0.05 / 2, wider than a lone cell's 95%
    assert parts[0].level == pytest.approx(0.975) and alone[0].level == pytest.approx(0.95)
    # the share the settings told apart from no change hold: the storage part's alone
    assert found.explained_told == pytest.approx(parts[0].effect.log_ratio / found.whole.effect.log_ratio)


def test_only_rounds_every_environment_holds_are_used():
    d = storage_and_network()
    del d["network-back"][0], d["all-back"][7]
    assert common_rounds(d, list(d)) == list(range(1, 7))
    found = shares(d, "docker-nat", PARTS, "all-back", higher_is_better=True)
    assert found.rounds == 6
    one = {env: {0: values[0]} for env, values in storage_and_network().items()}
    found = shares(one, "docker-nat", PARTS, "all-back", higher_is_better=True)
    assert found.rounds == 1 and not found.whole.effect.tested and found.adds_up
    assert math.isnan(found.unexplained.low)


def test_no_gap_has_no_share_to_name():
    d = {"docker-nat": {r: 0.0 for r in range(4)}, "cpus-back": {r: 0.0 for r in range(4)}}
    assert math.isnan(shares(d, "docker-nat", [("cpus", "cpus-back")], None, True).explained)
