"""Start-up cost: every `isobench` process (`--help`, `runs`, a bad study
file, each of a fleet's remote calls) loads the command line first, so the
command modules load no heavy library; a command imports what it uses when
it runs (scipy.stats alone is about a second). Checked in a fresh
interpreter, as sys.modules here holds whatever other tests imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import isobench

# the libraries that cost a tenth of a second or more to import
HEAVY = ("scipy", "numpy", "matplotlib", "docker", "requests", "jinja2", "qemu")

SRC = os.path.dirname(os.path.dirname(os.path.abspath(isobench.__file__)))
DATA = Path(__file__).parents[1] / "data" / "quick-20261125.run.json.gz"  # a real quick-study run


def loaded_after(code: str) -> list[str]:
    """The HEAVY libraries a fresh interpreter holds after running CODE."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.splitlines()[-1])
    return [name for name in HEAVY if name in loaded]


def test_loading_the_command_line_loads_no_heavy_library():
    assert loaded_after("import isobench.cli.main") == []


def test_listing_an_empty_store_loads_no_heavy_library(tmp_path):
    from isobench.store.db import Store

    path = str(tmp_path / "empty.sqlite")
    Store(path, create=True).close()
    code = (
        "from isobench.cli.main import main\n"
        f"try:\n    main(['runs', '--store', {path!r}])\nexcept SystemExit as end:\n    assert not end.code, end.code"
    )
    assert loaded_after(code) == []


def test_reports_without_figures_load_no_matplotlib(tmp_path):
    """Only HTML draws figures: a report and a history of a real run in the
    other formats load no matplotlib (half a second; the terminal and Markdown
    go through the same sections)."""
    import gzip

    from isobench.cli.main import main

    export = tmp_path / "run.json"
    export.write_bytes(gzip.open(DATA).read())
    store = str(tmp_path / "s.sqlite")
    main(["import", str(export), "--store", store], standalone_mode=False)
    commands = [
        ["report", "--store", store, "-o", str(tmp_path / "r.txt")],
        ["history", "--format", "md", "--store", store, "-o", str(tmp_path / "h.md")],
    ]
    code = "from isobench.cli.main import main\n" + "".join(
        f"main({argv!r}, standalone_mode=False)\n" for argv in commands
    )
    assert "matplotlib" not in loaded_after(code)
    assert all((tmp_path / name).stat().st_size for name in ("r.txt", "h.md"))
