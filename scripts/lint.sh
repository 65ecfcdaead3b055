#!/usr/bin/env bash
# The habits (docs/development.md): the linter, the formatter's check and the
# type checker, with the versions pinned in requirements.lock. ./test.sh runs
# this before pytest. Every check runs; the script fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${ISOBENCH_VENV:-.venv}/bin  # ISOBENCH_VENV: another checkout's venv (a git worktree has none)
failed=()
run() {
  echo "lint: $*"
  "$@" || failed+=("${*:1:2}")
}
run "$BIN/ruff" check --output-format concise src tests benchmarks
run "$BIN/ruff" format --check --output-format concise src tests benchmarks
run "$BIN/mypy"
if ((${#failed[@]})); then
  echo "lint: failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: clean"
