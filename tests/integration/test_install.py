"""The tool as another project installs it (docs/install.md, docs/ci.md):
the wheel built by the project's own command (the fleet's build_wheel),
`uv tool install` into a scratch tool directory (nothing global changes),
then, from a directory outside the clone and without it on any path: the
shipped studies listed and validated by name, the project's own study file
validated, a name that is neither refused in one line, and `setup --check`
answering. Real uv, real pip, the real wheel. Run under the heavy lock:
  flock /tmp/isobench-heavy.lock env PYTHONPATH=$PWD/src python -m pytest tests/integration/test_install.py -q -s
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from isobench.fleet.controller import build_wheel

pytestmark = [pytest.mark.integration, pytest.mark.beside]

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"  # pinned in requirements-setup.lock, installed by setup.sh


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    """The installed `isobench` and an environment that reaches nothing of the clone."""
    assert UV.exists(), f"{UV}: uv is installed by scripts/setup.sh (requirements-setup.lock)"
    base = tmp_path_factory.mktemp("install")
    wheel = build_wheel(ROOT, base / "dist")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(UV_TOOL_DIR=str(base / "tools"), UV_TOOL_BIN_DIR=str(base / "bin"))
    env["PATH"] = f"{base / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    r = subprocess.run(
        [str(UV), "tool", "install", "--python", "/usr/bin/python3", "-c", str(ROOT / "requirements.lock"), str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr
    elsewhere = base / "project"
    elsewhere.mkdir()
    return base / "bin" / "isobench", env, elsewhere


def isobench(tool, *args):
    exe, env, cwd = tool
    return subprocess.run([str(exe), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_installed_tool_lists_and_validates_the_shipped_studies(tool):
    exe, env, _ = tool
    r = isobench(tool, "studies", "--format", "json")
    assert r.returncode == 0, r.stderr
    files = {s["name"]: Path(s["file"]) for s in json.loads(r.stdout)["studies"]}
    assert Path(env["UV_TOOL_DIR"]) in files["quick"].parents  # the wheel's copy, not the clone's
    r = isobench(tool, "validate", "quick", "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["study"] == "quick", r.stderr
    r = isobench(tool, "validate", "quik")
    assert r.returncode == 2 and "shipped: " in r.stderr and "quick" in r.stderr and len(r.stderr.splitlines()) == 1


def test_another_projects_own_study_validates_outside_the_clone(tool):
    _, _, cwd = tool
    (cwd / "bench").mkdir()
    shutil.copy(ROOT / "studies" / "quick.toml", cwd / "bench" / "isolation.toml")
    r = isobench(tool, "validate", "bench/isolation.toml", "--budget", "30m", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["study_file"] == "bench/isolation.toml"


def test_setup_check_answers_from_the_wheel(tool):
    r = isobench(tool, "setup", "--check")
    assert r.returncode in (0, 1), r.stderr
    assert r.stdout.startswith("host ready") if r.returncode == 0 else "`isobench setup`" in r.stdout
