#!/usr/bin/env bash
# The engine's end-to-end tests against a real Apache Kafka broker (issue 4):
# installs Kafka (cached), builds the Java client (cached), starts a
# single-node KRaft broker with fresh state, runs
#   FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA=$KAFKA_BOOTSTRAP go test -count=1 -timeout 15m ./engine/
# once per way the gateway reaches the broker (FLEXWAY_TEST_KAFKA_SECURITY:
# plaintext, sasl_ssl, sasl_plaintext; KAFKA_TEST_SECURITY chooses),
# and stops the broker it started, whether the tests pass or not.
# A broker already running for $KAFKA_STATE_DIR is used as it is and left
# running (each test env works under its own random topic prefix).
# Arguments are passed to go test, e.g. scripts/test-kafka.sh -run Java -v
# Environment: the scripts/kafka-env.sh settings (KAFKA_STATE_DIR,
# KAFKA_PLAINTEXT_PORT, ...), KAFKA_FRESH (default 1), KAFKA_KEEP=1 keeps the
# broker this script started, GO (default go).
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"
cd "$FLEXWAY_ROOT"
GO="${GO:-go}"
t0=$(date +%s)

"$FLEXWAY_ROOT/scripts/install-kafka.sh"
if command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
  "$FLEXWAY_ROOT/scripts/build-java-client.sh"
else
  echo "test-kafka: no JDK (javac) or Maven: the Java client tests skip (and fail under CI)" >&2
fi

if pid="$(kafka_pid)"; then
  echo "test-kafka: using the broker already running (pid $pid) on $KAFKA_BOOTSTRAP; left running"
else
  if [ "${KAFKA_KEEP:-0}" != 1 ]; then
    trap '"$FLEXWAY_ROOT/scripts/kafka-stop.sh" || true' EXIT
  fi
  KAFKA_FRESH="${KAFKA_FRESH:-1}" "$FLEXWAY_ROOT/scripts/kafka-start.sh"
fi

# The suite runs once per way the gateway reaches the broker (issue 9):
# PLAINTEXT, SASL_SSL with SCRAM-SHA-512 (the listener's test CA, KIP-368
# sessions), SASL_PLAINTEXT with PLAIN. The tests' own direct clients use
# PLAINTEXT. KAFKA_TEST_SECURITY chooses (default: all three).
export FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA="$KAFKA_BOOTSTRAP" \
  FLEXWAY_TEST_KAFKA_SASL_SSL="$KAFKA_SASL_SSL_BOOTSTRAP" FLEXWAY_TEST_KAFKA_SASL="$KAFKA_SASL_BOOTSTRAP" \
  FLEXWAY_TEST_KAFKA_CA="$KAFKA_CA_FILE" FLEXWAY_TEST_KAFKA_USER="$KAFKA_SASL_USER" \
  FLEXWAY_TEST_KAFKA_PASSWORD="$KAFKA_SASL_PASSWORD"
status=0
summary=()
t_setup=$(date +%s)
for sec in ${KAFKA_TEST_SECURITY:-plaintext sasl_ssl sasl_plaintext}; do
  t1=$(date +%s)
  echo "test-kafka: FLEXWAY_TEST_KAFKA_SECURITY=$sec FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA=$KAFKA_BOOTSTRAP $GO test -count=1 -timeout 15m $* ./engine/"
  s=0
  FLEXWAY_TEST_KAFKA_SECURITY="$sec" "$GO" test -count=1 -timeout 15m "$@" ./engine/ || s=$?
  t2=$(date +%s)
  summary+=("$sec: $( [ $s = 0 ] && echo passed || echo "FAILED (exit $s)" ) in $((t2 - t1)) s")
  [ $s = 0 ] || status=$s
done
for line in "${summary[@]}"; do echo "test-kafka: $line"; done
echo "test-kafka: tests $( [ $status = 0 ] && echo passed || echo "FAILED (exit $status)" ) against Apache Kafka $KAFKA_VERSION (set-up $((t_setup - t0)) s)"
exit "$status"
