"""Order effects balanced and said (analysis/order.py): a fixed run's rounds
of one-at-a-time cells in whole periods of the Williams rotation (the
arithmetic, StudyMeta.rounds_for, the size, the plan's line, the runner),
and the effect of a sample's place in its round, estimated and warned of in
its cells."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as st

from isobench.analysis.order import (
    Placed,
    balanced_rounds,
    first_flags,
    position_effect,
    position_text,
    rotation_period,
    rounds_in_periods,
)
from isobench.checks.preflight import study_size
from isobench.checks.resolution import compared_cells, resolution_lines
from isobench.core.metric import Metric
from isobench.host.hostinfo import HostInfo
from isobench.results.table import build_table
from isobench.run.schedule import williams_row
from isobench.store.db import Sample, Store
from isobench.study import StudyMeta, parse_study
from isobench.workloads import WORKLOADS
from isobench.workloads.base import Measurement
from isobench.workloads.compress import Compression
from synthetic_runs import fake_study
from unit.test_env_registry import fake, study_text  # noqa: F401 - the fake kind's fixture

HOST = HostInfo(cores=2, mem_bytes=24 * 2**30, disk_free_bytes=80 * 2**30)
ENVS = ["native", "docker-nat", "docker-host"]

# -- whole periods ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "envs,rounds,whole",
    [
        (2, 9, 10),  # period 2
        (2, 10, 10),
        (3, 10, 12),  # period 6: odd n takes 2n rows
        (3, 12, 12),  # already whole
        (3, 1, 6),
        (4, 10, 12),  # period 4
        (4, 8, 8),
        (5, 3, 10),  # period 10
        (5, 11, 20),
        (1, 7, 7),  # one environment: no rotation
    ],
)
def test_rounds_in_periods(envs, rounds, whole):
    assert rounds_in_periods(rounds, envs) == whole


@pytest.mark.parametrize(
    "envs,rounds,balanced",
    [(3, 10, 12), (3, 5, 6), (3, 4, 6), (3, 7, 7), (3, 8, 12), (5, 3, 3), (5, 7, 10), (4, 3, 4), (2, 2, 2)],
)
def test_whole_periods_at_most_half_again_as_long(envs, rounds, balanced):
    assert balanced_rounds(rounds, envs) == balanced


@pytest.mark.parametrize("n", range(1, 8))
def test_the_period_is_where_williams_rows_repeat(n):
    period = rotation_period(n)
    assert [williams_row(n, r) for r in range(period)] == [williams_row(n, r + period) for r in range(period)]
    if n > 2:  # no shorter period: each row before it is new
        assert len({tuple(williams_row(n, r)) for r in range(period)}) == period


def _study(body: str, envs: int = 3, reps: int = 10) -> object:
    names = "".join(f'[environments.e{i}]\npreset = "native"\n' for i in range(envs))
    text = f'[study]\nname = "o"\nrepetitions = {reps}\nbaseline = "e0"\n{body}\n{names}'
    return parse_study(
        text + '[workloads.compression]\nsize_mb = 1\n[workloads.fio]\nsize_mb = 16\ncases = ["seqread"]\n', "o.toml"
    )


def _rounds(study) -> dict[str, int]:
    n = len(study.environments)
    return {e.key: study.meta.rounds_for(WORKLOADS[e.workload](e.params, HOST), n) for e in study.workloads}


def test_one_at_a_time_cells_run_whole_periods_and_duets_do_not():
    assert _rounds(_study("")) == {"compression": 12, "fio": 12}
    # under a duet, compression runs as pairs (sharing their place); fio cannot duet
    assert _rounds(_study('schedule = "duet"')) == {"compression": 10, "fio": 12}
    assert _rounds(_study('order = "blocked"')) == {"compression": 10, "fio": 10}  # no rotation
    assert _rounds(_study("", envs=4, reps=9)) == {"compression": 12, "fio": 12}
    # 3 rounds of 5 environments (a 10-round period) would be over three times as long: kept
    assert _rounds(_study("", envs=5, reps=3)) == {"compression": 3, "fio": 3}
    assert _rounds(_study("", reps=7)) == {"compression": 7, "fio": 7}  # 12 is over half again as long
    # looks set the rounds: the budget's first block, the adaptive run's most
    assert _rounds(_study('budget = "30m"')) == {"compression": 10, "fio": 10}
    assert _rounds(_study('measure_for = "3m"')) == {"compression": 10, "fio": 10}
    adaptive = _study("").text.replace("repetitions = 10", 'repetitions = "auto"\nmax_repetitions = 16')
    assert _rounds(parse_study(adaptive, "o.toml")) == {"compression": 16, "fio": 16}


def test_the_size_and_the_plan_say_the_rounds_beyond_repetitions():
    study = _study('schedule = "duet"')
    size, plain = study_size(study, HOST), study_size(_study('schedule = "duet"\norder = "blocked"'), HOST)
    line = "fio: 12 rounds, not 10: whole periods of the 3-environment rotation (6 rounds each)"
    assert size.periods.line() == line and not plain.periods.keys
    assert size.samples - plain.samples == 2 * 3  # two more rounds of fio's three samples
    assert size.estimated_s > plain.estimated_s
    assert "11 rounds (13 for fio)" in size.describe()
    lines = resolution_lines(study, size, compared_cells(study, HOST), None, 0.0)
    assert lines[0] == line
    every = study_size(_study(""), HOST)  # every workload rounded: the size's own rounds are
    assert every.rounds == 13 and "13 rounds," in every.describe() and every.periods.keys == ("compression", "fio")


def test_the_runner_runs_each_cell_its_own_whole_periods(fake, tmp_path, monkeypatch):  # noqa: F811
    from isobench.run.runner import run_study

    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    values = iter(range(10_000))
    monkeypatch.setattr(
        Compression,
        "run",
        lambda self, case, env: Measurement(
            dict.fromkeys(("throughput_mbs", "real_s", "user_s", "sys_s"), 10.0 + 0.1 * (next(values) % 3))
        ),
    )
    text = study_text(
        '[environments.fake]\n[environments.b]\nkind = "fake"\n[environments.c]\nkind = "fake"\n'
        '[workloads.a]\nworkload = "compression"\nsize_mb = 1\n'
        '[workloads.z]\nworkload = "compression"\nsize_mb = 2\n'
    ).replace("repetitions = 1\n", "repetitions = 8\n")
    store = Store(str(tmp_path / "r.sqlite"))
    # z stands for a cell that runs one at a time beside duets: only it is rounded
    real = StudyMeta.rounds_for
    monkeypatch.setattr(StudyMeta, "rounds_for", lambda self, w, n: real(self, w, n) if w.params.size_mb == 2 else 8)
    run_id = run_study(parse_study(text, "f.toml"), store)
    rounds = {w: {r["round"] for r in store.samples(run_id) if r["workload"] == w} for w in ("a", "z")}
    assert rounds == {"a": set(range(8)), "z": set(range(12))}
    run = store.load_run(run_id)
    assert run.status == "complete"
    assert run.host_facts["schedule"]["periods"] == {
        "z/default": "12 rounds, not 8: whole periods of the 3-environment rotation (6 rounds each)"
    }


# -- the position effect -----------------------------------------------------------------


def _placed(rounds: int, first_pct: float, sd: float = 0.02, seed: int = 1, envs=ENVS) -> list[Placed]:
    """A cell run in Williams order: each environment's own level, its round's
    first sample ``first_pct`` apart, lognormal noise of ``sd``."""
    rng = np.random.default_rng(seed)
    level = {e: 100.0 * (1 + 0.05 * i) for i, e in enumerate(envs)}
    out, order = [], 0
    for r in range(rounds):
        for place, i in enumerate(williams_row(len(envs), r)):
            bump = 1 + first_pct / 100 if place == 0 else 1.0
            out.append(Placed(envs[i], r, order, level[envs[i]] * bump * float(np.exp(rng.normal(0, sd)))))
            order += 1
    return out


def test_first_flags_follow_the_order_within_each_round_not_the_list():
    samples = [Placed("a", 0, 5, 1.0), Placed("b", 0, 3, 1.0), Placed("a", 1, 7, 1.0), Placed("b", 1, 9, 1.0)]
    assert first_flags(samples) == [False, True, True, False]


def test_a_first_sample_effect_is_found_with_its_interval():
    e = position_effect(_placed(12, 20.0))
    assert e is not None and e.flagged and e.balanced
    assert e.low_pct < 20.0 < e.high_pct and 15 < e.pct < 25 and e.p < 1e-6
    assert e.rounds == 12 and e.firsts == {"native": 4, "docker-nat": 4, "docker-host": 4}
    none = position_effect(_placed(12, 0.0))
    assert none is not None and not none.flagged and none.low_pct < 0 < none.high_pct


def test_the_effect_is_the_two_sample_t_test_where_environment_is_one():
    """One environment with two samples a round: the model is Student's
    two-sample t-test of the first samples' logs against the later ones'."""
    rng = np.random.default_rng(7)
    samples = [
        Placed("a", r, 2 * r + k, float(np.exp(rng.normal(0.1 if k == 0 else 0, 0.05))))
        for r in range(8)
        for k in (0, 1)
    ]
    e = position_effect(samples)
    logs = np.log([s.value for s in samples])
    t = st.ttest_ind(logs[0::2], logs[1::2], equal_var=True)
    assert e is not None and e.p == pytest.approx(t.pvalue, rel=1e-9)
    assert e.pct == pytest.approx(np.expm1(logs[0::2].mean() - logs[1::2].mean()) * 100)


def test_no_effect_where_position_cannot_be_told_from_environment():
    blocked = [Placed(e, r, 3 * r + i, 1.0 + 0.01 * ((r * 7 + i) % 5)) for r in range(10) for i, e in enumerate(ENVS)]
    assert position_effect(blocked) is None  # the first environment is always first
    assert position_effect(_placed(2, 20.0, envs=["a", "b"])) is None  # 4 samples, 3 parameters: 1 df
    assert position_effect([*_placed(12, 20.0)[:-1], Placed("native", 11, 99, 0.0)]) is None  # no logarithm


def test_the_warning_says_whether_the_rounds_were_balanced():
    balanced = position_effect(_placed(12, 20.0))
    assert balanced is not None
    assert position_text(balanced, 3).endswith("; rounds are balanced: each environment was first in 4 of the 12")
    unbalanced = position_effect(_placed(10, 20.0))
    assert unbalanced is not None and not unbalanced.balanced
    text = position_text(unbalanced, 3)
    assert text.startswith("position: a round's first sample read +")
    assert "; not balanced: 10 rounds of a 6-round period (first: native 3, docker-nat 3, docker-host 4)" in text


def _store_run(path: str, first_pct: float, sd: float = 0.03, duet: bool = False, primary: bool = False) -> str:
    """fio-style cells one sample at a time in Williams order (a duet's
    samples marked with their partner when ``duet``)."""
    store = Store(path)
    store.create_run("r-pos", fake_study(ENVS), {"cores": 2})
    store.define_metrics("r-pos", "fio", "seqread", [Metric("bw_mbs", "MB/s", True, primary=primary)])
    for s in _placed(10, first_pct, sd):
        extra = {"duet": {"partner": "native" if s.env != "native" else "docker-nat", "cpus": "0"}} if duet else {}
        at = f"2026-11-27T10:{s.round:02d}:00+0000"
        store.add_sample(
            Sample("r-pos", s.env, "fio", "seqread", s.round, False, "ok", at, 3.0, {"bw_mbs": s.value}, extra)
        )
    store.finish_run("r-pos", "complete")
    store.close()
    return "r-pos"


def _warnings(run) -> list[str]:
    return [w for row in build_table(run).rows for c in row.cells for w in c.warnings if w.startswith("position")]


def test_every_cell_of_the_case_warns_of_a_position_effect(tmp_path):
    path = str(tmp_path / "s.sqlite")
    run = Store(path).load_run(_store_run(path, 20.0))
    said = _warnings(run)
    assert len(said) == 3 and len(set(said)) == 1  # one text in each environment's cell
    assert "not balanced: 10 rounds of a 6-round period" in said[0]
    quiet = str(tmp_path / "q.sqlite")
    assert _warnings(Store(quiet).load_run(_store_run(quiet, 0.0, sd=0.01))) == []


def test_a_duets_cells_are_not_judged_by_position(tmp_path):
    path = str(tmp_path / "s.sqlite")
    assert _warnings(Store(path).load_run(_store_run(path, 20.0, duet=True))) == []


def test_the_answer_prints_the_position_effect_of_a_cell_run_one_at_a_time_large_or_not(tmp_path):
    from isobench.results.schedule import position_lines

    for first_pct, sd in ((0.0, 0.01), (20.0, 0.03)):
        path = str(tmp_path / f"s{first_pct}.sqlite")
        run = Store(path).load_run(_store_run(path, first_pct, sd, primary=True))
        (line,) = position_lines(run, ["fio/seqread"])
        assert line.startswith("fio/seqread bw_mbs: a round's first sample read ") and "not balanced" in line
        assert position_lines(run, ["compression/default"]) == []


def test_a_command_its_warm_up_decides_counts_as_the_duet_it_mostly_becomes():
    """A user's command under a duet is decided from its warm-up, after the
    rounds are set: `auto` and `true` run as pairs, not in whole periods
    (a one-thread sysbench ran 24 rounds of 20 before this); `false` runs
    one sample at a time, in whole periods."""
    body = '[workloads.cmd]\ncommand = ["true"]\nduet = {}\n'
    for duet, rounds in (('"auto"', 10), ("true", 10), ("false", 12)):
        study = parse_study(_study('schedule = "duet"').text + body.format(duet), "o.toml")
        assert _rounds(study)["cmd"] == rounds, duet
