#!/usr/bin/env bash
# Quick start, step 2: the whole test suite (unit tests, then integration
# tests against the real Docker Engine and tools). Runs setup first so a
# fresh clone proves the install steps too, then the linter, formatter check
# and type checker (scripts/lint.sh, docs/development.md).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/lint.sh
exec .venv/bin/python -m pytest -ra --durations=25 "$@"
