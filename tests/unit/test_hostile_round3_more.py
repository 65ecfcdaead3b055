"""Hostile inputs, round three, the rest (docs/hostile-inputs.md): a
sample's start time is a time like a run's, and a click usage error quoting
user input is one bounded line."""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest

from isobench.cli import entry
from isobench.store import shapes

# the store, the sandbox and the in-process CLI are round three's own
from unit.test_hostile_round3 import OSC, isobench, sandbox, small  # noqa: E402, F401 - fixtures by name


def with_sample_start(doc, value, index: int = 0):
    doc = copy.deepcopy(doc)
    doc["samples"][index]["started_at"] = value
    return doc


def import_code(capfd, sandbox, doc) -> tuple[int, str]:
    f = sandbox / "x.run.json"
    f.write_text(json.dumps(doc))
    code, _out, err = isobench(capfd, "import", f)
    return code, err


# -- a sample's started_at --------------------------------------------------------------------

HOSTILE_TIMES = {
    "an escape sequence after a time": "2026-05-01T10:00:00+00:00" + OSC,
    "rich markup": "[/x]",
    "a hidden link": "[link=https://example.invalid]x[/link]",
    "garbage": "zzz",
    "no UTC offset": "2026-05-01T10:00:00",
    "an impossible date": "9999-99-99T00:00:00+0000",
    "a huge string": "2026-05-01T10:00:00+00:00" + "9" * 100_000,
    "a Markdown image": "![p](https://example.invalid/p.png)",
    "a formula": "=HYPERLINK(1)",
}


@pytest.mark.parametrize("what", list(HOSTILE_TIMES))
def test_an_unparseable_sample_start_is_refused_at_import_in_one_line(capfd, sandbox, small, what):
    code, err = import_code(capfd, sandbox, with_sample_start(small, HOSTILE_TIMES[what], 2))
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: run export: samples[2].started_at: "), err
    assert "is not a time" in err and "ISO 8601 with a UTC offset" in err, err
    assert "\x1b" not in err and "\x07" not in err and len(err) < 400, err
    assert sqlite3.connect(sandbox / "s.sqlite").execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 0


@pytest.mark.parametrize("value", [None, 5, ["2026-05-01T10:00:00+00:00"]])
def test_a_sample_start_that_is_not_text_is_refused(capfd, sandbox, small, value):
    code, err = import_code(capfd, sandbox, with_sample_start(small, value))
    assert code == 2 and "samples[0].started_at: must be str" in err, err


def test_a_sample_start_in_another_zone_is_stored_as_its_utc_instant(capfd, sandbox, small):
    doc = with_sample_start(small, "2026-05-01T10:00:00+09:00")
    doc = with_sample_start(doc, "2026-05-01T10:00:00.123456-02:30", 1)
    code, err = import_code(capfd, sandbox, doc)
    assert code == 0, err
    times = [t for (t,) in sqlite3.connect(sandbox / "s.sqlite").execute("SELECT started_at FROM samples ORDER BY id")]
    assert times[:2] == ["2026-05-01T01:00:00+0000", "2026-05-01T12:30:00+0000"]


def stored_with_bad_sample_starts(capfd, sandbox, small) -> None:
    """A store written by hand or before sample times were checked."""
    code, err = import_code(capfd, sandbox, small)
    assert code == 0, err
    db = sqlite3.connect(sandbox / "s.sqlite")
    ids = [i for (i,) in db.execute("SELECT id FROM samples ORDER BY id")]
    for i, bad in zip(ids, ("[/x]", OSC, "zzz", "=cmd()", "9" * 100_000)):
        db.execute("UPDATE samples SET started_at=? WHERE id=?", (bad, i))
    db.execute("UPDATE samples SET started_at=? WHERE id=?", ("2026-05-01T10:00:00+09:00", ids[-1]))
    db.commit()
    db.close()


def test_an_older_store_s_bad_sample_start_reads_as_absent_said_once(capfd, sandbox, small):
    stored_with_bad_sample_starts(capfd, sandbox, small)
    code, out, err = isobench(capfd, "export", "r1", "--format", "json", "-o", "-")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "treated as absent" in line]
    assert len(notes) == 1 and "samples' start times" in notes[0] and "unexpected" not in err, err
    starts = [row["started_at"] for row in json.loads(out)["samples"]]
    assert starts[:5] == [None] * 5  # one row per sample and metric: one metric here
    assert starts[-1] == "2026-05-01T01:00:00+0000"  # a time of another zone read as its instant
    assert "9999" not in out and "zzz" not in out and "[/x]" not in out


def test_an_older_store_s_bad_sample_start_is_an_empty_csv_cell(capfd, sandbox, small):
    stored_with_bad_sample_starts(capfd, sandbox, small)
    code, _out, err = isobench(capfd, "export", "r1", "--format", "csv", "--dir", "csv")
    assert code == 0 and err.count("treated as absent") == 1, err
    text = (sandbox / "csv" / "samples.csv").read_text()
    assert "=cmd" not in text and "zzz" not in text and "\x1b" not in text
    for args in (["report", "r1"], ["runs"], ["reparse", "r1", "--dry-run"], ["compare", "r1", "r1"]):
        shapes._said.clear()
        code, out, err = isobench(capfd, *args)
        assert code in (0, 1) and "unexpected" not in err and "\x1b" not in out + err, (args, err)


def test_a_reader_of_a_stored_time():
    where = "s.sqlite: run r1: samples' start times"
    shapes._said.clear()
    assert shapes.stored_instant("2026-05-01T10:00:00+0000", where) == "2026-05-01T10:00:00+0000"
    assert shapes.stored_instant(None, where) is None
    for bad in ("[/x]", b"2026", 5, "", "x" * 10_000):
        assert shapes.stored_instant(bad, where) is None
    assert where in shapes._said


# -- click's usage errors quoting user input ---------------------------------------------------

BIG = "x" * 100_000


@pytest.mark.parametrize(
    "args,needle",
    [
        (["compare", "a", "b", "--tolerance", BIG], "Invalid value for '--tolerance': 'xxx"),
        (["report", "--format", BIG], "Invalid value for '--format': 'xxx"),
        (["--" + BIG], "No such option '--xxx"),
        (["runs", "--" + BIG], "No such option '--xxx"),
        ([BIG], "No such command 'xxx"),
        (["fleet", BIG], "No such command 'xxx"),
        (["history", "--since", BIG], "Invalid value for '--since'"),
        (["report", "--format", "md" + OSC + BIG], "Invalid value for '--format'"),
        (["validate"], "Missing argument 'STUDY_FILE'"),
    ],
    ids=lambda a: " ".join(a)[:40] if isinstance(a, list) else None,
)
def test_a_usage_error_is_one_bounded_line(capfd, sandbox, args, needle):
    code, out, err = isobench(capfd, *args)
    assert code == 2 and out == "", err[:500]
    assert err.count("\n") == 1 and err.startswith("error: " + needle), err[:500]
    assert len(err) <= entry.USAGE_LIMIT + 100, len(err)
    assert "\x1b" not in err and "\x07" not in err and "Usage:" not in err
    assert err.rstrip().endswith(" --help`"), err[-200:]  # where to look instead


def test_help_and_no_arguments_are_as_click_prints_them(capfd, sandbox):
    code, out, _ = isobench(capfd, "--help")
    assert code == 0 and out.startswith("Usage: isobench")
    code, out, err = isobench(capfd)
    assert code == 2 and err.startswith("Usage: isobench") and "Commands:" in err  # no command: the help
    code, out, _ = isobench(capfd, "report", "-h")
    assert code == 0 and "--format" in out
