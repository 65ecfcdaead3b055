"""Table I's verdicts as a user sees them: the paired test when rounds were
interleaved, Welch on logs otherwise, warnings beside the cell (drift,
validity, not converged), median and range for times, the figure's bounded
log axis, and adaptive repetitions run by the runner."""

import json

import pytest

from isobench.analysis.stats import compare_cell
from isobench.analysis.verdicts import adjust
from isobench.core.metric import LATENCY
from isobench.host.hostinfo import HostInfo, parse_cache_size
from isobench.report import compare_render
from isobench.report.figures.normalised import AXIS_LIMIT, axis_limits, performance
from isobench.report.markdown import render_markdown
from isobench.results.analysis import interval_text as change_text
from isobench.results.model import MetricKey, RunData
from isobench.results.table import WARNED, build_table
from isobench.study import StudyError, parse_study
from isobench.workloads.base import Measurement
from isobench.workloads.compress import Compression
from isobench.workloads.hpcc import Hpcc, stream_validity
from unit.test_env_registry import fake, study_text  # noqa: F401 - the fake kind's fixture

TPUT = MetricKey("compress", "default", "throughput_mbs", "MB/s", True, "throughput")
LAT = MetricKey("netlat", "tcp", "mean_us", "µs", False, LATENCY)
# A host whose speed drifts from round to round: both environments move together.
DRIFT = [100.0, 80.0, 120.0, 90.0, 110.0, 70.0]


def run_of(values: dict, study: str = '[study]\nname = "s"\n', rounds: bool = True) -> RunData:
    envs = ["native", "docker"]
    run = RunData(
        "r",
        "s",
        "",
        None,
        "complete",
        {},
        study,
        "",
        "native",
        envs,
        {e: {} for e in envs},
        sorted({k for k, _ in values}, key=lambda k: k.metric),
        dict(values),
    )
    if rounds:
        run.rounds = {k: list(range(len(v))) for k, v in values.items()}
    return run


def cell(table, key, env):
    return next(c for r in table.rows if r.key == key for c in r.cells if c.env == env)


def test_interleaved_rounds_are_paired_and_drift_cancels():
    docker = [v * 0.97 for v in DRIFT]  # 3% slower in every round
    t = build_table(run_of({(TPUT, "native"): DRIFT, (TPUT, "docker"): docker}))
    v = cell(t, TPUT, "docker").verdict
    assert v.effect.test == "paired" and v.changed and v.pct == pytest.approx(-3.0)
    assert "paired t-test on the per-round log ratios" in "\n".join(t.legend)


def test_the_same_values_unpaired_are_inconclusive():
    docker = [v * 0.97 for v in DRIFT]
    for run in (
        run_of({(TPUT, "native"): DRIFT, (TPUT, "docker"): docker}, rounds=False),
        run_of({(TPUT, "native"): DRIFT, (TPUT, "docker"): docker}, study='[study]\nname = "s"\norder = "blocked"\n'),
    ):
        v = cell(build_table(run), TPUT, "docker").verdict
        assert v.effect.test == "welch-log" and v.verdict == "inconclusive"
        assert v.rounds_needed > len(DRIFT)
        assert "rounds would resolve" in render_markdown(run)


def test_tolerance_from_the_study_decides_equivalence():
    docker = [v * 0.99 for v in DRIFT]
    values = {(TPUT, "native"): DRIFT, (TPUT, "docker"): [d * (1 + 0.002 * (-1) ** i) for i, d in enumerate(docker)]}
    wide = cell(build_table(run_of(values, '[study]\nname = "s"\ntolerance_pct = 5\n')), TPUT, "docker").verdict
    assert wide.verdict in ("changed", "equivalent")
    narrow = cell(
        build_table(run_of(values, '[study]\nname = "s"\ntolerance_pct = 0.1\nnoise_floor_pct = { compress = 2 }\n')),
        TPUT,
        "docker",
    ).verdict
    assert narrow.verdict == "equivalent" and narrow.margin_pct == 2  # the floor holds the change back


def test_drift_and_validity_warnings_beside_the_cell():
    rising = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0]
    run = run_of({(TPUT, "native"): DRIFT, (TPUT, "docker"): rising})
    run.validity[("compress", "default", "docker", "throughput_mbs")] = ["a 0.05 s run is too short"]
    t = build_table(run)
    c = cell(t, TPUT, "docker")
    assert c.text.endswith(WARNED) and any("Spearman" in w for w in c.warnings)
    assert "a 0.05 s run is too short" in c.warnings
    md = render_markdown(run)
    assert "## Warnings" in md and "compress throughput\\_mbs (MB/s) \u2191 on docker: a 0.05 s run" in md
    assert not cell(t, TPUT, "native").warnings  # DRIFT goes up and down: no monotonic trend


def test_times_show_median_and_range():
    t = build_table(run_of({(LAT, "native"): [10.0, 12.0, 11.0], (LAT, "docker"): [20.0, 26.0, 21.0]}))
    assert cell(t, LAT, "docker").text.endswith("; median 21 (20..26)")
    assert "median" not in build_table(run_of({(TPUT, "native"): DRIFT, (TPUT, "docker"): DRIFT})).rows[0].cells[1].text
    # Times declared without a role are known by their unit; other units are not times.
    for unit, shown in (
        ("\u00b5s", True),
        ("us", True),
        ("ms", True),
        ("s", True),
        ("ns", True),
        ("MB/s", False),
        ("CPU-s/GB", False),
    ):
        key = MetricKey("fio", "randread", "read_clat_p99_us", unit, False, "")
        text = cell(
            build_table(run_of({(key, "native"): [10.0, 12.0, 11.0], (key, "docker"): [20.0, 26.0, 21.0]})),
            key,
            "docker",
        ).text
        assert text.endswith("; median 21 (20..26)") == shown, unit


def test_a_lower_bound_near_zero_never_reads_minus_100_percent():
    # Two paired rounds among 99 cells: level 1 - 0.05/99 at df = 1.
    wild = compare_cell([100, 60], [50, 100], True, pairs=[(100, 50), (60, 100)])
    calm = compare_cell([100, 101, 99], [100, 100.5, 99.5], True)
    v = adjust([wild] + [calm] * 98)
    assert change_text(v[0]) == "+9.5% [<\u221299.9%, >+999%]"
    assert compare_render.interval_text(v[0]) == change_text(v[0])  # compare: terminal, Markdown, HTML
    assert change_text(v[1]) == "\u00b10.0% [\u221210.3%, +11.5%]"


def test_a_wild_interval_cannot_squash_the_figure():
    values = {(TPUT, "native"): [100.0, 101.0, 99.0], (TPUT, "docker"): [1.0, 90.0, 300.0]}
    v = cell(build_table(run_of(values)), TPUT, "docker")
    value, lo, hi = performance(v, True)
    assert lo < 1 / AXIS_LIMIT or hi > AXIS_LIMIT  # this interval is wild ...
    left, right = axis_limits([(value, lo, hi), (0.97, 0.95, 0.99)])
    assert 1 / AXIS_LIMIT <= left < 0.95 and 1 < right <= AXIS_LIMIT  # ... the axis is not
    # a latency ratio is inverted, interval and all
    t = build_table(run_of({(LAT, "native"): [10.0, 10.5, 9.5], (LAT, "docker"): [20.0, 21.0, 19.0]}))
    perf, plo, phi = performance(cell(t, LAT, "docker"), False)
    assert perf == pytest.approx(0.5, abs=0.01) and plo < perf < phi < 1


def test_stream_in_cache_and_too_short_runs_are_declared_invalid():
    assert stream_validity({"STREAM_VectorSize": 666666}, 32 * 2**20).startswith("STREAM measures cache, not memory")
    assert stream_validity({"STREAM_VectorSize": 20_000_000}, 32 * 2**20) == ""
    assert stream_validity({}, 32 * 2**20) == "" and stream_validity({"STREAM_VectorSize": 1}, 0) == ""
    hpcc = Hpcc(Hpcc.Params(), HostInfo(2, 2**30, 2**30, llc_bytes=32 * 2**20))
    notes = hpcc.validity("default", Measurement({}, extra={"summary": {"STREAM_VectorSize": 666666}}))
    assert sorted(notes) == ["stream_add_gbs", "stream_copy_gbs", "stream_scale_gbs", "stream_triad_gbs"]
    w = Compression(Compression.Params(size_mb=1), HostInfo(2, 2**30, 2**30))
    assert set(w.validity("default", Measurement({"real_s": 0.2}))) == {"throughput_mbs", "real_s"}
    assert w.validity("default", Measurement({"real_s": 3.0})) == {}
    assert parse_cache_size("32768K") == 32 * 2**20 and parse_cache_size("1M") == 2**20


@pytest.mark.parametrize(
    "body,message",
    [
        ('repetitions = "sometimes"', "study.repetitions"),
        ("repetitions = 0", "from 1 to 1000"),
        ('repetitions = "auto"\nmin_repetitions = 5\nmax_repetitions = 3', "max_repetitions (3) must be at least"),
        ('repetitions = "auto"\ntarget_ci_pct = 0', "study.target_ci_pct"),
        ("tolerance_pct = 150", "study.tolerance_pct"),
        ("noise_floor_pct = { nope = 2 }", "study.noise_floor_pct.nope: no such workload"),
        ("noise_floor_pct = { startup = 200 }", "a noise floor is a percentage"),
    ],
)
def test_bad_statistics_settings_are_one_line(body, message):
    text = f'[study]\nname = "s"\n{body}\n[environments.native]\n[workloads.startup]\n'
    with pytest.raises(StudyError) as err:
        parse_study(text, "s.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("target,rounds", [(10.0, 2), (1e-9, 4)])
def test_adaptive_repetitions_stop_when_converged_or_at_the_cap(
    fake,
    tmp_path,
    monkeypatch,  # noqa: F811
    target,
    rounds,
):
    from isobench.run.runner import run_study
    from isobench.store.db import Store

    # The runner's loop is under test, not pixz: values 1% apart, so a 10%
    # target is met at the first look and a 1e-9% one never.
    calls = iter(range(100))
    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    monkeypatch.setattr(
        Compression,
        "run",
        lambda self, case, env: Measurement(
            dict.fromkeys(("throughput_mbs", "real_s", "user_s", "sys_s"), 10.0 + 0.1 * (next(calls) % 2))
        ),
    )
    text = study_text("[environments.fake]\n[workloads.compression]\nsize_mb = 1\n")
    text = text.replace(
        "repetitions = 1\n",
        f'repetitions = "auto"\nmin_repetitions = 2\nmax_repetitions = 4\ntarget_ci_pct = {target}\n',
    )
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(parse_study(text, "f.toml"), store)
    measured = {r["round"] for r in store.samples(run_id) if not r["warmup"]}
    assert measured == set(range(rounds))
    run = store.load_run(run_id)
    looks = run.host_facts["adaptive"]["all"]
    assert looks[-1]["rounds"] == rounds and looks[-1]["stop"]
    legend = "\n".join(build_table(run).legend)
    assert "alpha = 0.05/2 for the 2 planned looks" in legend and f"Stopped after {rounds} rounds" in legend
    not_converged = [
        w for r in build_table(run).rows for c in r.cells for w in c.warnings if w.startswith("not converged")
    ]
    assert bool(not_converged) == (rounds == 4)
    assert all(json.loads(s["vals"])["real_s"] >= 10 for s in store.samples(run_id))
