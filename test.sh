#!/usr/bin/env bash
# Quick start, step 2: the whole test suite (unit tests, and integration
# tests against the real Docker Engine and tools). Runs setup first so a
# fresh clone proves the install steps too, then the linter, formatter check
# and type checker (scripts/lint.sh, docs/development.md).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/lint.sh

# Three lanes (docs/testing.md#lanes). First, alone: the integration tests
# whose effect is a CPU quota (a quota bites only where the work could
# otherwise get more CPU). Then the other integration tests one at a time
# (they share the engine, the run lock and several measure an effect), with
# two lanes beside them, each printed at the end: the unit tests, pure, on
# every core at nice 10 (the idle time between and inside the integration
# tests is theirs; where both want a core, the integration test gets about
# nine tenths of it), and the fleet's tests, whose hosts are containers of
# their own (own run lock, store and label, a subnet no other test uses) and
# which mostly wait on ssh, Ansible and polls. Options (-x, -k EXPR) go to
# every run; naming tests (a path that exists) runs just those, serially.
pytest=(.venv/bin/python -m pytest -ra --durations=25)
for arg in "$@"; do
  [[ -e ${arg%%::*} ]] && exec "${pytest[@]}" "$@"
done
unit=0 quota=0 integration=0 fleet=0
quota_tests=(tests/integration/test_budget.py tests/integration/test_calibrate.py tests/integration/test_history.py)
"${pytest[@]}" "$@" "${quota_tests[@]}" || quota=$?
fleet_tests=tests/integration/test_fleet.py
lanes=$(mktemp -d /tmp/isobench-lanes.XXXXXX)
# (trap - INT: a background job starts with SIGINT ignored, and pytest only
# tears its fixtures down on KeyboardInterrupt; --basetemp: pytest prunes
# older numbered temp dirs, another lane's included)
(trap - INT; exec nice -n 10 "${pytest[@]}" -n auto --basetemp "$lanes/unit" "$@" tests/unit) >"$lanes/unit.log" 2>&1 &
unit_pid=$!
(trap - INT; exec "${pytest[@]}" --basetemp "$lanes/fleet" "$@" "$fleet_tests") >"$lanes/fleet.log" 2>&1 &
fleet_pid=$!
# an interrupted suite stops the lanes beside it too (the fleet's fixture removes the hosts)
stop_lanes() {
  local pid
  for pid in $unit_pid $fleet_pid; do
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" || true
  done
  rm -rf "$lanes"
}
trap stop_lanes EXIT
ignore=(--ignore "$fleet_tests")
for t in "${quota_tests[@]}"; do ignore+=(--ignore "$t"); done
"${pytest[@]}" "$@" "${ignore[@]}" tests/integration || integration=$?
wait "$unit_pid" || unit=$?
wait "$fleet_pid" || fleet=$?
unit_pid="" fleet_pid=""
echo "== the unit tests (run beside the integration tests) =="
cat "$lanes/unit.log"
echo "== the fleet's integration tests (run beside the others) =="
cat "$lanes/fleet.log"
# 5 is "no test selected": fine for one part (-k EXPR names tests of another)
for rc in $unit $quota $integration $fleet; do
  [[ $rc -eq 0 || $rc -eq 5 ]] || exit "$rc"
done
[[ $unit -eq 5 && $quota -eq 5 && $integration -eq 5 && $fleet -eq 5 ]] && exit 5
exit 0
