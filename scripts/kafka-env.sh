# shellcheck shell=bash
# Shared settings for the flexway Kafka scripts. Source it: . scripts/kafka-env.sh
# Every value can be overridden from the environment.

FLEXWAY_ROOT="${FLEXWAY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
KAFKA_POM="${KAFKA_POM:-$FLEXWAY_ROOT/bench/kafka/pom.xml}"

# The pinned version lives in the pom (<kafka.version>); KAFKA_VERSION overrides it.
if [ -z "${KAFKA_VERSION:-}" ]; then
  KAFKA_VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$KAFKA_POM" | head -n 1)"
fi
KAFKA_HOME_DIR="${KAFKA_HOME_DIR:-${HOME:-/root}/.cache/flexway/kafka-$KAFKA_VERSION}"
KAFKA_LIBS="$KAFKA_HOME_DIR/libs"
KAFKA_MARKER="$KAFKA_HOME_DIR/.installed"
KAFKA_CLASSPATH="$KAFKA_LIBS/*"

KAFKA_STATE_DIR="${KAFKA_STATE_DIR:-/tmp/flexway-kafka}"
KAFKA_HOST="${KAFKA_HOST:-127.0.0.1}"
KAFKA_PLAINTEXT_PORT="${KAFKA_PLAINTEXT_PORT:-39092}"
KAFKA_SASL_PORT="${KAFKA_SASL_PORT:-39093}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-39094}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

# SASL users (PLAIN and SCRAM-SHA-256/512): a client user and an admin user.
KAFKA_SASL_USER="${KAFKA_SASL_USER:-flexway}"
KAFKA_SASL_PASSWORD="${KAFKA_SASL_PASSWORD:-flexway-secret}"
KAFKA_ADMIN_USER="${KAFKA_ADMIN_USER:-admin}"
KAFKA_ADMIN_PASSWORD="${KAFKA_ADMIN_PASSWORD:-admin-secret}"

KAFKA_BOOTSTRAP="$KAFKA_HOST:$KAFKA_PLAINTEXT_PORT"
KAFKA_SASL_BOOTSTRAP="$KAFKA_HOST:$KAFKA_SASL_PORT"
KAFKA_PID_FILE="$KAFKA_STATE_DIR/kafka.pid"
KAFKA_LOG_DIR="$KAFKA_STATE_DIR/logs"
KAFKA_LOG_FILE="$KAFKA_LOG_DIR/server.log"

# ProducerPerformance: Kafka 4.2 renamed --producer-props to --command-property
# (and --producer.config to --command-config).
case "$KAFKA_VERSION" in
  4.0.*|4.1.*|3.*) KAFKA_PERF_PROPS_FLAG="--producer-props"; KAFKA_PERF_CONFIG_FLAG="--producer.config" ;;
  *)               KAFKA_PERF_PROPS_FLAG="--command-property"; KAFKA_PERF_CONFIG_FLAG="--command-config" ;;
esac

export FLEXWAY_ROOT KAFKA_POM KAFKA_VERSION KAFKA_HOME_DIR KAFKA_LIBS KAFKA_CLASSPATH \
  KAFKA_STATE_DIR KAFKA_HOST KAFKA_PLAINTEXT_PORT KAFKA_SASL_PORT KAFKA_CONTROLLER_PORT \
  KAFKA_BOOTSTRAP KAFKA_SASL_BOOTSTRAP KAFKA_SASL_USER KAFKA_SASL_PASSWORD \
  KAFKA_PERF_PROPS_FLAG KAFKA_PERF_CONFIG_FLAG

kafka_installed() {
  [ -f "$KAFKA_MARKER" ] && [ "$(cat "$KAFKA_MARKER")" = "$(kafka_marker_content)" ]
}

kafka_marker_content() {
  echo "kafka=$KAFKA_VERSION pom=$(sha256sum <"$KAFKA_POM" | cut -c1-16)"
}

# kafka_pid prints the pid of the running broker of this state dir, or fails.
kafka_pid() {
  local pid
  [ -f "$KAFKA_PID_FILE" ] || return 1
  pid="$(cat "$KAFKA_PID_FILE" 2>/dev/null)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # guard against pid reuse: it must be our broker
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $KAFKA_STATE_DIR/server.properties" || return 1
  echo "$pid"
}

# port_open HOST PORT
port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}
