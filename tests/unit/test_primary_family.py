"""Primary metrics (docs/statistics.md, families): a run that stores its
primaries is judged as two families, the primary cells (their correction
counts only them) and the descriptive rest (its own correction, marked in
the rows and the legend); a run stored before primaries keeps one family.
Compare and its gate, adaptive stopping and the study's override use the
same stored flags."""

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from isobench.cli.main import main
from isobench.report.compare_render import render_markdown as compare_markdown
from isobench.report.markdown import render_markdown
from isobench.results.analysis import DESCRIPTIVE, PRIMARY, Question, judge_cells, pairs, settings_of
from isobench.results.compare import compare_runs
from isobench.results.model import MetricKey, RunData
from isobench.results.primary import primary_family, primary_keys, stores_primaries
from isobench.results.table import DESCRIPTIVE_MARK, build_table
from isobench.store.db import Store
from isobench.store.transfer import TransferError, export_run, import_run
from isobench.study import StudyError, parse_study
from synthetic_runs import DECLARED, Synthetic, write_run
from unit.test_env_registry import fake, study_text  # noqa: F401 - the fake kind's fixture
from workload_params import default_params

ALPHA = 0.05


@pytest.fixture
def store(tmp_path):
    s = Store(str(tmp_path / "r.sqlite"))
    yield s
    s.close()


def _run(store, run_id, flagged=True, **kw):
    write_run(store, Synthetic(run_id, primaries=DECLARED if flagged else (), **kw))
    return store.load_run(run_id)


def _questions(run: RunData, keys) -> dict[tuple[MetricKey, str], Question]:
    """Every non-baseline cell of KEYS with values on both sides, paired by round (as Table I asks)."""
    out = {}
    for key in keys:
        base = run.values.get((key, run.baseline))
        for env in run.environments:
            vals = run.values.get((key, env))
            if env != run.baseline and vals and base:
                out[(key, env)] = Question(key, vals, base, pairs(run, key, env, run.baseline))
    return out


def _judged_alone(run: RunData, keys) -> dict:
    """The verdicts of KEYS' cells corrected among themselves, nothing else asked."""
    asked = _questions(run, keys)
    return dict(zip(asked, judge_cells(list(asked.values()), settings_of(run))))


def _verdicts(table, family=None):
    return {
        (r.key, c.env): c.verdict
        for r in table.rows
        if family in (None, r.family)
        for c in r.cells
        if c.verdict is not None
    }


# -- Table I -----------------------------------------------------------------------------


def test_the_primaries_are_one_family_corrected_for_the_primary_cells_only(store):
    run = _run(store, "flagged", repetitions=3)
    assert stores_primaries(run)
    primaries = primary_keys(run)
    assert {(k.workload, k.metric) for k in primaries} == set(DECLARED)
    expected = _judged_alone(run, primaries)
    got = _verdicts(build_table(run), PRIMARY)
    assert got.keys() == expected.keys() and len(got) == 30  # 10 primary rows x 3 compared environments
    m = len(expected)
    r = sum(v.rejected for v in got.values())
    for cell, v in got.items():
        assert v.m == m == 30
        assert v.level == pytest.approx(1 - max(r, 1) * ALPHA / m)
        assert (v.verdict, v.low, v.high) == (expected[cell].verdict, expected[cell].low, expected[cell].high)


def test_the_primaries_intervals_narrow_against_one_family_over_every_cell(store):
    flagged = build_table(_run(store, "flagged", repetitions=3))
    one = build_table(_run(store, "one", flagged=False, repetitions=3))  # the same samples (same seed)
    before = {(k.workload, k.case, k.metric, env): v for (k, env), v in _verdicts(one).items()}
    after = {(k.workload, k.case, k.metric, env): v for (k, env), v in _verdicts(flagged, PRIMARY).items()}
    assert {v.m for v in before.values()} == {69} and {v.m for v in after.values()} == {30}
    for cell, v in after.items():
        assert v.effect.p == before[cell].effect.p  # the same samples, the same test
        assert v.level < before[cell].level
        assert v.high / v.low < before[cell].high / before[cell].low  # narrower on the ratio scale


def test_descriptive_rows_are_their_own_family_and_labelled(store):
    run = _run(store, "flagged", repetitions=3)
    table = build_table(run)
    expected = _judged_alone(run, [k for k in run.metrics if k not in set(primary_keys(run))])
    got = _verdicts(table, DESCRIPTIVE)
    assert got.keys() == expected.keys() and len(got) == 39 and {v.m for v in got.values()} == {39}
    assert all(
        (v.verdict, v.low, v.high) == (expected[c].verdict, expected[c].low, expected[c].high) for c, v in got.items()
    )
    for row in table.rows:
        assert row.family in (PRIMARY, DESCRIPTIVE)
        assert row.label.endswith(f" {DESCRIPTIVE_MARK}") == (row.family == DESCRIPTIVE), row.label
    legend = "\n".join(table.legend)
    assert f"{DESCRIPTIVE_MARK} descriptive: every other metric, corrected in a family of its own" in legend
    level_p, level_d = (next(iter(_verdicts(table, f).values())).level for f in (PRIMARY, DESCRIPTIVE))
    assert (
        f"at {level_p * 100:.4g}% for the 30 primary cells, at {level_d * 100:.4g}% for the 39 descriptive "
        f"cells marked {DESCRIPTIVE_MARK}"
    ) in legend
    assert "corrected for the" not in legend  # the one-family wording is gone
    md = render_markdown(run)
    assert "| real\\_s (s) \u2193 (d) |" in md and "| throughput\\_mbs (MB/s) \u2191 |" in md
    assert "(30 primary cells corrected together)" in md  # the answer names the primaries' family


def test_a_run_stored_before_primaries_is_one_family_as_before(store):
    run = _run(store, "old", flagged=False, repetitions=3)
    assert not stores_primaries(run) and not any(k.primary for k in run.metrics)
    table = build_table(run)
    expected = _judged_alone(run, run.metrics)
    got = _verdicts(table)
    assert {r.family for r in table.rows} == {""} and got.keys() == expected.keys() and len(got) == 69
    assert all(
        (v.verdict, v.low, v.high) == (expected[c].verdict, expected[c].low, expected[c].high) for c, v in got.items()
    )
    legend = "\n".join(table.legend)
    assert "corrected for the 69 cells compared" in legend and "over the table" in legend
    assert DESCRIPTIVE_MARK not in render_markdown(run)


def test_the_stored_flags_decide_and_a_case_without_any_is_descriptive():
    keys = [
        MetricKey("n", "tcp", "mean_us", "us", False, "latency", primary=True),
        MetricKey("n", "tcp", "p99_us", "us", False, "latency"),
        MetricKey("c", "default", "mbs", "MB/s", True, "throughput"),  # a level the study's list left out
        MetricKey("c", "default", "real_s", "s", False, "duration"),
    ]
    run = RunData("r", "s", "", None, "complete", {}, "", "", "a", ["a"], {}, keys)
    assert stores_primaries(run)
    assert [k.metric for k in primary_keys(run)] == ["mean_us"]
    unflagged = RunData(
        "r",
        "s",
        "",
        None,
        "complete",
        {},
        "",
        "",
        "a",
        ["a"],
        {},
        [MetricKey(k.workload, k.case, k.metric, k.unit, k.higher_is_better, k.role) for k in keys],
    )
    assert not stores_primaries(unflagged)
    assert [k.metric for k in primary_keys(unflagged)] == ["mean_us", "p99_us", "mbs"]  # by role, as before


# -- compare and its gate -------------------------------------------------------------------


def test_compare_judges_two_families_and_gates_on_the_primaries(store, tmp_path):
    a = _run(store, "a")
    b_desc = _run(store, "b-desc", inject={("docker-nat", "redis", "latency_mean_us"): 1.5})
    b_prim = _run(store, "b-prim", inject={("docker-nat", "fio", "iops"): 0.8})
    result = compare_runs(a, b_desc)
    assert result.split and {c.family for c in result.cells} == {PRIMARY, DESCRIPTIVE}
    worse = [c for c in result.cells if c.flagged and c.key.metric == "latency_mean_us"]
    assert worse and all(c.family == DESCRIPTIVE and c.verdict.direction == "worse" for c in worse)
    assert result.regressions(5) == []  # a descriptive metric never fails the gate
    n_primary = sum(c.family == PRIMARY for c in result.cells)
    assert {c.verdict.m for c in result.cells if c.family == PRIMARY} == {n_primary}
    assert result.summary_line().startswith(f"0 of {n_primary} primary cells changed")
    assert "descriptive cells (their own family" in result.summary_line()
    md = compare_markdown(result)
    assert "latency\\_mean\\_us (µs) \u2193 (d)" in md and "(d) descriptive" in md
    assert [c.name for c in compare_runs(a, b_prim).regressions(5)] == ["fio/randread iops on docker-nat"]
    invoke = CliRunner().invoke
    path = store.path
    assert invoke(main, ["compare", "a", "b-desc", "--store", path, "--fail-on-change", "5"]).exit_code == 0
    assert invoke(main, ["compare", "a", "b-prim", "--store", path, "--fail-on-change", "5"]).exit_code == 1


def test_the_overhead_compare_judges_the_same_two_families(store):
    """--overhead too: the primaries corrected among themselves, the
    descriptive cells in their own family and never gated."""
    from isobench.results.compare import compare_overheads

    a = _run(store, "a")
    b_desc = _run(store, "b-desc", inject={("docker-nat", "redis", "latency_mean_us"): 1.5})
    b_prim = _run(store, "b-prim", inject={("docker-nat", "fio", "iops"): 0.8})
    result = compare_overheads(a, b_desc)
    assert result.split and {c.family for c in result.cells} == {PRIMARY, DESCRIPTIVE}
    n_primary = sum(c.family == PRIMARY for c in result.cells)
    assert 0 < n_primary < len(result.cells)
    assert {c.verdict.m for c in result.cells if c.family == PRIMARY} == {n_primary}
    worse = [c for c in result.cells if c.flagged and c.key.metric == "latency_mean_us"]
    assert worse and all(c.family == DESCRIPTIVE for c in worse) and result.regressions(5) == []
    assert result.summary_line().startswith(f"0 of {n_primary} primary cells changed")
    assert "corrected within its family" in compare_markdown(result)
    assert [c.name for c in compare_overheads(a, b_prim).regressions(5)] == [
        "fio/randread iops on docker-nat vs native"
    ]
    old = compare_overheads(_run(store, "old-a", flagged=False), _run(store, "old-b", flagged=False))
    assert not old.split and {c.family for c in old.cells} == {""}


def test_compare_of_runs_stored_before_primaries_gates_every_cell(store):
    a = _run(store, "a", flagged=False)
    b = _run(store, "b", flagged=False, inject={("docker-nat", "redis", "latency_mean_us"): 1.5})
    result = compare_runs(a, b)
    assert not result.split and {c.family for c in result.cells} == {""}
    assert result.regressions(5) and result.summary_line().startswith(f"4 of {len(result.cells)} cells changed")


def test_the_newest_run_that_stores_primaries_names_the_family(store):
    old, new = _run(store, "old", flagged=False), _run(store, "new")
    assert primary_family([old, old]) is None
    assert (
        primary_family([old, new])
        == primary_family([new, old])
        == {(k.workload, k.case, k.metric) for k in primary_keys(new)}
    )
    assert compare_runs(old, new).split and compare_runs(new, old).split


# -- the store keeps the flags: export and import ---------------------------------------------


def test_an_exported_run_imports_with_its_flags_and_an_older_export_without(store, tmp_path):
    _run(store, "flagged")
    doc = export_run(store, "flagged")
    assert sum(row["is_primary"] for row in doc["metric_defs"]) == 10
    other = Store(str(tmp_path / "other.sqlite"))
    assert stores_primaries(other.load_run(import_run(other, doc)))
    for row in doc["metric_defs"]:
        del row["is_primary"]  # as exported before primaries
    old = other.load_run(import_run(other, doc, rename="older"))
    assert not stores_primaries(old) and {r.family for r in build_table(old).rows} == {""}
    doc["metric_defs"][0]["is_primary"] = 2
    with pytest.raises(TransferError, match=r"metric_defs\[0\]\.is_primary: 2 is not 0 or 1"):
        import_run(other, doc, rename="bad")
    other.close()


def test_the_quick_fixture_stored_before_primaries_keeps_one_family(store):
    data = Path(__file__).parents[1] / "data" / "quick-20261125.run.json.gz"
    run = store.load_run(import_run(store, json.load(gzip.open(data))))
    assert not stores_primaries(run)
    assert {v.m for v in _verdicts(build_table(run)).values()} == {66}


# -- declared by the workloads, overridden by the study ------------------------------------------

LAT_STUDY = '[study]\nname = "s"\n[environments.native]\n[workloads.lat]\nworkload = "netlat"\n'


def _plan(text: str):
    from isobench.host.hostinfo import HostInfo
    from isobench.run.plan import plan

    host = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)
    return {
        (c.key, c.case): [m.name for m in c.workload.defined_metrics(c.workload_case) if m.primary]
        for c in plan(parse_study(text, "s.toml"), host)
    }


def test_a_study_overrides_the_declared_primaries_per_workload_table():
    assert _plan(LAT_STUDY) == {("lat", "tcp"): ["mean_us", "p50_us"], ("lat", "udp"): ["mean_us", "p50_us"]}
    assert _plan(LAT_STUDY + 'primary = ["p99_us"]\n') == {("lat", "tcp"): ["p99_us"], ("lat", "udp"): ["p99_us"]}
    # a case that emits none of the study's names keeps the workload's own (webstore's peak search)
    web = '[study]\nname = "s"\n[environments.native]\n[workloads.webstore]\npeak = true\nrates = [10]\n'
    assert _plan(web) == {
        ("webstore", "instances=1"): ["orders_per_min"],
        ("webstore", "rate=10"): ["p90_ms"],
        ("webstore", "peak"): ["peak_rate"],
    }
    assert _plan(web + 'primary = ["p90_ms", "purchase_p90_ms"]\n') == {
        ("webstore", "instances=1"): ["p90_ms", "purchase_p90_ms"],
        ("webstore", "rate=10"): ["p90_ms", "purchase_p90_ms"],
        ("webstore", "peak"): ["peak_rate"],
    }


def test_a_study_names_the_levels_whose_metrics_are_primary_and_the_others_are_descriptive():
    redis = '[study]\nname = "s"\n[environments.native]\n[workloads.redis]\nclients = [1, 4, 16]\n'
    assert _plan(redis + 'primary = ["clients=1:rps", "clients=16:rps"]\n') == {
        ("redis", "clients=1"): ["rps"],
        ("redis", "clients=4"): [],  # run, judged in the descriptive family
        ("redis", "clients=16"): ["rps"],
    }
    # a metric for every case beside one for a case: each case gets both where it emits them
    assert _plan(LAT_STUDY + 'primary = ["p50_us", "tcp:p99_us"]\n') == {
        ("lat", "tcp"): ["p50_us", "p99_us"],
        ("lat", "udp"): ["p50_us"],
    }


def test_a_descriptive_level_counts_in_no_primary_cell_before_the_run():
    from isobench.checks.resolution import compared_cells
    from isobench.host.hostinfo import HostInfo

    host = HostInfo(cores=2, mem_bytes=8 * 2**30, disk_free_bytes=50 * 2**30)
    text = (
        '[study]\nname = "s"\n[environments.native]\n[environments.other]\nkind = "native"\n'
        '[workloads.redis]\nclients = [1, 4, 16]\nprimary = ["clients=1:rps", "clients=16:rps"]\n'
    )
    assert compared_cells(parse_study(text, "s.toml"), host).cells == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'primary = ["tcp:p50_us", "tpc:p50_us"]',
            "s.toml: workloads.lat.primary: 'tpc:p50_us': 'tpc' is not a case this table runs; "
            "its cases: tcp, udp (write CASE:METRIC, or METRIC for every case)",
        ),
        (
            'cases = ["tcp"]\nprimary = ["udp:p50_us"]',
            "s.toml: workloads.lat.primary: 'udp:p50_us': 'udp' is not a case this table runs; its cases: tcp",
        ),
        (
            'primary = ["tcp:tps"]',
            "s.toml: workloads.lat.primary: 'tcp:tps': 'tps' is not a metric of its case; "
            "its metrics: mean_us, p50_us, p99_us",
        ),
        (
            'primary = ["tcp:"]',
            "s.toml: workloads.lat.primary: 'tcp:': '' is not a metric of its case; its metrics: mean_us",
        ),
        (
            'primary = ["p99_us", "tps"]',
            "s.toml: workloads.lat.primary: 'tps' is not a metric of netlat with these "
            "parameters; its metrics: mean_us, p50_us, p99_us",
        ),
        ("primary = []", "s.toml: workloads.lat.primary: name at least one metric"),
        ('primary = ["p99_us", "p99_us"]', "s.toml: workloads.lat.primary: names a metric twice"),
        ('primary = "p99_us"', "s.toml: workloads.lat.primary: Input should be a valid tuple"),
    ],
)
def test_a_bad_primary_list_is_refused_before_anything_starts_in_one_line(body, message):
    with pytest.raises(StudyError) as err:
        parse_study(LAT_STUDY + body + "\n", "s.toml")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_metric_of_a_case_the_parameters_leave_out_is_unknown():
    # instance_3_task_s exists with 4 instances, not with 2: the names follow the parameters
    text = (
        '[study]\nname = "s"\n[environments.native]\n[workloads.api]\ninstances = {n}\n'
        'primary = ["instance_3_task_s"]\n'
    )
    assert parse_study(text.format(n=4), "s.toml").workloads[0].params.primary == ("instance_3_task_s",)
    with pytest.raises(StudyError, match=r"workloads\.api\.primary: 'instance_3_task_s' is not a metric of api"):
        parse_study(text.format(n=2), "s.toml")


# -- the runner stores the flags; adaptive stopping waits for the primaries ---------------------


@pytest.mark.parametrize(("override", "rounds"), [("", 2), ('primary = ["real_s"]\n', 4)])
def test_adaptive_repetitions_wait_for_the_primary_cells_only(
    fake,
    tmp_path,
    monkeypatch,  # noqa: F811
    override,
    rounds,
):
    from isobench.run.runner import run_study
    from isobench.workloads.base import Measurement
    from isobench.workloads.compress import Compression

    # throughput (the declared primary) within 0.1%; real_s (descriptive) never converges
    calls = iter(range(100))

    def measure(self, case, env):
        i = next(calls)
        return Measurement(
            {"throughput_mbs": 10.0 + 0.01 * (i % 2), "real_s": 1.0 + 9.0 * (i % 2), "user_s": 1.0, "sys_s": 1.0}
        )

    monkeypatch.setattr(Compression, "prepare", lambda self, env: None)
    monkeypatch.setattr(Compression, "run", measure)
    text = study_text("[environments.fake]\n[workloads.compression]\nsize_mb = 1\n" + override)
    text = text.replace(
        "repetitions = 1\n", 'repetitions = "auto"\nmin_repetitions = 2\nmax_repetitions = 4\ntarget_ci_pct = 1\n'
    )
    store = Store(str(tmp_path / "r.sqlite"))
    run_id = run_study(parse_study(text, "f.toml"), store)
    run = store.load_run(run_id)
    assert [k.metric for k in run.metrics if k.primary] == (["real_s"] if override else ["throughput_mbs"])
    looks = run.host_facts["adaptive"]["all"]
    assert looks[-1]["rounds"] == rounds and looks[-1]["cells"] == 1  # one primary cell watched
    assert looks[0]["text"] == (
        "every primary cell within \u00b11% after 2 rounds (look 1 of 2)"
        if rounds == 2
        else "1 of 1 primary cells wider than \u00b11%: 2 more rounds"
    )
    legend = "\n".join(build_table(run).legend)
    assert "until every primary cell's 95% CI was within \u00b11%" in legend
    store.close()


# -- what the shipped workloads declare --------------------------------------------------------

# workload -> its primaries in every case with the default parameters (the
# docs/workloads pages say the same); webstore's open loop and peak below
SHIPPED = {
    "api": ("task_s",),
    "compression": ("throughput_mbs",),
    "hpcc": ("hpl_gflops",),
    "netbw": ("gbps",),
    "netlat": ("mean_us", "p50_us"),
    "oltp": ("tps",),
    "redis": ("rps",),
    "redis-scaleout": ("rps",),
    "startup": ("ready_s",),
    "webstore": ("orders_per_min",),
    "command": ("wall_s",),
}
FIO = {
    "seqread": ("bandwidth_mbs",),
    "seqwrite": ("bandwidth_mbs",),
    "randread": ("iops",),
    "randwrite": ("iops",),
    "randrw70": ("iops",),
}


def _declared(cls, params):
    from isobench.workloads.base import NO_HOST

    w = cls(params, NO_HOST)
    return {case: w.primaries(case) for case in w.cases()}


def test_every_shipped_workload_case_declares_its_primaries():
    from isobench.workloads import WORKLOADS

    for name, cls in WORKLOADS.items():
        declared = _declared(cls, default_params(name, cls))
        assert all(declared.values()), name
        assert declared == (FIO if name == "fio" else dict.fromkeys(declared, SHIPPED[name])), name
    web = WORKLOADS["webstore"]
    assert _declared(web, web.Params(rates=(10,), peak=True)) == {
        "instances=1": ("orders_per_min",),
        "rate=10": ("p90_ms",),
        "peak": ("peak_rate",),
    }
    assert _declared(web, web.Params(mode="open")) == {"instances=1": ("p90_ms",)}


def test_the_metric_names_follow_the_parameters_never_the_host():
    from isobench.host.hostinfo import HostInfo
    from isobench.workloads import WORKLOADS

    hosts = (
        HostInfo(cores=1, mem_bytes=2**30, disk_free_bytes=2**30),
        HostInfo(cores=64, mem_bytes=2**40, disk_free_bytes=2**42, llc_bytes=2**26),
    )
    for name, cls in WORKLOADS.items():
        params = default_params(name, cls)
        for host in hosts:
            w = cls(params, host)
            assert cls.metric_names(params) == list(
                dict.fromkeys(m.name for case in w.cases() for m in w.metrics(case))
            ), name


def test_the_quick_study_flagged_as_its_workloads_declare_corrects_14_primary_cells(store):
    """The stored quick run with the flags today's workloads would store:
    Table I's primaries are 7 rows x 2 environments, m = 14 instead of 66;
    the descriptive family's 50, compression's real_s (its size over the
    throughput, sample by sample) not tested again (issue 55)."""
    data = Path(__file__).parents[1] / "data" / "quick-20261125.run.json.gz"
    doc = json.load(gzip.open(data))
    flags = {(w, c, m) for (w, c), names in _plan(doc["runs"][0]["study_text"]).items() for m in names}
    for row in doc["metric_defs"]:
        row["is_primary"] = int((row["workload"], row["ccase"], row["metric"]) in flags)
    run = store.load_run(import_run(store, doc))
    assert [f"{k.workload} {k.case} {k.metric}" for k in primary_keys(run)] == [
        "compression default throughput_mbs",
        "hpcc default hpl_gflops",
        "fio seqread bandwidth_mbs",
        "fio seqwrite bandwidth_mbs",
        "fio randread iops",
        "fio randwrite iops",
        "fio randrw70 iops",
    ]
    table = build_table(run)
    primary, descriptive = _verdicts(table, PRIMARY), _verdicts(table, DESCRIPTIVE)
    assert {v.m for v in primary.values()} == {14} and {v.m for v in descriptive.values() if v.effect.tested} == {50}
    same = {(k.metric, env) for (k, env), v in descriptive.items() if v.reason.startswith("the same test as")}
    assert same == {("real_s", "docker-nat"), ("real_s", "docker-host")}
    r = sum(v.rejected for v in primary.values())
    assert all(v.level == pytest.approx(1 - max(r, 1) * ALPHA / 14) for v in primary.values())
