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
  # times faster than pip; pip stays the fallback should uv not install
  if .venv/bin/pip install -q -r requirements-setup.lock && .venv/bin/uv --version >/dev/null; then
    .venv/bin/uv pip install -q --python .venv/bin/python -r requirements.lock
  else
    echo "setup: uv did not install; pip installs the lock instead (slower)"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r requirements.lock
  fi
  cp requirements.lock .venv/.installed-lock
fi
.venv/bin/pip install -q --no-deps -e . >/dev/null 2>&1 || .venv/bin/pip install -q --no-deps -e .

# actionlint, for the CI examples' check (tests/unit/test_ci_examples.py):
# built from its Go module, since the PyPI wrappers download it from GitHub
ACTIONLINT=v1.7.12
if ! .venv/bin/actionlint -version 2>/dev/null | grep -qx "$ACTIONLINT"; then
  if command -v go >/dev/null; then
    echo "setup: building actionlint $ACTIONLINT into .venv/bin (go install)"
    GOBIN="$PWD/.venv/bin" GOFLAGS=-buildvcs=false nice -n 19 go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT"
  else
    echo "setup: no Go toolchain on PATH: actionlint is not built, and the CI examples' actionlint check is skipped" >&2
  fi
fi

echo "setup: building or reusing the isobench image"
.venv/bin/isobench images build

# The image is built from today's archive; the host's packages that the
# tools run on may be older (a security update the host has not taken), and
# then a native side and a container run other programs. Bring those to the
# image's versions; where apt cannot (the archive moved on), say so and go
# on: `isobench setup --check` names what still differs.
.venv/bin/isobench setup --match-image --yes || echo "setup: the host's packages could not all be brought to the image's versions (above); \`isobench setup --check\` lists them" >&2
