#!/usr/bin/env bash
# The host lane (issue 54, docs/testing.md#the-host-lane): a Debian 12 guest
# with systemd and the unified cgroup hierarchy, isobench installed in it
# from this checkout's wheel and used as a new user would. As root, on a
# host where `isobench setup` has built the image (its kernel and VM disk).
#   tests/hosts/run.sh [--only STEP...] [--no-seed-image]
# Work files under /var/tmp/isobench-hostlane (removed at the end), its log
# /var/tmp/isobench-hostlane.log (kept). Exit 0 when every step passes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${ISOBENCH_PYTHON:-$ROOT/.venv/bin/python}
[ "$(id -u)" -eq 0 ] || { echo "run.sh: run as root (it boots a guest and writes /var/tmp)" >&2; exit 2; }
DIST=$(mktemp -d /var/tmp/isobench-hostlane-dist.XXXXXX)
trap 'rm -rf "$DIST"' EXIT
# the wheel as docs/install.md builds it, from a copy of the checkout's files
# (tracked and new, not ignored) so the build leaves nothing in the checkout
git -C "$ROOT" ls-files -z -c -o --exclude-standard | tar -C "$ROOT" --null -T - -c | tar -x -C "$DIST"
(cd "$DIST" && timeout 300 python3 -m pip wheel -q --no-deps -w dist . >/dev/null)
PYTHONPATH="$ROOT/src" "$PY" "$ROOT/tests/hosts/lane.py" --wheel "$(ls "$DIST"/dist/isobench-*.whl)" "$@"
