#!/usr/bin/env bash
# Stops the redis-server started by redis-start.sh. Fine when nothing runs.
set -euo pipefail
REDIS_PORT="${REDIS_PORT:-6390}"
REDIS_STATE_DIR="${REDIS_STATE_DIR:-/tmp/flexway-redis-$REDIS_PORT}"
pidf="$REDIS_STATE_DIR/redis.pid"
pid="$(cat "$pidf" 2>/dev/null || true)"

if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; then
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
fi
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
   && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "redis-server.*:$REDIS_PORT"; then
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$pidf"
if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; then
  echo "redis-stop: something still answers on 127.0.0.1:$REDIS_PORT" >&2
  exit 1
fi
echo "redis-stop: redis on 127.0.0.1:$REDIS_PORT stopped (or was not running)"
