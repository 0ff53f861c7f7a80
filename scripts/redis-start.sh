#!/usr/bin/env bash
# Starts a throw-away redis-server on 127.0.0.1:$REDIS_PORT (default 6390):
# daemonized, no persistence (no RDB, no AOF). Idempotent.
set -euo pipefail
REDIS_PORT="${REDIS_PORT:-6390}"
REDIS_STATE_DIR="${REDIS_STATE_DIR:-/tmp/flexway-redis-$REDIS_PORT}"

command -v redis-server >/dev/null 2>&1 || { echo "redis-start: redis-server not found (run scripts/install-deps.sh)" >&2; exit 1; }

if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; then
  echo "redis-start: already running on 127.0.0.1:$REDIS_PORT"
  exit 0
fi

mkdir -p "$REDIS_STATE_DIR"
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --daemonize yes \
  --save '' --appendonly no --dir "$REDIS_STATE_DIR" \
  --pidfile "$REDIS_STATE_DIR/redis.pid" --logfile "$REDIS_STATE_DIR/redis.log" \
  --protected-mode yes

for _ in $(seq 1 100); do
  if [ "$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ]; then
    echo "redis-start: redis ready on 127.0.0.1:$REDIS_PORT (pid $(cat "$REDIS_STATE_DIR/redis.pid" 2>/dev/null))"
    exit 0
  fi
  sleep 0.1
done
echo "redis-start: redis did not answer on 127.0.0.1:$REDIS_PORT within 10 s" >&2
tail -n 20 "$REDIS_STATE_DIR/redis.log" >&2 || true
exit 1
