#!/usr/bin/env bash
# Quick start, step 2: the whole test suite (unit tests, then integration
# tests against the real Docker Engine and tools). Runs setup first so a
# fresh clone proves the install steps too, then the linter, formatter check
# and type checker (scripts/lint.sh, docs/development.md).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/lint.sh

# Unit tests are pure: in parallel on every core (pytest-xdist). Integration
# tests share the engine, the run lock and the host's quiet: one at a time.
# Options (-x, -k EXPR) go to both runs; naming tests (a path that exists)
# runs just those, serially. See docs/testing.md.
pytest=(.venv/bin/python -m pytest -ra --durations=25)
for arg in "$@"; do
  [[ -e ${arg%%::*} ]] && exec "${pytest[@]}" "$@"
done
unit=0 integration=0
"${pytest[@]}" -n auto "$@" tests/unit || unit=$?
"${pytest[@]}" "$@" tests/integration || integration=$?
# 5 is "no test selected": fine for one half (-k EXPR names tests of the other)
for rc in $unit $integration; do
  [[ $rc -eq 0 || $rc -eq 5 ]] || exit "$rc"
done
[[ $unit -eq 5 && $integration -eq 5 ]] && exit 5
exit 0
