"""Hostile inputs, round three (docs/hostile-inputs.md): stored values are
input too. Each test crafts a real run export (tests/synthetic_runs.py) the
way issue 36 found it, imports it, and runs the commands that read it: the
answer is exit 2 with one line, or the value rendered escaped."""

from __future__ import annotations

import copy
import json

import pytest
from tests.synthetic_runs import Synthetic, simple_run, write_run

from isobench.cli import entry
from isobench.store import shapes
from isobench.store.db import Store
from isobench.store.transfer import export_run

OSC = "\x1b]52;c;aGk=\x07\x1b[2J"  # a clipboard write and a screen clear


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("src") / "src.sqlite"))
    write_run(store, Synthetic("r1", repetitions=3))
    return export_run(store, "r1")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A one-metric run: quick to draw."""
    store = Store(str(tmp_path_factory.mktemp("small") / "src.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 10.2, 9.9], "docker-nat": [9.8, 9.9, 9.7]})
    return export_run(store, "r1")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "s.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    shapes._said.clear()  # "said once" is per process: each command here is one
    return tmp_path


def isobench(capfd, *args) -> tuple[int, str, str]:
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


def imported(capfd, sandbox, doc, name="x.run.json") -> None:
    f = sandbox / name
    f.write_text(json.dumps(doc))
    code, _, err = isobench(capfd, "import", f)
    assert code == 0, err


def refused(capfd, sandbox, doc, needle: str) -> str:
    f = sandbox / "x.run.json"
    f.write_text(json.dumps(doc))
    code, _out, err = isobench(capfd, "import", f)
    assert code == 2, (code, err)
    assert err.count("\n") == 1 and err.startswith("error: ") and "unexpected" not in err, err
    assert needle in err, err
    return err


def run_field(doc, col, value):
    doc = copy.deepcopy(doc)
    doc["runs"][0][col] = value
    return doc


def rename_metric(doc, old: str, new: str):
    doc = copy.deepcopy(doc)
    for row in doc["metric_defs"]:
        if row["metric"] == old:
            row["metric"] = new
    for row in doc["samples"]:
        vals = json.loads(row["vals"])
        if old in vals:
            vals[new] = vals.pop(old)
            row["vals"] = json.dumps(vals)
    return doc


READERS = [
    ["report", "r1"],
    ["report", "r1", "--format", "md"],
    ["runs"],
    ["history"],
    ["history", "--format", "md"],
    ["compare", "r1", "r1"],
]


# -- 1. escape sequences in run fields ------------------------------------------------------


@pytest.mark.parametrize("col", ["started_at", "finished_at", "study_hash", "study_text", "study_path"])
def test_1_escape_sequences_in_run_fields_never_reach_the_terminal(capfd, sandbox, base, col):
    value = base["runs"][0][col] if col == "study_text" else ""
    if col in ("started_at", "finished_at"):  # import refuses it now (a time must parse): an older store
        imported(capfd, sandbox, base)
        import sqlite3

        db = sqlite3.connect(sandbox / "s.sqlite")
        db.execute(f"UPDATE runs SET {col}=?", ("2026-05-01T10:00:00+0000" + OSC,))
        db.commit()
        db.close()
    else:
        imported(capfd, sandbox, run_field(base, col, value + OSC))
    for args in READERS:
        code, out, err = isobench(capfd, *args)
        assert code in (0, 1), (args, err)
        assert "\x1b" not in out + err and "\x07" not in out + err, args


def test_1_an_escape_sequence_in_a_time_is_refused(capfd, sandbox, base):
    refused(capfd, sandbox, run_field(base, "started_at", "2026-05-01T10:00:00+00:00" + OSC), "runs.started_at")


# -- 2. rich markup in stored text ----------------------------------------------------------


@pytest.mark.parametrize("text", ["[/x]", "[link=https://example.invalid]x[/link]", "[bold]"])
def test_2_markup_in_stored_text_is_shown_literally(capfd, sandbox, small, text):
    """`runs` read started_at as rich markup: "[/x]" ended every later `runs`
    in a MarkupError. A store written before times were checked holds it."""
    doc = copy.deepcopy(small)
    doc["samples"][-1]["error"] = text  # a failure reason, shown by report
    doc["samples"][-1]["status"] = "failed"
    imported(capfd, sandbox, run_field(doc, "study_path", "study" + text + ".toml"))
    import sqlite3

    db = sqlite3.connect(sandbox / "s.sqlite")
    db.execute("UPDATE runs SET started_at=?", ("2026-05-01" + text,))
    db.commit()
    db.close()
    code, out, err = isobench(capfd, "runs")
    assert code == 0, err
    assert text[:5] in out  # shown as typed (a narrow column may wrap the rest)
    assert "\x1b]8" not in out  # no hidden hyperlink
    for args in READERS:
        code, out, err = isobench(capfd, *args)
        assert code in (0, 1), (args, err)


# -- 4. mathtext in metric and case names ---------------------------------------------------


@pytest.mark.parametrize("name", ["$\\cmd{$", "$x^2$"])
def test_4_dollars_in_a_metric_name_are_drawn_literally(capfd, sandbox, small, name):
    doc = rename_metric(small, "throughput_mbs", name)
    for row in doc["metric_defs"] + doc["samples"]:
        row["ccase"] = "case" + name
    imported(capfd, sandbox, doc)
    code, _, err = isobench(capfd, "report", "r1", "--format", "html", "-o", "r.html")
    assert code == 0, err
    code, _, err = isobench(capfd, "report", "r1", "--figures", "figs")
    assert code == 0, err
    svgs = [p.read_text() for p in (sandbox / "figs").glob("*.svg")]
    assert any(name.replace("&", "&amp;") in s for s in svgs)


# -- 11. Markdown injection -----------------------------------------------------------------


def test_11_a_markdown_image_in_a_name_is_not_an_image(capfd, sandbox, base):
    imported(capfd, sandbox, rename_metric(base, "throughput_mbs", "![p](https://example.invalid/p.png)"))
    code, out, err = isobench(capfd, "report", "r1", "--format", "md")
    assert code == 0, err
    assert "![p](" not in out and "\\![p\\](https://example.invalid/p.png)" in out


def test_11_entities_are_written_literally(capfd, sandbox, base):
    imported(capfd, sandbox, run_field(base, "host_facts", json.dumps({"cores": 2, "kernel": "&amp;&#0;"})))
    code, out, _err = isobench(capfd, "report", "r1", "--format", "md")
    assert code == 0 and "\\&amp;\\&#0;" in out and "&amp;&#0;" not in out.replace("\\&", "")


def test_csv_cells_are_never_formulas(capfd, sandbox, base):
    imported(capfd, sandbox, rename_metric(base, "throughput_mbs", '=HYPERLINK("http://x")'))
    code, _, err = isobench(capfd, "export", "r1", "-o", "csv")
    assert code == 0, err
    text = (sandbox / "csv" / "cells.csv").read_text()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text and ',"=HYPERLINK' not in text


# -- 3. imported shapes that crashed report -------------------------------------------------


def facts_of(doc, env: str | None, key: str, value):
    doc = copy.deepcopy(doc)
    row = doc["runs"][0] if env is None else next(r for r in doc["env_facts"] if r["env"] == env)
    col = "host_facts" if env is None else "facts"
    facts = json.loads(row[col])
    facts[key] = value
    row[col] = json.dumps(facts)
    return doc


def hist_of(doc, hist):
    doc = copy.deepcopy(doc)
    for row in doc["samples"]:
        if "read_clat_hist" in row["extra"]:
            row["extra"] = json.dumps({"read_clat_hist": hist})
    return doc


SHAPES = {
    "a doctor fact that is a list of ints": (
        lambda d: facts_of(d, None, "doctor", [1, 2]),
        "runs.host_facts.doctor[0]: Input should be a valid dictionary",
    ),
    "a doctor finding without check": (
        lambda d: facts_of(d, None, "doctor", [{"status": "warn", "value": 1}]),
        "runs.host_facts.doctor[0].check: Field required",
    ),
    "options that are a string": (
        lambda d: facts_of(d, "native", "options", "x"),
        "facts.options: Input should be a valid dictionary",
    ),
    "density without startup_s": (
        lambda d: facts_of(d, "native", "density", [{"n": 1, "mem_per_instance_bytes": 1}]),
        "facts.density[0].startup_s: Field required",
    ),
    "a histogram of the wrong shape": (lambda d: hist_of(d, [[1]]), "read_clat_hist: a histogram is"),
    "a time budget that is not a number": (
        lambda d: facts_of(d, None, "budget", {"budget_s": "x"}),
        "runs.host_facts.budget",
    ),
}


@pytest.mark.parametrize("what", list(SHAPES))
def test_3_a_stored_part_of_the_wrong_shape_is_refused_at_import(capfd, sandbox, base, what):
    mutate, needle = SHAPES[what]
    refused(capfd, sandbox, mutate(base), needle)


def test_3_an_older_store_with_such_values_still_reports_and_says_so_once(capfd, sandbox, base):
    """A store written by hand (or by a version before the shapes) holds them already."""
    imported(capfd, sandbox, base)
    import sqlite3

    db = sqlite3.connect(sandbox / "s.sqlite")
    db.execute("UPDATE runs SET host_facts=?", (json.dumps({"cores": 2, "doctor": [1, 2]}),))
    db.execute(
        "UPDATE env_facts SET facts=? WHERE env='native'",
        (json.dumps({"kind": "native", "options": "x", "density": [{"n": 1}]}),),
    )
    db.execute(
        "UPDATE samples SET extra=? WHERE extra LIKE '%read_clat_hist%'", (json.dumps({"read_clat_hist": [[1]]}),)
    )
    db.commit()
    db.close()
    for args in (
        ["report", "r1"],
        ["report", "r1", "--format", "md"],
        ["report", "r1", "--format", "html", "-o", "r.html"],
        ["compare", "r1", "r1"],
    ):
        from isobench.store import shapes

        shapes._said.clear()  # once per command: each is a process of its own
        code, _out, err = isobench(capfd, *args)
        assert code == 0, (args, err)
        assert "unexpected" not in err and "treated as absent" in err, (args, err)
        notes = [line for line in err.splitlines() if "treated as absent" in line]
        assert len(notes) == len(set(notes)), "said once per value"


# -- 5. values SQLite cannot store ----------------------------------------------------------


def sample_col(doc, col, value):
    doc = copy.deepcopy(doc)
    doc["samples"][0][col] = value
    return doc


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda d: sample_col(d, "round", 2**64), "samples[0].round: 18446744073709551616 is beyond a 64-bit integer"),
        (lambda d: sample_col(d, "raw", "\ud800"), "samples[0].raw: not UTF-8 text"),
        (lambda d: sample_col(d, "wall_s", 1e300), "samples[0].wall_s: 1e+300 is not a duration"),
        (lambda d: sample_col(d, "wall_s", -1e10), "samples[0].wall_s: -10000000000.0 is not a duration"),
        (lambda d: run_field(d, "study_path", "x\udcff.toml"), "runs.study_path: not UTF-8 text"),
        (lambda d: sample_col(d, "vals", json.dumps({"throughput_mbs": 4e307})), "outside the range"),
        (lambda d: sample_col(d, "round", 5000), "samples[0].round: 5000 is not a round a study makes"),
    ],
)
def test_5_a_value_sqlite_cannot_store_is_one_line(capfd, sandbox, small, mutate, needle):
    # json.dumps writes a lone surrogate as \ud800, which json.loads reads back as one
    refused(capfd, sandbox, mutate(small), needle)
    import sqlite3

    assert sqlite3.connect(sandbox / "s.sqlite").execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 0


# -- 6. reparse never writes NaN or infinity -------------------------------------------------


@pytest.mark.parametrize("real", ["nan", "inf", "1e-320"])
def test_6_reparse_refuses_a_non_finite_parsed_value_and_keeps_the_old_one(tmp_path, real):
    from tests.unit.test_reparse import build_run, sample_id

    from isobench.store.reparse import reparse_run

    store = Store(str(tmp_path / "r.sqlite"))
    build_run(store)
    sid = sample_id(store, "native", "compression", "default", 1)
    raw, vals = store.db.execute("SELECT raw, vals FROM samples WHERE id=?", (sid,)).fetchone()
    bad = "\n".join(
        line.replace("real=", f"real={real} old=") if line.startswith("isobench-time") else line
        for line in raw.splitlines()
    )
    import re

    bad = re.sub(r"real=\S+ old=\S+", f"real={real}", bad)
    store.db.execute("UPDATE samples SET raw=? WHERE id=?", (bad, sid))
    store.db.commit()
    out = reparse_run(store, "r1")
    assert any(u.round == 1 and u.env == "native" and u.workload == "compression" for u in out.unreadable)
    after = store.db.execute("SELECT raw, vals FROM samples WHERE id=?", (sid,)).fetchone()
    assert after == (bad, vals), "the raw output kept, the old values untouched"
    store.load_run("r1")  # and the run still reads


def test_6_the_runner_records_such_a_value_as_a_failed_parse():
    from isobench.workloads.base import Measurement, ParseError, checked

    with pytest.raises(ParseError, match="real_s = nan: not a finite number") as exc:
        checked(Measurement({"real_s": float("nan")}, raw="isobench-time real=nan"))
    assert exc.value.result.stdout == "isobench-time real=nan"
    assert checked(Measurement({"real_s": 1.5, "x": None, "y": 0})).values["real_s"] == 1.5


# -- 8. outputs never destroy inputs ---------------------------------------------------------

OUTPUTS = [
    ["report", "r1", "--format", "md", "-o"],
    ["report", "r1", "--format", "html", "-o"],
    ["compare", "r1", "r1", "-o"],
    ["compare", "r1", "r1", "--junit"],
    ["archive", "r1", "-o"],
    ["export", "r1", "--format", "json", "-o"],
    ["history", "-o"],
    ["history", "--junit"],
]


@pytest.fixture
def stored(capfd, sandbox, small):
    imported(capfd, sandbox, small)
    return sandbox / "s.sqlite"


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
def test_8_an_output_onto_the_open_store_is_refused(capfd, sandbox, stored, args):
    def refused_last_line(*argv):
        code, _, err = isobench(capfd, *argv)
        last = err.strip().splitlines()[-1]
        assert code == 2 and last.startswith("error: ") and "is the store this command uses" in last, err

    for target in (stored, sandbox / "." / "s.sqlite", sandbox / "s.sqlite-wal"):
        refused_last_line(*args, target)
    link = sandbox / "link.json"
    link.symlink_to(stored)
    refused_last_line(*args, link, "--force")  # not even with --force
    import sqlite3

    assert sqlite3.connect(stored).execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 6


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
def test_8_an_existing_file_or_a_symlink_needs_force(capfd, sandbox, stored, args):
    victim = sandbox / "precious.txt"
    victim.write_text("keep me")
    code, _, err = isobench(capfd, *args, victim)
    assert code == 2 and "exists; give another path, or pass --force" in err, err
    link = sandbox / "out.lnk"
    link.symlink_to(victim)
    code, _, err = isobench(capfd, *args, link)
    assert code == 2 and "is a symlink" in err, err
    assert victim.read_text() == "keep me"
    code, _, err = isobench(capfd, *args, victim, "--force")
    assert code in (0, 1) and victim.read_text() != "keep me", err


def test_8_a_default_output_is_isobench_s_own_and_replaced(capfd, sandbox, stored):
    for _ in range(2):
        code, _, err = isobench(capfd, "archive", "r1")
        assert code == 0, err
    assert (sandbox / "results" / "r1.run.json").exists()


DEFAULT_OUTPUTS = [
    ["archive", "r1"],
    ["report", "r1", "--format", "html"],
    ["export", "r1", "--format", "json"],
    ["export", "r1", "--format", "csv"],
    ["compare", "r1", "r1", "--format", "html"],
    ["history", "--format", "html"],
]


@pytest.mark.parametrize("args", DEFAULT_OUTPUTS, ids=" ".join)
def test_8_a_results_directory_that_is_a_symlink_is_refused(capfd, sandbox, stored, args):
    """Issue 55: in a shared working directory, a `results` link made root
    write (and replace, as its own) a file wherever it pointed."""
    elsewhere = sandbox / "elsewhere"
    elsewhere.mkdir()
    (sandbox / "results").symlink_to(elsewhere)
    code, _, err = isobench(capfd, *args)
    last = err.strip().splitlines()[-1]  # after a note compare or history may give first
    assert code == 2 and last.startswith(f"error: results: is a symlink (to {elsewhere}); "), err
    assert last.endswith("remove the link, or give -o PATH"), err
    assert list(elsewhere.iterdir()) == []


def test_8_a_run_refuses_a_results_symlink_before_it_measures(capfd, sandbox, stored, monkeypatch):
    from isobench.cli import execution

    monkeypatch.setattr(execution, "execute", lambda *a, **kw: pytest.fail("the run started"))
    (sandbox / "elsewhere").mkdir()
    (sandbox / "results").symlink_to(sandbox / "elsewhere")
    code, _, err = isobench(capfd, "run", "quick")
    assert code == 2 and err.startswith("error: results: is a symlink"), err


# -- 9. time is a time -----------------------------------------------------------------------


def test_9_runs_sort_by_instant_across_time_zones(capfd, sandbox, small):
    # b started at 10:00+09:00 = 01:00 UTC: before a (05:00 UTC), though its text sorts after
    imported(capfd, sandbox, run_field(small, "started_at", "2026-05-01T05:00:00+00:00"))
    doc = run_field(small, "started_at", "2026-05-01T10:00:00+09:00")
    doc["run_id"] = "b"
    imported(capfd, sandbox, doc, "b.json")
    code, out, _err = isobench(capfd, "runs")
    assert code == 0 and out.index("b ") < out.index("r1 "), out
    assert "2026-05-01T01:00:00+0000" in out
    from isobench.store.db import Store as S

    assert S(str(sandbox / "s.sqlite")).latest_run_id() == "r1"


@pytest.mark.parametrize("bad", ["zzz", "2026-05-01T10:00:00", "9999-99-99T00:00:00+0000", "1" * 500])
def test_9_an_unparseable_time_is_refused(capfd, sandbox, small, bad):
    refused(capfd, sandbox, run_field(small, "started_at", bad), "runs.started_at")
    refused(capfd, sandbox, run_field(small, "finished_at", bad), "runs.finished_at")


def test_9_an_older_store_is_converted_and_an_unreadable_time_is_never_the_latest(capfd, sandbox, small):
    imported(capfd, sandbox, small)
    doc = copy.deepcopy(small)
    doc["run_id"] = "z"
    imported(capfd, sandbox, doc, "z.json")
    import sqlite3

    db = sqlite3.connect(sandbox / "s.sqlite")
    db.execute("UPDATE runs SET started_at='2026-05-01T10:00:00+0900' WHERE run_id='r1'")
    db.execute("UPDATE runs SET started_at='zzz' WHERE run_id='z'")  # written by hand
    first = db.execute("SELECT MIN(id) FROM samples WHERE run_id='r1'").fetchone()[0]
    db.execute("UPDATE samples SET started_at='2026-05-01T10:00:05+09:00' WHERE id=?", (first,))
    db.execute("UPDATE samples SET started_at='zzz' WHERE id=?", (first + 1,))
    db.commit()
    db.close()
    s = Store(str(sandbox / "s.sqlite"))
    assert s.latest_run_id() == "r1"
    assert s.db.execute("SELECT started_at FROM runs WHERE run_id='r1'").fetchone()[0] == "2026-05-01T01:00:00+0000"
    # a sample's time too, in the file itself; one that is no time is left for readers to treat as absent
    stored = dict(s.db.execute("SELECT id, started_at FROM samples WHERE id IN (?, ?)", (first, first + 1)))
    assert stored == {first: "2026-05-01T01:00:05+0000", first + 1: "zzz"}
    assert [r.run_id for r in s.list_runs()] == ["z", "r1"]


# -- 10. options are validated like fields -----------------------------------------------------


@pytest.fixture
def regressed(capfd, sandbox):
    s = Store(str(sandbox / "s.sqlite"))
    simple_run(s, "a1", {"native": [10.0, 10.1, 9.9, 10.0], "docker-nat": [10.0, 10.1, 9.9, 10.0]})
    simple_run(s, "b1", {"native": [10.0, 10.1, 9.9, 10.0], "docker-nat": [5.0, 5.1, 4.9, 5.0]})
    s.close()


@pytest.mark.parametrize(
    "args",
    [
        ["compare", "a1", "b1", "--fail-on-regression"],
        ["compare", "a1", "b1", "--tolerance"],
        ["history", "--fail-on-change"],
    ],
    ids=" ".join,
)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_10_a_nan_threshold_is_refused(capfd, sandbox, regressed, args, value):
    code, _, err = isobench(capfd, *args, value)
    assert code == 2 and "is not a finite number" in err and "unexpected" not in err, err


@pytest.mark.parametrize("budget", ["\u0663\u0660m", "9" * 5000 + "s", "1" * 7 + "m"])
def test_10_a_budget_is_a_few_ascii_digits(budget):
    from isobench.analysis.budget import parse_duration

    with pytest.raises(ValueError, match="is not a duration") as exc:
        parse_duration(budget)
    assert len(str(exc.value)) < 200


# -- 7. small inputs, large costs ------------------------------------------------------------

DEEP_KEYS = '[study]\nname = "x"\n[environments.native]\npreset.' + "a." * 3000 + "a = 1\n"
MANY_DEEP = '[study]\nname = "x"\n' + "".join(f"k{i}." + "a." * 20 + "a = 1\n" for i in range(800))


@pytest.mark.parametrize("text", [DEEP_KEYS, MANY_DEEP], ids=["3000 levels", "800 keys of 22 levels"])
def test_7_deep_dotted_keys_are_refused_before_tomllib(capfd, sandbox, text):
    import time

    study = sandbox / "deep.toml"
    study.write_text(text)
    t0 = time.monotonic()
    code, _, err = isobench(capfd, "validate", study)
    assert code == 2 and err.count("\n") == 1 and "a dotted key of more than 16 parts" in err, err
    assert time.monotonic() - t0 < 2


def test_7_the_same_text_as_a_stored_study_is_refused_at_import(capfd, sandbox, small):
    refused(capfd, sandbox, run_field(small, "study_text", MANY_DEEP), "runs.study_text: a dotted key of more")


def test_7_rounds_per_cell_are_bounded_at_import(capfd, sandbox, small):
    doc = copy.deepcopy(small)
    first = doc["samples"][0]
    doc["samples"] += [{**first, "round": i % 1000} for i in range(1200)]
    refused(capfd, sandbox, doc, "has more than 1100 measured rounds")


def test_7_names_are_bounded_at_import(capfd, sandbox, small):
    refused(capfd, sandbox, rename_metric(small, "throughput_mbs", "m" * 129), "a name has at most 128")
    doc = copy.deepcopy(small)
    for row in doc["metric_defs"] + doc["samples"]:
        row["ccase"] = "c" * 200
    refused(capfd, sandbox, doc, "ccase: 200 characters")


def test_7_the_drift_estimator_is_linear_in_rounds():
    import resource
    import time

    import numpy as np

    from isobench.analysis.anomalies import drift

    values = list(100 + 0.01 * np.arange(50_000) + np.random.default_rng(1).normal(0, 1, 50_000))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()  # CPU seconds, not wall: a shared host's load must not fail it
    d = drift(values)
    # all 1.25e9 pairs' slopes would take minutes of CPU; the linear estimate takes well under a second
    assert time.process_time() - t0 < 10 and d.flagged
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: not 50,000² slopes
    from scipy.stats import theilslopes  # up to 256 rounds: every pair, as before

    a = np.array(values[:200])
    assert drift(values[:200]).slope_pct_per_round == pytest.approx(
        theilslopes(a, np.arange(200)).slope / np.median(a) * 100
    )


# -- minor: older stores and simultaneous imports ---------------------------------------------


def test_an_older_store_with_unreadable_values_and_names_still_reads(capfd, sandbox, small):
    imported(capfd, sandbox, small)
    import sqlite3

    db = sqlite3.connect(sandbox / "s.sqlite")
    db.execute("UPDATE samples SET vals='[1]' WHERE id=(SELECT MIN(id) FROM samples)")
    db.execute("UPDATE samples SET vals='{\"throughput_mbs\": 1e999}' WHERE id=(SELECT MAX(id) FROM samples)")
    db.commit()
    db.close()
    for args in (["report", "r1"], ["runs"], ["compare", "r1", "r1"]):
        code, _out, err = isobench(capfd, *args)
        assert code == 0 and "unexpected" not in err, (args, err)


def test_the_loser_of_two_imports_of_one_run_gets_the_rename_hint(sandbox, small):
    """Both checked the id before either wrote: the second insert hits the key."""
    from isobench.store import transfer

    class Racing:  # the second import's connection, its existence check run before the first committed
        def __init__(self, conn):
            self.conn, self.seen = conn, False

        def execute(self, sql, *args):
            if sql.startswith("SELECT 1 FROM runs WHERE run_id=?") and not self.seen:
                self.seen = True
                return self.conn.execute("SELECT 1 WHERE 0")
            return self.conn.execute(sql, *args)

        def __enter__(self):
            return self.conn.__enter__()

        def __exit__(self, *exc):
            return self.conn.__exit__(*exc)

    first, second = Store(str(sandbox / "s.sqlite")), Store(str(sandbox / "s.sqlite"))
    transfer.import_run(first, copy.deepcopy(small))
    second.db = Racing(second.db)
    with pytest.raises(transfer.TransferError, match="already exists; import it under another id with --rename"):
        transfer.import_run(second, copy.deepcopy(small))


def test_8_a_default_history_page_is_replaced_but_a_calibration_json_is_not(capfd, sandbox, stored):
    for _ in range(2):
        code, _, err = isobench(capfd, "history", "--format", "html")
        assert code in (0, 1), err
    victim = sandbox / "rates.json"
    victim.write_text("keep me")
    code, _, err = isobench(capfd, "calibrate", "--show", "r1", "--json", victim)
    assert code == 2 and "--json" in err and "exists" in err and victim.read_text() == "keep me", err


def test_a_density_point_may_read_negative_memory():
    # measured on a busy host: MemAvailable rose while the instance started
    from isobench.store.shapes import EnvFacts, readable

    point = {"n": 1, "startup_s": 0.5, "mem_used_bytes": -100, "mem_per_instance_bytes": -100.0}
    assert readable(EnvFacts, {"density": [point]}, "w")["density"] == [point]
