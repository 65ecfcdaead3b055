"""Every string field of a real run export x every format that reads it
(issue 36, docs/hostile-inputs.md): deterministic, no seed.

The export is a real quick-study run (tests/data/quick-20261125.run.json.gz).
Its string fields are gathered into groups (a column, a fact, a key of a JSON
column, one name renamed everywhere it appears). For each hostile text, each
group alone is given it and checked as `import` checks it: accepted, or
refused in one line naming the field. Then every group that was accepted is
given it at once, the run is imported through the CLI, and every command that
reads renders it once: `runs`, `report` (terminal, Markdown, HTML with
figures, JSON), `compare`, `history` (terminal, Markdown), `export` (CSV,
JSON), `reparse --dry-run`. Pass: exit 0 (or 1: a verdict) or 2 with one line,
never 3; no raw escape in any output, no Markdown image, tag or entity left
unescaped in Markdown, no tag in HTML, no CSV cell that is a formula."""

from __future__ import annotations

import copy
import csv
import gzip
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from isobench.cli import entry
from isobench.store import shapes
from isobench.store.transfer import TransferError, check_export

DATA = Path(__file__).parents[1] / "data" / "quick-20261125.run.json.gz"
OSC = "\x1b]52;c;aGk=\x07"
# Every hostile kind in one text: a CSV formula first (it acts only at a
# cell's start), a terminal escape, rich markup, a Markdown image, mathtext,
# an entity and a tag.
PRINTABLE = "=cmd() [/x] ![p](https://example.invalid/p.png) $x^2$ &amp; <b>x</b>"
HOSTILE = {
    "escapes and markup": PRINTABLE.replace(" [/x]", OSC + " [/x]"),
    "markup only": PRINTABLE,  # what a name may hold: names refuse control characters
    "a lone surrogate": "x\ud800y",
}
JSON_COLUMNS = ("host_facts", "facts", "vals", "extra", "environments")
TABLES = ("runs", "env_facts", "metric_defs", "samples")
KEY = "<key>"


def original() -> dict:
    return json.load(gzip.open(DATA))


def unpack(doc: dict) -> dict:
    for table in TABLES:
        for row in doc[table]:
            for col in JSON_COLUMNS:
                if isinstance(row.get(col), str):
                    row[col] = json.loads(row[col])
    return doc


def pack_row(row: dict) -> dict:
    for col in JSON_COLUMNS:
        if col in row and not isinstance(row[col], str):
            row[col] = json.dumps(row[col])
    return row


def pack(doc: dict) -> dict:
    for table in TABLES:
        for row in doc[table]:
            pack_row(row)
    return doc


Place = tuple[tuple, tuple, object, object]


def walk(value, path: tuple, steps: tuple) -> Iterator[Place]:
    """(class of the place, steps from the doc to its container, container,
    key) of every string value and dict key; the class is the path with list
    indices as "*"."""
    if isinstance(value, dict):
        for k in list(value):
            yield path + (KEY,), steps, value, k
            if isinstance(value[k], str):
                yield path + (k,), steps, value, k
            else:
                yield from walk(value[k], path + (k,), steps + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, str):
                yield path + ("*",), steps, value, i
            else:
                yield from walk(v, path + ("*",), steps + (i,))


def places(doc: dict, within: tuple = ()) -> Iterator[Place]:
    """Every place, or those in one (table, column) WITHIN."""
    for table in within[:1] or TABLES:
        for r, row in enumerate(doc[table]):
            for col, value in row.items():
                if within and col != within[1]:
                    continue
                if isinstance(value, str):
                    yield (table, col), (table, r), row, col
                else:
                    yield from walk(value, (table, col), (table, r, col))


# Names appear in several tables: each is renamed everywhere at once (a
# metric renamed in metric_defs only would just have no values).
RENAMED = {("runs", "environments", "*"), ("env_facts", "env"), ("samples", "env"), ("runs", "baseline")}
RENAMED |= {(t, c) for t in ("metric_defs", "samples") for c in ("workload", "ccase")}
RENAMED |= {("metric_defs", "metric"), ("samples", "vals", KEY), ("samples", "extra", "validity", KEY)}
SKIPPED = {(t, "run_id") for t in TABLES}  # import sets it


def classes(doc: dict) -> list[tuple]:
    seen: dict[tuple, None] = {}
    for cls, _, _, _ in places(doc):
        if cls not in RENAMED | SKIPPED:
            seen.setdefault(cls)
    return list(seen)


def set_class(doc: dict, cls: tuple, text: str) -> None:
    """Every place of CLS given TEXT."""
    give(cls, [(box, key) for c, _, box, key in list(places(doc, cls[:2])) if c == cls], text)


def give(cls: tuple, where: list[tuple], text: str) -> None:
    """Each (container, key) of class CLS given TEXT (a dict key: the first key of each dict renamed)."""
    done: set[int] = set()
    for box, key in where:
        if cls[-1] == KEY:
            if id(box) not in done and key in box:
                done.add(id(box))
                box[text] = box.pop(key)
        else:
            box[key] = text


def rename(doc: dict, what: str, old: str, new: str) -> None:
    """One name renamed wherever it appears."""
    for row in doc["metric_defs"] + doc["samples"] + doc["env_facts"]:
        if what in ("workload", "ccase") and row.get(what) == old:
            row[what] = new
        if what == "env" and row.get("env") == old:
            row["env"] = new
        if what == "metric":
            if row.get("metric") == old:
                row["metric"] = new
            for col, sub in (("vals", None), ("extra", "validity")):
                box = row.get(col)
                box = box.get(sub) if isinstance(box, dict) and sub else box
                if isinstance(box, dict) and old in box:
                    box[new] = box.pop(old)
    if what == "env":
        run = doc["runs"][0]
        run["environments"] = [new if e == old else e for e in run["environments"]]
        run["baseline"] = new if run["baseline"] == old else run["baseline"]


def name_groups(doc: dict) -> dict[str, Callable[[dict, str], None]]:
    k = doc["metric_defs"][0]
    return {
        "an environment name": lambda d, t: rename(d, "env", "docker-host", t),
        "the baseline's name": lambda d, t: rename(d, "env", d["runs"][0]["baseline"], t),
        "a workload name": lambda d, t: rename(d, "workload", k["workload"], t),
        "a case name": lambda d, t: rename(d, "ccase", k["ccase"], t),
        "a metric name": lambda d, t: rename(d, "metric", k["metric"], t),
        "a unit": lambda d, t: [r.update(unit=t) for r in d["metric_defs"] if r["metric"] == k["metric"]],
        "a failed sample's error": lambda d, t: d["samples"][-1].update(status="failed", error=t),
        "a comment in the study text": lambda d, t: d["runs"][0].update(
            study_text=d["runs"][0]["study_text"] + f"\n# {t}\n"
        ),
        "a string in the study text": lambda d, t: d["runs"][0].update(
            study_text=d["runs"][0]["study_text"] + f"\n[extra]\nnote = {json.dumps(t)}\n"
        ),
    }


def groups(doc: dict) -> dict[str, Callable[[dict, str], None]]:
    out = name_groups(doc)
    for cls in classes(doc):
        out["/".join(map(str, cls))] = lambda d, t, cls=cls: set_class(d, cls, t)
    return out


@pytest.fixture(scope="module")
def shadow():
    return unpack(original())


@pytest.fixture(scope="module")
def located(shadow) -> tuple[dict, dict[tuple, list[tuple[tuple, object]]]]:
    """The whole export packed once, and every class's places as (steps to
    the container, key): walked once, not once per class."""
    where: dict[tuple, list[tuple[tuple, object]]] = {}
    for cls, steps, _, key in places(shadow):
        where.setdefault(cls, []).append((steps, key))
    return pack(copy.deepcopy(shadow)), where


def alone(shadow: dict, located: tuple[dict, dict], cls: tuple, text: str) -> dict:
    """pack(doc) of a copy of SHADOW with CLS given TEXT (set_class), built
    from the export packed once: only the rows holding the class are copied,
    given it and packed again."""
    packed, where = located
    rows: dict[tuple, dict] = {}
    boxes = []
    for steps, key in where[cls]:
        if steps[:2] not in rows:
            rows[steps[:2]] = copy.deepcopy(shadow[steps[0]][steps[1]])
        box = rows[steps[:2]]
        for step in steps[2:]:
            box = box[step]
        boxes.append((box, key))
    give(cls, boxes, text)
    doc = dict(packed)
    for table in TABLES:
        doc[table] = [pack_row(rows[table, r]) if (table, r) in rows else row for r, row in enumerate(packed[table])]
    return doc


def accepted_groups(shadow: dict, located: tuple[dict, dict], text: str) -> tuple[list[str], dict[str, str]]:
    """Each group alone given TEXT, checked as import checks it."""
    ok, refused = [], {}
    exports = {}
    for name, change in name_groups(shadow).items():  # a name is renamed in several tables
        doc = copy.deepcopy(shadow)
        change(doc, text)
        exports[name] = pack(doc)
    for cls in classes(shadow):
        exports["/".join(map(str, cls))] = alone(shadow, located, cls, text)
    assert list(exports) == list(groups(shadow)), "the same groups as the readers' run is given"
    for name, doc in exports.items():
        try:
            check_export(doc)
            ok.append(name)
        except TransferError as exc:
            refused[name] = str(exc)
    return ok, refused


def isobench(capfd, *args) -> tuple[int, str, str]:
    shapes._said.clear()  # "said once" is per command: each is a process of its own
    try:
        entry.main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capfd.readouterr()
    return code, out, err


@pytest.fixture
def sandbox(tmp_path, monkeypatch, capfd):
    from isobench.core import lock

    monkeypatch.setattr(lock, "live_run_ids", lambda *a: frozenset())  # not this host's live runs
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "s.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    (tmp_path / "base.json").write_text(json.dumps(original()))
    code, _, err = isobench(capfd, "import", "base.json", "--rename", "base")
    assert code == 0, err
    return tmp_path


MD_UNESCAPED = re.compile(r"(?<!\\)(!\[p\]|&amp;|<b>)")


def readers(figures: bool) -> list[tuple[list[str], str]]:
    """(argv, the file it writes or "" for stdout)."""
    html = ["--figures", "figs"] if figures else []
    return [
        (["runs"], ""),
        (["report", "r1"], ""),
        (["report", "r1", "--format", "md", "-o", "r.md", "--force"], "r.md"),
        (["report", "r1", "--format", "html", "-o", "r.html", "--force", *html], "r.html"),
        (["report", "r1", "--format", "json", "-o", "-"], ""),
        (["compare", "base", "r1"], ""),
        (["history"], ""),
        (["history", "--format", "md", "-o", "h.md", "--force"], "h.md"),
        (["export", "r1", "--format", "csv", "--dir", "csv"], "csv/samples.csv"),
        (["export", "r1", "--format", "json", "-o", "-"], ""),
        (["reparse", "r1", "--dry-run"], ""),
    ]


def problems(args: list[str], code: int, out: str, err: str, written: str) -> list[str]:
    found = []
    if code not in (0, 1, 2):
        found.append(f"exit {code}: {err[-300:]}")
    if code == 2 and (err.count("\n") != 1 or not err.startswith("error: ")):
        found.append(f"exit 2 but not one line: {err[-300:]}")
    for where, text in (("stdout", out), ("stderr", err), ("file", written)):
        if "\x1b" in text or "\x07" in text:
            found.append(f"a raw escape in its {where}")
    if args[-3:-1] == ["md", "-o"] or "h.md" in args:
        found += [f"unescaped Markdown {m!r}" for m in MD_UNESCAPED.findall(written)]
    if "r.html" in args and "<b>x</b>" in written:
        found.append("a tag in the HTML")
    if "figs" in args:
        for svg in sorted(Path("figs").glob("*.svg")):
            if "\x1b" in svg.read_text(encoding="utf-8"):
                found.append(f"a raw escape in {svg.name}")
    if args[:1] == ["export"] and "csv" in args:
        for name in ("samples.csv", "cells.csv", "counters.csv"):
            with open(Path("csv") / name, newline="", encoding="utf-8") as f:
                cells = [c for row in csv.reader(f) for c in row]
            found += [f"{name}: a formula {c[:20]!r}" for c in cells if c[:1] in ("=", "@")]
    return found


def test_a_class_alone_is_the_whole_export_given_it(shadow, located):
    """`alone` (rows copied and packed one by one) builds what set_class on
    a copy of the whole export builds: every class that renames a key or
    lies in a list, and the first of each table."""
    every = classes(shadow)
    firsts = {cls[0]: cls for cls in reversed(every)}
    for cls in [c for c in every if c[-1] == KEY or "*" in c] + list(firsts.values()):
        doc = copy.deepcopy(shadow)
        set_class(doc, cls, HOSTILE["markup only"])
        assert alone(shadow, located, cls, HOSTILE["markup only"]) == pack(doc), cls


@pytest.mark.parametrize("what", list(HOSTILE))
def test_every_string_field_in_every_format(capfd, sandbox, shadow, located, what):
    text = HOSTILE[what]
    ok, refused = accepted_groups(shadow, located, text)
    for name, message in refused.items():  # what import refuses, it refuses in one line naming the field
        assert message.startswith("run export: ") and "\n" not in message, (name, message)
        assert "\x1b" not in message and len(message) < 600, (name, message)
    assert ok, "nothing accepted: the readers would see nothing hostile"
    doc = copy.deepcopy(shadow)
    for name, change in groups(doc).items():
        if name in ok:
            change(doc, text)
    (sandbox / "x.json").write_text(json.dumps(pack(doc)))
    code, _, err = isobench(capfd, "import", "x.json", "--rename", "r1")
    assert code == 0, f"each of {len(ok)} groups imports alone, all at once: {err}"
    failures = []
    for args, output in readers(figures=what == "escapes and markup"):
        code, out, err = isobench(capfd, *args)
        written = ""
        if output and Path(output).exists():
            written = Path(output).read_text(encoding="utf-8", errors="replace")
        failures += [f"{' '.join(args)}: {p}" for p in problems(args, code, out, err, written)]
    assert not failures, "\n".join(failures)
    print(f"{what}: {len(ok)} groups imported and read, {len(refused)} refused at import")
