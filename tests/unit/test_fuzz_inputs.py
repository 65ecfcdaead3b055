"""A seeded fuzz pass over what users hand the CLI: study files and run
exports, each a real one with a few values, keys or shapes replaced by hostile
ones. Whatever the input, the command answers with a status of 0, 1 or 2 (never
3, "unexpected"), prints no traceback, writes nothing outside its temporary
directory, and an export it accepts can be read back by `report` and `runs`.

The generator is seeded: a failure names its seed, and `FUZZ_SEED=N pytest
-k fuzz` replays that one case."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
from tests.synthetic_runs import simple_run

from isobench.cli import entry
from isobench.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "studies").glob("*.toml"))
N_STUDIES = 300
N_EXPORTS = 150

HOSTILE = [
    -1,
    0,
    1,
    2**31,
    2**63 - 1,
    -(2**63),
    1e308,
    -1e-308,
    math.inf,
    -math.inf,
    math.nan,
    0.5,
    True,
    False,
    "",
    " ",
    "auto",
    "5",
    "../../x",
    "/tmp/isobench-fuzz-escape",
    "$(touch /tmp/isobench-pwned)",
    "a;b",
    "x\n",
    "\x1b]52;c;aGVsbG8=\x07",
    "$\\cmd{$",
    "[bold]x",
    "ü" * 40,
    "a" * 5000,
    "docker",
    "native",
    "vm",
    [],
    [1],
    ["a", "b"],
    [[[]]],
    {},
    {"a": 1},
    {"kind": "docker"},
    # round three: what stored values may hold (docs/hostile-inputs.md)
    2**64,
    -(2**70),
    1e-320,
    4e307,
    -1e10,
    "\ud800",
    "x\udcff",
    "[/x]",
    "[link=https://example.invalid]x",
    "![p](https://example.invalid/p.png)",
    "&amp;&#0;",
    "=HYPERLINK(1)",
    "$x^2$",
    "m" * 200,
    "2026-05-01T10:00:00+09:00",
    "2026-05-01T10:00:00",
    "zzz",
    "preset." + "a." * 40 + "a = 1",
    [[1]],
    [[1.0, 2.0]],
    [{"n": 1}],
    [1, 2],
    {"check": "x"},
    {"status": "warn"},
]


def hostile(rng: random.Random):
    return copy.deepcopy(rng.choice(HOSTILE))


def paths(doc, prefix=()):
    """Every (path, value) in a nested dict/list document."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def mutate(doc, rng: random.Random, n: int):
    """n random edits: a value replaced, a key dropped or added, a table renamed."""
    doc = copy.deepcopy(doc)
    for _ in range(n):
        where = [p for p, _ in paths(doc) if p]
        if not where:
            break
        path = rng.choice(where)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = rng.random()
        if op < 0.6:
            parent[key] = hostile(rng)
        elif op < 0.75 and isinstance(parent, dict):
            del parent[key]
        elif op < 0.9 and isinstance(parent, dict):
            parent[rng.choice(["command", "x", "../x", "kind", "preset", "\x1b[2J", ""])] = hostile(rng)
        elif isinstance(parent, dict) and isinstance(key, str):
            parent[rng.choice(["../../etc", "a b", "x\n", "A", "a" * 40, "ok-name"])] = parent.pop(key)
    return doc


def scrub_none(doc):
    """TOML has no null."""
    if isinstance(doc, dict):
        return {k: scrub_none(v) for k, v in doc.items() if v is not None}
    if isinstance(doc, list):
        return [scrub_none(v) for v in doc if v is not None]
    return doc


def isobench(capfd, *args: str) -> tuple[int, str]:
    try:
        entry.main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out, err = capfd.readouterr()
    return code, err


def check(code: int, err: str, what: str) -> None:
    assert code in (0, 1, 2), f"{what}: exit {code}: {err[-500:]}"
    assert "Traceback" not in err and "unexpected" not in err, f"{what}: {err[-500:]}"
    if code == 2:
        assert err.strip().splitlines()[-1].startswith("error: "), f"{what}: {err[-500:]}"


def seeds(n: int) -> list[int]:
    return [int(os.environ["FUZZ_SEED"])] if "FUZZ_SEED" in os.environ else list(range(n))


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ISOBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ISOBENCH_STORE", str(tmp_path / "store.sqlite"))
    monkeypatch.delenv("ISOBENCH_DEBUG", raising=False)
    before = set(os.listdir("/tmp"))
    yield tmp_path
    escaped = {p for p in set(os.listdir("/tmp")) - before if "isobench-fuzz" in p or "isobench-pwned" in p}
    assert not escaped, f"written outside the sandbox: {escaped}"


def test_fuzzed_study_files(sandbox, capfd):
    originals = [tomllib.loads(p.read_text()) for p in STUDIES]
    accepted = 0
    for seed in seeds(N_STUDIES):
        rng = random.Random(seed)
        doc = scrub_none(mutate(rng.choice(originals), rng, rng.randint(1, 4)))
        study = sandbox / f"s{seed}.toml"
        try:
            study.write_text(tomli_w.dumps(doc))
        except (TypeError, ValueError):  # a shape TOML cannot hold: write it raw
            study.write_text(json.dumps(doc))
        code, err = isobench(capfd, "validate", str(study))
        check(code, err, f"seed {seed} (FUZZ_SEED={seed}), {study.name}")
        accepted += code == 0
    # the pass means something only if most inputs were refused and some got through
    assert accepted < N_STUDIES // 2
    assert not (sandbox / "results").exists() and not (sandbox / "store.sqlite").exists()


@pytest.fixture(scope="module")
def real_export(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("src") / "src.sqlite"))
    simple_run(store, "r1", {"native": [10.0, 10.2, 9.9], "docker-nat": [9.8, 9.9, 9.7]})
    from isobench.store.transfer import export_run

    return export_run(store, "r1")


def test_fuzzed_exports(sandbox, capfd, real_export):
    accepted = 0
    for seed in seeds(N_EXPORTS):
        rng = random.Random(10_000 + seed)
        doc = mutate(real_export, rng, rng.randint(1, 3))
        run_id = f"fz{seed}"
        f = sandbox / f"e{seed}.json"
        f.write_text(json.dumps(doc))
        code, err = isobench(capfd, "import", str(f), "--rename", run_id)
        what = f"seed {seed} (FUZZ_SEED={seed})"
        check(code, err, what)
        if code == 0:
            accepted += 1
            for args in (["report", run_id, "--format", "md", "-o", str(sandbox / "r.md"), "--force"], ["runs"]):
                code, err = isobench(capfd, *args)
                assert code == 0, f"{what}: imported, then {args[0]} failed: {err[-500:]}"
    assert 0 < accepted < N_EXPORTS
    # nothing but the inputs, the store and what -o named
    allowed = {"store.sqlite", "store.sqlite-wal", "store.sqlite-shm", "r.md", "home"}
    assert {p.name for p in sandbox.iterdir() if not p.name.startswith("e")} <= allowed


# -- round three: every field of an export, then every command that reads ---------------------

JSON_COLUMNS = ("host_facts", "facts", "vals", "extra", "environments")
N_DEEP = int(os.environ.get("FUZZ_DEEP", "80"))


def unpack(doc):
    """The export with its JSON text columns as structures, so a mutation
    can reach inside them (a fact, a histogram bin, one value)."""
    doc = copy.deepcopy(doc)
    for rows in doc.values():
        for row in rows if isinstance(rows, list) else ():
            for col in JSON_COLUMNS:
                if isinstance(row.get(col), str):
                    row[col] = {"json": json.loads(row[col])}
    return doc


def pack(doc):
    for rows in doc.values():
        for row in rows if isinstance(rows, list) else ():
            for col in JSON_COLUMNS:
                if isinstance(row, dict) and isinstance(row.get(col), dict) and set(row[col]) == {"json"}:
                    row[col] = json.dumps(row[col]["json"])
    return doc


TEXTS = [v for v in HOSTILE if isinstance(v, str)] + ["a\x1b]52;c;aGk=\x07", "[bold]x[/]", "<script>x</script>"]


def mutate_strings(doc, rng: random.Random, n: int):
    """n string values (a fact, a name, a time, the study text) replaced by
    hostile text: most of these import, so the readers meet them."""
    doc = copy.deepcopy(doc)
    where = [p for p, v in paths(doc) if p and isinstance(v, str)]
    for path in rng.sample(where, min(n, len(where))):
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = rng.choice(TEXTS) if rng.random() < 0.8 else parent[path[-1]] + rng.choice(TEXTS)
    return doc


READERS = (
    ["runs"],
    ["report", "{id}"],
    ["report", "{id}", "--format", "md", "-o", "r.md", "--force"],
    ["report", "{id}", "--format", "html", "-o", "r.html", "--force", "--figures", "figs"],
    ["compare", "{id}", "base"],
    ["history"],
    ["history", "--format", "md"],
    ["reparse", "{id}", "--dry-run"],
    ["export", "{id}", "-o", "csv"],
)


def test_fuzzed_export_fields_read_by_every_command(sandbox, capfd, real_export, monkeypatch):
    """Every field of an export (inside its JSON columns too) mutated, imported,
    then read by every command that reads: exit 0, 1 or 2 with one line, never 3."""
    from isobench.core import lock

    monkeypatch.setattr(lock, "live_run_ids", lambda *a: frozenset())  # not this host's live runs
    shadow = unpack(real_export)
    (sandbox / "base.json").write_text(json.dumps(real_export))
    assert isobench(capfd, "import", str(sandbox / "base.json"), "--rename", "base")[0] == 0
    accepted = commands = 0
    for seed in seeds(N_DEEP):
        rng = random.Random(20_000 + seed)
        change = mutate_strings if seed % 2 else mutate
        doc = pack(change(shadow, rng, rng.randint(1, 3)))
        run_id = f"fd{seed}"
        f = sandbox / f"e{seed}.json"
        f.write_text(json.dumps(doc))
        what = f"seed {seed} (FUZZ_SEED={seed})"
        code, err = isobench(capfd, "import", str(f), "--rename", run_id)
        check(code, err, what)
        if code != 0:
            continue
        accepted += 1
        for args in READERS:
            said = getattr(sys.modules.get("isobench.store.shapes"), "_said", set())
            said.clear()  # "said once" is per command: each is a process of its own
            code, err = isobench(capfd, *[a.replace("{id}", run_id) for a in args])
            commands += 1
            check(code, err, f"{what}, then {args[0]}")
    print(f"{N_DEEP} exports, {accepted} imported, {commands} commands")
    assert 0 < accepted < N_DEEP and commands
    allowed = {
        "store.sqlite",
        "store.sqlite-wal",
        "store.sqlite-shm",
        "r.md",
        "r.html",
        "figs",
        "csv",
        "home",
        "base.json",
    }
    assert {p.name for p in sandbox.iterdir() if not p.name.startswith("e")} <= allowed
