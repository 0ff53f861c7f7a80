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
# The test broker's ports: defined here only (the defaults elsewhere name this
# file). Below the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range,
# 32768-60999 by default), where any client socket of the machine can hold a
# port at the moment the broker binds it; and apart from the quickstart's
# 19092-19095, the engine tests' random ranges (20000-31999) and bench/run's
# 29092-29094 and 29192-29194.
KAFKA_PLAINTEXT_PORT="${KAFKA_PLAINTEXT_PORT:-18092}"
KAFKA_SASL_PORT="${KAFKA_SASL_PORT:-18093}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-18094}"
KAFKA_SASL_SSL_PORT="${KAFKA_SASL_SSL_PORT:-18095}"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
KAFKA_START_TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

# SASL users (PLAIN and SCRAM-SHA-256/512): a client user and an admin user.
KAFKA_SASL_USER="${KAFKA_SASL_USER:-flexway}"
KAFKA_SASL_PASSWORD="${KAFKA_SASL_PASSWORD:-flexway-secret}"
KAFKA_ADMIN_USER="${KAFKA_ADMIN_USER:-admin}"
KAFKA_ADMIN_PASSWORD="${KAFKA_ADMIN_PASSWORD:-admin-secret}"

KAFKA_BOOTSTRAP="$KAFKA_HOST:$KAFKA_PLAINTEXT_PORT"
KAFKA_SASL_BOOTSTRAP="$KAFKA_HOST:$KAFKA_SASL_PORT"
KAFKA_SASL_SSL_BOOTSTRAP="$KAFKA_HOST:$KAFKA_SASL_SSL_PORT"
# The SASL_SSL listener's own test CA and certificate, made by kafka-start.sh
# (openssl) in the state dir: clients trust $KAFKA_CA_FILE.
KAFKA_TLS_DIR="$KAFKA_STATE_DIR/tls"
KAFKA_CA_FILE="$KAFKA_TLS_DIR/ca.crt"
KAFKA_TLS_PASSWORD="${KAFKA_TLS_PASSWORD:-flexway-test-keystore}"
# KIP-368 on the SASL_SSL listener: sessions end after this, and a client
# (the gateway) must re-authenticate before it.
KAFKA_SASL_SSL_REAUTH_MS="${KAFKA_SASL_SSL_REAUTH_MS:-30000}"
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
  KAFKA_SASL_SSL_PORT KAFKA_SASL_SSL_BOOTSTRAP KAFKA_TLS_DIR KAFKA_CA_FILE KAFKA_SASL_SSL_REAUTH_MS \
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

# port_open HOST PORT: something accepts connections there.
port_open() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# port_users HOST PORT prints the sockets of this machine bound to PORT, in
# any state but TIME-WAIT (a listener, or a client socket whose local port it
# is: either makes the broker's bind fail), with their process when ss can
# see it; it fails when there is none. Without ss, only a listener is seen.
port_users() {
  local out
  if command -v ss >/dev/null 2>&1; then
    out="$(ss -Htanp exclude time-wait "( sport = :$2 )" 2>/dev/null || true)"
  elif port_open "$1" "$2"; then
    out="a process listens on $1:$2"
  fi
  [ -n "${out:-}" ] || return 1
  printf '%s\n' "$out"
}

# kafka_check_ports refuses, with what holds it and what to do, a port of the
# broker that is taken; it warns of one inside the ephemeral range.
kafka_check_ports() {
  local var p users lo hi taken=0
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { lo=32768; hi=60999; }
  for var in KAFKA_PLAINTEXT_PORT KAFKA_SASL_PORT KAFKA_CONTROLLER_PORT KAFKA_SASL_SSL_PORT; do
    p="${!var}"
    if [ "$p" -ge "$lo" ] && [ "$p" -le "$hi" ]; then
      echo "kafka-start: warning: $var=$p lies in the ephemeral range $lo-$hi: a client socket of any process may hold it when the broker binds" >&2
    fi
    if users="$(port_users "$KAFKA_HOST" "$p")"; then
      echo "kafka-start: $KAFKA_HOST:$p ($var) is taken, the broker cannot bind it; held by:" >&2
      printf '%s\n' "$users" | sed 's/^/  /' >&2
      taken=1
    fi
  done
  if [ "$taken" = 1 ]; then
    echo "kafka-start: stop what holds it (a broker of these scripts with another KAFKA_STATE_DIR: KAFKA_STATE_DIR=... scripts/kafka-stop.sh)," >&2
    echo "  or choose free ports below $lo: KAFKA_PLAINTEXT_PORT=... KAFKA_SASL_PORT=... KAFKA_CONTROLLER_PORT=... KAFKA_SASL_SSL_PORT=... (now $KAFKA_PLAINTEXT_PORT, $KAFKA_SASL_PORT, $KAFKA_CONTROLLER_PORT, $KAFKA_SASL_SSL_PORT)" >&2
    return 1
  fi
}
