#!/usr/bin/env bash
# Stops the broker started by kafka-start.sh (SIGTERM, wait, then SIGKILL).
# Fine when nothing runs. --wipe also deletes $KAFKA_STATE_DIR.
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"

wipe=0
[ "${1:-}" = "--wipe" ] && wipe=1
timeout="${KAFKA_STOP_TIMEOUT:-30}"

if pid="$(kafka_pid)"; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $(( timeout * 10 ))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "kafka-stop: pid $pid still alive after ${timeout}s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  echo "kafka-stop: stopped broker (pid $pid)"
else
  echo "kafka-stop: no broker running for $KAFKA_STATE_DIR"
fi
rm -f "$KAFKA_PID_FILE"
if [ "$wipe" = 1 ]; then
  rm -rf "$KAFKA_STATE_DIR"
  echo "kafka-stop: wiped $KAFKA_STATE_DIR"
fi
