#!/usr/bin/env bash
# Runs a Java main class with the installed Kafka classpath, e.g.
#   scripts/kafka-tool.sh org.apache.kafka.tools.ProducerPerformance --topic t \
#       --num-records 10000 --record-size 1024 --throughput -1 \
#       $KAFKA_PERF_PROPS_FLAG bootstrap.servers=127.0.0.1:18092
#   scripts/kafka-tool.sh org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:18092 --list
# Tools log warnings to stderr. KAFKA_TOOL_HEAP (default -Xmx512m) and
# KAFKA_TOOL_OPTS add JVM options. Installs Kafka first if needed.
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"
if [ $# -lt 1 ]; then
  echo "usage: $0 MAIN_CLASS [ARGS...]" >&2
  exit 2
fi
kafka_installed || "$FLEXWAY_ROOT/scripts/install-kafka.sh" >&2
cls="$1"; shift
# shellcheck disable=SC2086
exec java ${KAFKA_TOOL_HEAP:--Xmx512m} -Djava.awt.headless=true \
  -Dlog4j2.configurationFile="$FLEXWAY_ROOT/bench/kafka/tools-log4j2.properties" \
  ${KAFKA_TOOL_OPTS:-} -cp "$KAFKA_CLASSPATH" "$cls" "$@"
