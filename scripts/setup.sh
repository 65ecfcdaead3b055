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
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.lock
  cp requirements.lock .venv/.installed-lock
fi
.venv/bin/pip install -q --no-deps -e . >/dev/null 2>&1 || .venv/bin/pip install -q --no-deps -e .

echo "setup: building or reusing the isobench image"
.venv/bin/isobench images build
