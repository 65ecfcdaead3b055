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
# tests share the engine, the run lock and the host's quiet: one at a time,
# except the fleet's, which run beside them: their hosts are containers of
# their own (own run lock, store and label, a subnet no other test uses) and
# much of their time is spent waiting on ssh, Ansible and polls, which the
# unit tests, keeping both cores busy, would not leave room for
# (docs/testing.md#lanes). Options (-x, -k EXPR) go to every run; naming
# tests (a path that exists) runs just those, serially.
pytest=(.venv/bin/python -m pytest -ra --durations=25)
for arg in "$@"; do
  [[ -e ${arg%%::*} ]] && exec "${pytest[@]}" "$@"
done
unit=0 quota=0 integration=0 fleet=0
"${pytest[@]}" -n auto "$@" tests/unit || unit=$?
# Tests whose effect is a CPU quota run before the fleet's lane starts: a
# quota bites only where the work could otherwise get more, and three fleet
# hosts beside a CPU neighbour left a 0.4-CPU container about as fast as
# native (docs/testing.md#lanes)
quota_tests=(tests/integration/test_budget.py tests/integration/test_calibrate.py tests/integration/test_history.py)
"${pytest[@]}" "$@" "${quota_tests[@]}" || quota=$?
fleet_tests=tests/integration/test_fleet.py
fleet_log=$(mktemp /tmp/isobench-fleet-lane.XXXXXX)
fleet_tmp=$(mktemp -d /tmp/isobench-fleet-lane-tmp.XXXXXX)
# (trap - INT: a background job starts with SIGINT ignored, and pytest only
# tears its fixtures down on KeyboardInterrupt)
(trap - INT; exec "${pytest[@]}" --basetemp "$fleet_tmp/t" "$@" "$fleet_tests") >"$fleet_log" 2>&1 &
fleet_pid=$!
# an interrupted suite stops the fleet lane too (its fixture removes the hosts)
stop_fleet() {
  if [[ -n $fleet_pid ]]; then kill -INT "$fleet_pid" 2>/dev/null || true; wait "$fleet_pid" || true; fi
  rm -rf "$fleet_log" "$fleet_tmp"
}
trap stop_fleet EXIT
ignore=(--ignore "$fleet_tests")
for t in "${quota_tests[@]}"; do ignore+=(--ignore "$t"); done
"${pytest[@]}" "$@" "${ignore[@]}" tests/integration || integration=$?
wait "$fleet_pid" || fleet=$?
fleet_pid=""
echo "== the fleet's integration tests (run beside the others) =="
cat "$fleet_log"
# 5 is "no test selected": fine for one part (-k EXPR names tests of another)
for rc in $unit $quota $integration $fleet; do
  [[ $rc -eq 0 || $rc -eq 5 ]] || exit "$rc"
done
[[ $unit -eq 5 && $quota -eq 5 && $integration -eq 5 && $fleet -eq 5 ]] && exit 5
exit 0
