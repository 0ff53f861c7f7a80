#!/usr/bin/env bash
# The engine's end-to-end tests against a real Apache Kafka broker (issue 4):
# installs Kafka (cached), builds the Java client (cached), starts a
# single-node KRaft broker with fresh state (one broker serves the three
# listeners), runs
#   FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA=$KAFKA_BOOTSTRAP go test -count=1 -timeout 15m ./engine/
# once per way the gateway reaches the broker (FLEXWAY_TEST_KAFKA_SECURITY:
# plaintext, sasl_ssl, sasl_plaintext; KAFKA_TEST_SECURITY chooses), then,
# alone on the broker, internal/faults' TestRealKafkaKilledAndRestarted (the
# broker killed with SIGKILL mid-run and started again on its state: only a
# broker this script started, and only without go test arguments), and
# stops the broker it started, whether the tests pass or not.
#
# KAFKA_TEST_PLAN chooses how much runs (issue 21.3):
#   ci   (make test, make test-kafka) the whole suite over PLAINTEXT; over
#        SASL_SSL and SASL_PLAINTEXT only the tests that depend on how the
#        gateway reaches its broker (KAFKA_SASL_TESTS below), the two passes
#        at once (the same broker, their own listeners and topic prefixes).
#   all  (make test-kafka-all) the whole suite over each of the three, in turn.
#
# A broker already running for $KAFKA_STATE_DIR is used as it is and left
# running (each test env works under its own random topic prefix).
# Arguments are passed to go test after the plan's own, e.g.
#   scripts/test-kafka.sh -run Java -v
# Environment: the scripts/kafka-env.sh settings (KAFKA_STATE_DIR,
# KAFKA_PLAINTEXT_PORT, ...), KAFKA_FRESH (default 1), KAFKA_KEEP=1 keeps the
# broker this script started, GO (default go).
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"
cd "$FLEXWAY_ROOT"
GO="${GO:-go}"
. "$FLEXWAY_ROOT/scripts/phase.sh"
PLAN="${KAFKA_TEST_PLAN:-ci}"
case "$PLAN" in ci|all) ;; *) echo "test-kafka: KAFKA_TEST_PLAN=$PLAN: want ci or all" >&2; exit 2 ;; esac

# The tests that depend on how the gateway reaches its broker, the only ones
# the ci plan runs over the SASL listeners: each entry is a regular
# expression that must match whole test names of ./engine/, and each must
# match at least one (checked below by go test -list: an entry matching
# nothing would be a silent hole).
KAFKA_SASL_TESTS=(
  # engine/upstream_secure_test.go: the upstream's TLS (its CA, a client
  # certificate, a refused certificate), SASL (PLAIN, SCRAM-SHA-256/512), a
  # wrong password, KIP-368 renewal. These reach a secured in-process kfake
  # of their own, the same in every pass.
  'TestUpstream.*'
  TestPauseBrokerConnectionTLS
  # The same against Apache Kafka's SASL listeners (they skip elsewhere):
  # re-authentication on SASL_SSL's 30 s sessions, a wrong password.
  'TestRealKafka.*'
  # engine/dial_test.go: a broker unreachable or unknown, and back.
  TestBrokerUnreachableClosesClient
  TestUnknownBrokerClosesClient
  TestBrokerUnreachableResetsCertSession
  # A plain produce and consume end to end through the gateway: franz-go
  # (engine/e2e_franz_test.go) and the Java client (engine/e2e_java_test.go).
  TestProduceConsumeThroughGateway
  TestJavaProduceIdempotent
)
sasl_run="^($(IFS='|'; echo "${KAFKA_SASL_TESTS[*]}"))\$"

t0=$(date +%s)
logs="$(mktemp -d "${TMPDIR:-/tmp}/flexway-test-kafka.XXXXXX")"
pids=()
stop_broker=0
started=0 # this script started the broker: the kill phase may kill it
cleanup() {
  local p
  for p in "${pids[@]}"; do kill_tree "$p"; done
  if [ "$stop_broker" = 1 ]; then "$FLEXWAY_ROOT/scripts/kafka-stop.sh" || true; fi
  rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Errors are handled line by line: phase runs a function where set -e does not.
setup() {
  if [ "$PLAN" = ci ]; then
    # Every entry of KAFKA_SASL_TESTS names a test (the build is cached for the passes).
    local all entry missing=0
    all="$("$GO" test -list '.*' ./engine/)" || { echo "$all" >&2; echo "test-kafka: go test -list ./engine/ failed" >&2; return 1; }
    all="$(grep '^Test' <<<"$all")"
    for entry in "${KAFKA_SASL_TESTS[@]}"; do
      if ! grep -Eqx "$entry" <<<"$all"; then
        echo "test-kafka: KAFKA_SASL_TESTS: '$entry' matches no test of ./engine/ (renamed? fix the list in scripts/test-kafka.sh)" >&2
        missing=1
      fi
    done
    [ "$missing" = 0 ] || return 1
    echo "test-kafka: over SASL, $(grep -Ec "$sasl_run" <<<"$all") tests: -run '$sasl_run'"
  fi
  "$FLEXWAY_ROOT/scripts/install-kafka.sh" || return
  if command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
    "$FLEXWAY_ROOT/scripts/build-java-client.sh" || return
  else
    echo "test-kafka: no JDK (javac) or Maven: the Java client tests skip (and fail under CI)" >&2
  fi
  local pid
  if pid="$(kafka_pid)"; then
    echo "test-kafka: using the broker already running (pid $pid) on $KAFKA_BOOTSTRAP; left running"
  else
    if [ "${KAFKA_KEEP:-0}" != 1 ]; then stop_broker=1; fi
    KAFKA_FRESH="${KAFKA_FRESH:-1}" "$FLEXWAY_ROOT/scripts/kafka-start.sh" || return
    started=1
  fi
}
phase "kafka set-up" -- setup || exit

# The way the gateway reaches the broker is FLEXWAY_TEST_KAFKA_SECURITY (issue 9):
# PLAINTEXT, SASL_SSL with SCRAM-SHA-512 (the listener's test CA, KIP-368
# sessions), SASL_PLAINTEXT with PLAIN. The tests' own direct clients use
# PLAINTEXT.
export FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA="$KAFKA_BOOTSTRAP" \
  FLEXWAY_TEST_KAFKA_SASL_SSL="$KAFKA_SASL_SSL_BOOTSTRAP" FLEXWAY_TEST_KAFKA_SASL="$KAFKA_SASL_BOOTSTRAP" \
  FLEXWAY_TEST_KAFKA_CA="$KAFKA_CA_FILE" FLEXWAY_TEST_KAFKA_USER="$KAFKA_SASL_USER" \
  FLEXWAY_TEST_KAFKA_PASSWORD="$KAFKA_SASL_PASSWORD"
# What a test needs to kill the broker and start it again on its state (the
# kill phase below): its pid file, and the command that starts it and waits
# until it serves.
export FLEXWAY_TEST_KAFKA_PID_FILE="$KAFKA_PID_FILE" \
  FLEXWAY_TEST_KAFKA_RESTART="KAFKA_FRESH=0 '$FLEXWAY_ROOT/scripts/kafka-start.sh'"

# pass SEC [GO TEST ARGS...]: the engine's tests with the gateway reaching the broker as SEC.
pass() {
  local sec="$1"; shift
  echo "test-kafka: FLEXWAY_TEST_KAFKA_SECURITY=$sec FLEXWAY_TEST_UPSTREAM=kafka FLEXWAY_TEST_KAFKA=$KAFKA_BOOTSTRAP $GO test -count=1 -timeout 15m $* ./engine/"
  FLEXWAY_TEST_KAFKA_SECURITY="$sec" "$GO" test -count=1 -timeout 15m "$@" ./engine/
}

status=0
ways="${KAFKA_TEST_SECURITY:-plaintext sasl_ssl sasl_plaintext}"
if [ "$PLAN" = all ]; then
  for sec in $ways; do
    phase "kafka $sec" -- pass "$sec" "$@" || status=$?
  done
else
  for sec in $ways; do
    [ "$sec" = plaintext ] || continue
    phase "kafka plaintext" -- pass plaintext "$@" || status=$?
  done
  # The SASL passes at once: each waits on the broker, its sessions and its
  # timeouts far more than it computes (one of them idles through 30 s
  # sessions for 70 s); their output is kept apart and printed as each ends.
  for sec in $ways; do
    [ "$sec" = plaintext ] && continue
    phase --log "$logs/$sec" "kafka $sec (gateway-to-broker tests)" -- pass "$sec" -run "$sasl_run" "$@" &
    pids+=("$!")
  done
  for p in "${pids[@]}"; do
    wait "$p" || status=$?
  done
  pids=()
fi
# The broker killed (issue 25.2): after every pass, as it takes the broker
# away from whatever else uses it.
kill_pass() {
  echo "test-kafka: $GO test -count=1 -timeout 5m -run '^TestRealKafkaKilledAndRestarted\$' ./internal/faults/"
  "$GO" test -count=1 -timeout 5m -run '^TestRealKafkaKilledAndRestarted$' ./internal/faults/
}
if [ "$started" = 1 ] && [ "$#" = 0 ]; then
  phase "kafka broker killed" -- kill_pass || status=$?
else
  echo "test-kafka: the broker-killed test skipped: $( [ "$started" = 1 ] && echo "go test arguments given" || echo "the broker was running before this script")"
fi
echo "test-kafka: tests $( [ "$status" = 0 ] && echo passed || echo "FAILED (exit $status)" ) against Apache Kafka $KAFKA_VERSION, plan $PLAN, in $(( $(date +%s) - t0 )) s"
exit "$status"
