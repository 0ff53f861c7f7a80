#!/usr/bin/env bash
# Installs Apache Kafka (broker + tools + clients + Log4j 2 backend) from Maven
# Central into $KAFKA_HOME_DIR/libs (default ~/.cache/flexway/kafka-<version>/libs)
# with bench/kafka/pom.xml. Idempotent: a marker file records a finished install,
# and a second run returns at once.
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"

if kafka_installed; then
  echo "install-kafka: Kafka $KAFKA_VERSION already installed in $KAFKA_LIBS"
  exit 0
fi

command -v mvn >/dev/null 2>&1 || { echo "install-kafka: mvn not found (run scripts/install-deps.sh)" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "install-kafka: java not found (Kafka 4.x needs Java 17+)" >&2; exit 1; }

start=$(date +%s)
echo "install-kafka: fetching Kafka $KAFKA_VERSION from Maven Central into $KAFKA_LIBS"
mkdir -p "$KAFKA_HOME_DIR"
tmp="$(mktemp -d "$KAFKA_HOME_DIR/libs.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
if ! mvn -q -B -f "$KAFKA_POM" -Dkafka.version="$KAFKA_VERSION" \
     dependency:copy-dependencies -DoutputDirectory="$tmp" >"$KAFKA_HOME_DIR/mvn.log" 2>&1; then
  echo "install-kafka: mvn failed, log tail ($KAFKA_HOME_DIR/mvn.log):" >&2
  tail -n 40 "$KAFKA_HOME_DIR/mvn.log" >&2
  exit 1
fi
for j in "kafka_2.13-$KAFKA_VERSION.jar" "kafka-tools-$KAFKA_VERSION.jar" "kafka-clients-$KAFKA_VERSION.jar"; do
  [ -f "$tmp/$j" ] || { echo "install-kafka: $j missing after mvn" >&2; exit 1; }
done
rm -rf "$KAFKA_LIBS"
mv "$tmp" "$KAFKA_LIBS"
trap - EXIT
kafka_marker_content >"$KAFKA_MARKER"
echo "install-kafka: installed $(ls "$KAFKA_LIBS" | wc -l) jars ($(du -sh "$KAFKA_LIBS" | cut -f1)) in $(( $(date +%s) - start )) s"
