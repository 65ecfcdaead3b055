"""The blind gate's own exit status (docs/output.md#exit-status): blind is 4,
a regression found is 1 and wins over blindness, `run --require-resolution`
judges the run's own Table I, and every blind cell says the rounds, wall
time and --budget that would resolve it."""

import re

import pytest
from click.testing import CliRunner

from isobench.cli import output as out
from isobench.cli.main import main
from isobench.store.db import Store
from synthetic_runs import Synthetic, fake_pilot, simple_run, write_run

NOISY = [100.0, 90.0, 110.0, 95.0, 105.0]
TIGHT = [100.0, 100.2, 99.8, 100.1, 99.9, 100.0]
STUDY = '[study]\nname = "synthetic"\n\n[environments.native]\n\n[environments.docker-nat]\n\n[workloads.compression]\n'


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_exit_codes_are_distinct_and_a_regression_wins():
    assert len({0, out.EXIT_GATE, out.EXIT_BLIND, 2, 3, 130}) == 6
    for failed, blind, code in ((True, False, 1), (False, True, 4), (True, True, 1)):
        with pytest.raises(SystemExit) as exc:
            out.gate_exit(failed, blind)
        assert exc.value.code == code
    out.gate_exit(False, False)  # neither: no exit


def test_a_compare_with_a_regression_and_blind_cells_exits_1(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1))
    write_run(s, Synthetic("c", seed=1, inject={("docker-nat", "fio", "iops"): 0.8}))
    s.close()
    gates = ("--fail-on-change", "5", "--require-resolution", "0.01")  # nothing is that sharp: every cell blind
    r = invoke("compare", "a", "c", "--store", path, *gates)
    assert "blind:" in r.stderr and "regression: 1 cell" in r.stderr
    assert r.exit_code == out.EXIT_GATE
    # the same blindness without the regression is its own status
    r = invoke("compare", "a", "a", "--store", path, *gates)
    assert r.exit_code == out.EXIT_BLIND and "regression" not in r.stderr


def test_a_stored_runs_warmup_rounds_count_in_the_time_that_would_resolve(tmp_path):
    path = str(tmp_path / "s.sqlite")
    s = Store(path)
    write_run(s, Synthetic("a", seed=1, repetitions=3))
    assert s.load_run("a").warmup_rounds == 1  # round 0 of a synthetic run is its warm-up
    simple_run(s, "b", {"native": TIGHT, "docker-nat": TIGHT})
    assert s.load_run("b").warmup_rounds == 0
    s.close()


def _fake_run(store_values):
    """An `execute` that stores a one-metric run instead of measuring one."""

    def execute(study, store, *args, **kwargs):
        return simple_run(store, "run-x", store_values)

    return execute


@pytest.mark.parametrize(
    "values, code",
    [
        ({"native": NOISY, "docker-nat": [v * 1.01 for v in reversed(NOISY)]}, out.EXIT_BLIND),
        ({"native": TIGHT, "docker-nat": TIGHT}, 0),
    ],
)
def test_run_require_resolution_judges_its_own_table(tmp_path, monkeypatch, values, code):
    import isobench.cli.execution as execution

    monkeypatch.setattr(execution, "execute", _fake_run(values))
    study = tmp_path / "s.toml"
    study.write_text(STUDY)
    store, report = str(tmp_path / "r.sqlite"), str(tmp_path / "r.md")
    r = invoke("run", str(study), "--store", store, "-o", report, "--require-resolution", "5")
    assert r.exit_code == code, r.output
    if code:
        assert "blind: 1 of 1 primary cell could not have seen a change of 5% against native" in r.stderr
        # 1 s a sample, one case in two environments: 2 s a round; a fixed run's rounds at
        # its level, a budgeted run's at alpha/K over its looks, reached at one of them
        m = re.search(
            r"  compression throughput_mbs on docker-nat: its interval is \u00b1\d+\.\d%; about (\d+) rounds "
            r"\(4 times in 5, about \d+ (s|min) here\), or --budget \d+m \(its (\d+) looks test at "
            r"alpha/\3: (\d+) rounds, reached at its look at (\d+)\) would resolve it",
            r.stderr,
        )
        assert m and int(m[5]) >= int(m[4]) > int(m[1]), r.stderr
    else:
        assert "blind" not in r.stderr
    # without the option the same run is green whatever it could see
    monkeypatch.setattr(execution, "execute", _fake_run(values))
    again = invoke("run", str(study), "--store", str(tmp_path / "q.sqlite"), "-o", str(tmp_path / "q.md"))
    assert again.exit_code == 0, again.output


def test_each_gate_says_its_exit_codes_in_its_help():
    for command in ("compare", "history", "run"):
        text = " ".join(invoke(command, "--help").output.split())
        assert "4 blind" in text and "--require-resolution PCT" in text, command


# -- validate --strict: a study blind at its size fails before it runs ---------------------

TINY = STUDY.replace('name = "synthetic"\n', 'name = "synthetic"\nrepetitions = 2\n')


@pytest.mark.parametrize(
    "text, noise, strict_code",
    [
        (STUDY, fake_pilot(0.01, 0.02), 0),  # a quiet host: 5 rounds find changes of some %
        (TINY, fake_pilot(1.0, 1.0), out.EXIT_BLIND),  # 2 rounds at 100% noise: nothing
        (STUDY, None, out.EXIT_BLIND),  # never measured: it cannot say, so strict does not pass
    ],
)
def test_validate_strict_fails_a_study_that_can_resolve_nothing_here(tmp_path, monkeypatch, text, noise, strict_code):
    import isobench.checks.noisepilot as npl

    monkeypatch.setattr(npl, "cached", lambda *a, **k: noise)
    monkeypatch.setattr(npl, "measure", lambda *a, **k: pytest.fail("validate must not measure"))
    study = tmp_path / "s.toml"
    study.write_text(text)
    assert invoke("validate", str(study)).exit_code == 0  # without --strict: advice, exit 0
    r = invoke("validate", str(study), "--strict")
    assert r.exit_code == strict_code, r.output
    if noise is None:
        assert "blind: the host's noise is not measured here lately" in r.stderr
    elif strict_code:
        assert "can find only changes beyond +999%" in r.stdout  # what validate always said
        assert "blind: at 2 rounds it can resolve nothing here" in r.stderr
        assert re.search(
            r"\u00b15% equivalence needs more rounds \((about \d+ rounds \(4 times in 5, about .* --budget|more than)",
            r.stderr,
        )
    # --format json prints the document, and the same status
    assert invoke("validate", str(study), "--strict", "--format", "json").exit_code == strict_code


def test_one_figure_that_resolves_is_enough():
    from isobench.checks.resolution import Outlook, resolve

    hopeless, fine = resolve(1.0, 2, 0.01, 5.0), resolve(0.01, 30, 0.01, 5.0)
    assert Outlook("at 2 rounds", 2, 1, 4, ((hopeless, "CPU", ""),)).resolves_nothing()
    assert not Outlook(
        "at 2 rounds", 2, 1, 4, ((hopeless, "CPU", ""), (fine, "I/O", "I/O-bound fio"))
    ).resolves_nothing()
    assert not Outlook("at 2 rounds", 2, 1, 4, ()).resolves_nothing()  # unknown is not nothing
