#!/usr/bin/env bash
# make test-stress (issue 21.2): the kfake suite green under load. Starts a
# competing CPU load on every core (one busy loop per CPU of nproc, at the
# tests' own nice level: the scheduler shares each core between them), runs
# go vet and go test -count=3 ./... (every package on the embedded kfake),
# and stops the load on exit, failed or interrupted.
# STRESS_RUNS=N (default 1) does it N times in a row, the load held
# throughout, and prints "test-stress: run k of N passed|FAILED" after each
# and the tally at the end; the exit status is non-zero if any run failed.
# Environment: GO, STRESS_RUNS, STRESS_COUNT (default 3), STRESS_HOGS
# (default nproc), STRESS_ARGS (more go test flags, e.g. -run or -v).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/phase.sh
GO="${GO:-go}"
runs="${STRESS_RUNS:-1}"
count="${STRESS_COUNT:-3}"
hogs="${STRESS_HOGS:-$(nproc)}"

pids=()
run=""
stop_load() {
  local p
  # The run under way (a background job, so that a signal is taken at once).
  if [ -n "$run" ]; then kill_tree "$run"; wait "$run" 2>/dev/null; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [ ${#pids[@]} = 0 ] || echo "test-stress: load stopped (${#pids[@]} busy loops)"
  pids=()
}
trap stop_load EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The build first, unloaded: the load is for the tests.
phase vet -- "$GO" vet ./... || exit
"$GO" test -count=1 -run '^$' ./... >/dev/null || { echo "test-stress: the tests do not build" >&2; exit 1; }

for ((i = 0; i < hogs; i++)); do
  ( trap - INT TERM; while :; do :; done ) &
  pids+=("$!")
done
echo "test-stress: load started: $hogs busy loops on $(nproc) CPUs (pids ${pids[*]})"

passed=0
status=0
for ((k = 1; k <= runs; k++)); do
  s=0
  # shellcheck disable=SC2086 # STRESS_ARGS is a list of flags
  phase "kfake suite under load, -count=$count (run $k of $runs)" -- \
    "$GO" test -count="$count" -timeout 90m ${STRESS_ARGS:-} ./... &
  run=$!
  wait "$run" || s=$?
  run=""
  if [ "$s" = 0 ]; then
    passed=$((passed + 1))
    echo "test-stress: run $k of $runs passed"
  else
    status=$s
    echo "test-stress: run $k of $runs FAILED (exit $s)"
  fi
done
echo "test-stress: $passed of $runs runs passed (go test -count=$count ./... against $hogs busy loops on $(nproc) CPUs)"
exit "$status"
