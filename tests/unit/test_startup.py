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

import isobench

# the libraries that cost a tenth of a second or more to import
HEAVY = ("scipy", "numpy", "matplotlib", "docker", "requests", "jinja2", "qemu")

SRC = os.path.dirname(os.path.dirname(os.path.abspath(isobench.__file__)))


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
