#!/usr/bin/env bash
# make test (issue 21): what the tests need installed (and Jaeger built,
# scripts/build-jaeger.sh), go vet, then at once
#   - the kfake suite (go test ./...: every package on the embedded kfake,
#     packages in parallel as go test runs them), the sockets' fallbacks of
#     systems without Linux's calls (engine/kernel and engine/conn with
#     -tags flexway_portable), then the Debian package's test;
#   - scripts/test-kafka.sh's ci plan: a fresh Apache Kafka broker, the
#     engine's suite over PLAINTEXT, the gateway-to-broker tests over SASL_SSL
#     and SASL_PLAINTEXT.
# The two share no port: the broker has its fixed ports below the ephemeral
# range (scripts/kafka-env.sh), the gateways and kfake clusters of the tests
# random ones (internal/testkit); and the engine's tests wait far more than
# they compute. Each phase prints a line when it starts and when it ends with
# its time (scripts/phase.sh), and the end lines are repeated at the end.
# Every phase runs even when one fails; the exit status is the last failure's.
# Environment: GO, MAKE, TEST_KAFKA_ARGS (go test flags for the Kafka passes),
# TEST_SERIAL=1 runs the two sequences one after the other.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/phase.sh
GO="${GO:-go}"
MAKE="${MAKE:-make}"
PHASE_SUMMARY="$(mktemp "${TMPDIR:-/tmp}/flexway-test.XXXXXX")"
export PHASE_SUMMARY GO
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill_tree "$p"; done
  rm -f "$PHASE_SUMMARY"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

phase deps -- scripts/install-deps.sh || exit
phase "jaeger build" -- scripts/build-jaeger.sh || exit # the OTLP test's receiver, cached in bin/tools
phase vet -- "$MAKE" --no-print-directory vet GO="$GO" || exit # go vet, no tracked file over 1 MiB

kfake_seq() {
  local s=0
  phase "kfake suite" -- "$GO" test -count=1 -timeout 20m ./... || s=$?
  phase "portable fallbacks" -- "$GO" test -count=1 -tags flexway_portable ./engine/kernel ./engine/conn || s=$?
  phase "package test" -- "$MAKE" --no-print-directory test-package || s=$?
  return "$s"
}
kafka_seq() {
  # shellcheck disable=SC2086 # TEST_KAFKA_ARGS is a list of flags
  KAFKA_TEST_PLAN=ci scripts/test-kafka.sh ${TEST_KAFKA_ARGS:-}
}

status=0
if [ "${TEST_SERIAL:-0}" = 1 ]; then
  kfake_seq || status=$?
  kafka_seq || status=$?
else
  kfake_seq & pids+=("$!")
  kafka_seq & pids+=("$!")
  for p in "${pids[@]}"; do wait "$p" || status=$?; done
  pids=()
fi
echo "== summary:"
cat "$PHASE_SUMMARY"
exit "$status"
