#!/usr/bin/env bash
# Everything isobench needs, idempotent: host packages and Docker Engine,
# the Python environment from the lock file, the isobench image.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $(id -u) -eq 0 ]] || { echo "setup: run as root (it installs packages and starts dockerd)" >&2; exit 1; }

bash scripts/install-host.sh

# Debian's own python3, so a fresh Debian 12 machine needs nothing else.
PY=/usr/bin/python3
if [[ ! -x .venv/bin/python ]]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
if ! cmp -s requirements.lock .venv/.installed-lock 2>/dev/null; then
  echo "setup: installing Python dependencies from requirements.lock"
  # uv (pinned in requirements-setup.lock) installs the same pins about five
  # times faster than pip; pip stays the fallback should uv not install.
  # --compile-bytecode: as pip does, and not left to each module's first
  # import (below)
  if .venv/bin/pip install -q -r requirements-setup.lock && .venv/bin/uv --version >/dev/null; then
    .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -r requirements.lock
  else
    echo "setup: uv did not install; pip installs the lock instead (slower)"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r requirements.lock
  fi
  cp requirements.lock .venv/.installed-lock
  touch .venv/.compiled
fi
# The byte code, compiled once here: where PYTHONDONTWRITEBYTECODE is set (CI
# shells, containers) or the venv is read-only, Python never caches what it
# compiles, and every isobench command compiled scipy, numpy, rich and its own
# modules from source again, about 2 s of CPU each (docs/development.md#start-up).
# A venv installed before this line compiles once; src/ is checked every time
# (0.5 s the first, then only what changed).
if [[ ! -e .venv/.compiled ]]; then
  echo "setup: byte-compiling .venv"
  .venv/bin/python -m compileall -q -j 0 .venv/lib >/dev/null || true
  touch .venv/.compiled
fi
.venv/bin/python -m compileall -q src >/dev/null || true
.venv/bin/pip install -q --no-deps -e . >/dev/null 2>&1 || .venv/bin/pip install -q --no-deps -e .

echo "setup: building or reusing the isobench image"
.venv/bin/isobench images build
