#!/usr/bin/env bash
# Builds the Java client of the interoperability suite (interop/java) with
# Maven against org.apache.kafka:kafka-clients $KAFKA_VERSION (the broker's
# version, pinned in bench/kafka/pom.xml): interop/java/target/classes and its
# dependencies in interop/java/target/lib. Run it with
#   java -cp 'interop/java/target/classes:interop/java/target/lib/*' dev.flexway.interop.Main <command> ...
# Cached and idempotent: a marker records the hash of the pom, the sources and
# the version; a second run with nothing changed returns at once. Concurrent
# runs (parallel test processes) wait for each other (flock).
# --print-classpath prints the classpath on stdout when done.
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"

JAVA_DIR="${FLEXWAY_JAVA_CLIENT_DIR:-$FLEXWAY_ROOT/interop/java}"
TARGET="$JAVA_DIR/target"
MARKER="$TARGET/.flexway-built"
CLASSPATH_OUT="$TARGET/classes:$TARGET/lib/*"

print_cp=0
[ "${1:-}" = "--print-classpath" ] && print_cp=1

for tool in mvn javac java; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "build-java-client: $tool not found (a JDK 17+ and Maven: scripts/install-deps.sh)" >&2; exit 1; }
done

fingerprint() {
  {
    echo "kafka=$KAFKA_VERSION"
    sha256sum "$JAVA_DIR/pom.xml"
    (cd "$JAVA_DIR" && find src -type f -print0 | sort -z | xargs -0 sha256sum)
  } | sha256sum | cut -c1-32
}

mkdir -p "$TARGET"
exec 9>"$TARGET/.lock"
flock 9

want="$(fingerprint)"
if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$want" ] \
   && [ -f "$TARGET/classes/dev/flexway/interop/Main.class" ] \
   && [ -f "$TARGET/lib/kafka-clients-$KAFKA_VERSION.jar" ]; then
  [ "$print_cp" = 1 ] && echo "$CLASSPATH_OUT" || echo "build-java-client: up to date ($TARGET, kafka-clients $KAFKA_VERSION)"
  exit 0
fi

start=$(date +%s)
rm -f "$MARKER"
rm -rf "$TARGET/lib" "$TARGET/classes"   # no stale jar of another version beside the new one
log="$TARGET/mvn.log"
if ! mvn -B -q -f "$JAVA_DIR/pom.xml" -Dkafka.version="$KAFKA_VERSION" package >"$log" 2>&1; then
  echo "build-java-client: mvn package failed, log tail ($log):" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
[ -f "$TARGET/lib/kafka-clients-$KAFKA_VERSION.jar" ] || {
  echo "build-java-client: kafka-clients-$KAFKA_VERSION.jar missing from $TARGET/lib after mvn" >&2; exit 1; }
echo "$want" >"$MARKER"
echo "build-java-client: built $JAVA_DIR against kafka-clients $KAFKA_VERSION in $(( $(date +%s) - start )) s" >&2
if [ "$print_cp" = 1 ]; then echo "$CLASSPATH_OUT"; fi
