#!/usr/bin/env bash
# Starts a single-node KRaft Kafka broker (combined broker + controller) on loopback
# in the background and waits until it serves metadata.
#   PLAINTEXT       $KAFKA_HOST:$KAFKA_PLAINTEXT_PORT  (default 127.0.0.1:18092)
#   SASL_PLAINTEXT  $KAFKA_HOST:$KAFKA_SASL_PORT       (default 127.0.0.1:18093)
#                   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; user flexway / flexway-secret
#   CONTROLLER      $KAFKA_HOST:$KAFKA_CONTROLLER_PORT (default 127.0.0.1:18094)
#   SASL_SSL        $KAFKA_HOST:$KAFKA_SASL_SSL_PORT   (default 127.0.0.1:18095)
#                   SCRAM-SHA-512 over TLS, same users; its certificate (for
#                   127.0.0.1 and localhost) from a test CA made here with openssl,
#                   $KAFKA_CA_FILE; sessions of $KAFKA_SASL_SSL_REAUTH_MS ms (KIP-368)
# State (data, logs, pid, generated configs) lives in $KAFKA_STATE_DIR
# (default /tmp/flexway-kafka); KAFKA_FRESH=1 wipes it first.
# The ports are scripts/kafka-env.sh's (its comment says why they lie where
# they do); a port taken is refused before anything starts, with what holds it.
# Idempotent: a broker already running for this state dir is left as it is.
set -euo pipefail
. "$(dirname "$0")/kafka-env.sh"

if pid="$(kafka_pid)"; then
  echo "kafka-start: already running (pid $pid) on $KAFKA_BOOTSTRAP, SASL on $KAFKA_SASL_BOOTSTRAP, SASL_SSL on $KAFKA_SASL_SSL_BOOTSTRAP"
  exit 0
fi

kafka_check_ports || exit 1

"$FLEXWAY_ROOT/scripts/install-kafka.sh" >/dev/null

if [ "${KAFKA_FRESH:-0}" = 1 ]; then rm -rf "$KAFKA_STATE_DIR"; fi
mkdir -p "$KAFKA_STATE_DIR/data" "$KAFKA_LOG_DIR"

# The SASL_SSL listener's test CA and broker certificate (kept with the state).
if [ ! -f "$KAFKA_TLS_DIR/broker.p12" ]; then
  command -v openssl >/dev/null 2>&1 || { echo "kafka-start: openssl is needed for the SASL_SSL listener's certificates" >&2; exit 1; }
  mkdir -p "$KAFKA_TLS_DIR"
  (
    cd "$KAFKA_TLS_DIR"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj "/CN=flexway test Kafka CA" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "/CN=$KAFKA_HOST" -keyout broker.key -out broker.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost%s\nextendedKeyUsage=serverAuth\n' \
      "$(case "$KAFKA_HOST" in 127.0.0.1|localhost) ;; *[!0-9.]*) echo ",DNS:$KAFKA_HOST" ;; *) echo ",IP:$KAFKA_HOST" ;; esac)" >broker.ext
    openssl x509 -req -in broker.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile broker.ext -out broker.crt 2>/dev/null
    openssl pkcs12 -export -in broker.crt -inkey broker.key -certfile ca.crt -name broker \
      -passout "pass:$KAFKA_TLS_PASSWORD" -out broker.p12
    rm -f broker.csr broker.ext ca.srl
    chmod 600 ca.key broker.key broker.p12
  ) || { echo "kafka-start: making the SASL_SSL listener's certificates in $KAFKA_TLS_DIR failed" >&2; exit 1; }
fi

start_ms=$(( $(date +%s%N) / 1000000 ))
conf="$KAFKA_STATE_DIR/server.properties"
sed -e "s|@HOST@|$KAFKA_HOST|g" \
    -e "s|@PLAINTEXT_PORT@|$KAFKA_PLAINTEXT_PORT|g" \
    -e "s|@SASL_PORT@|$KAFKA_SASL_PORT|g" \
    -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" \
    -e "s|@SASL_SSL_PORT@|$KAFKA_SASL_SSL_PORT|g" \
    -e "s|@TLS_DIR@|$KAFKA_TLS_DIR|g" \
    -e "s|@TLS_PASSWORD@|$KAFKA_TLS_PASSWORD|g" \
    -e "s|@SASL_SSL_REAUTH_MS@|$KAFKA_SASL_SSL_REAUTH_MS|g" \
    -e "s|@STATE_DIR@|$KAFKA_STATE_DIR|g" \
    -e "s|@SASL_USER@|$KAFKA_SASL_USER|g" \
    -e "s|@SASL_PASSWORD@|$KAFKA_SASL_PASSWORD|g" \
    -e "s|@ADMIN_USER@|$KAFKA_ADMIN_USER|g" \
    -e "s|@ADMIN_PASSWORD@|$KAFKA_ADMIN_PASSWORD|g" \
    "$FLEXWAY_ROOT/bench/kafka/server.properties.template" >"$conf"
if [ -n "${KAFKA_EXTRA_PROPS:-}" ]; then   # e.g. KAFKA_EXTRA_PROPS=$'a=1\nb=2'
  printf '%s\n' "$KAFKA_EXTRA_PROPS" >>"$conf"
fi

# Client property files for the Java tools (kafka-tool.sh ... --command-config FILE).
for mech in PLAIN SCRAM-SHA-256 SCRAM-SHA-512; do
  case $mech in
    PLAIN) module=org.apache.kafka.common.security.plain.PlainLoginModule ;;
    *)     module=org.apache.kafka.common.security.scram.ScramLoginModule ;;
  esac
  f="$KAFKA_STATE_DIR/client-$(echo "$mech" | tr 'A-Z' 'a-z').properties"
  cat >"$f" <<PROPS
bootstrap.servers=$KAFKA_SASL_BOOTSTRAP
security.protocol=SASL_PLAINTEXT
sasl.mechanism=$mech
sasl.jaas.config=$module required username="$KAFKA_SASL_USER" password="$KAFKA_SASL_PASSWORD";
PROPS
done
cat >"$KAFKA_STATE_DIR/client-sasl-ssl.properties" <<PROPS
bootstrap.servers=$KAFKA_SASL_SSL_BOOTSTRAP
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$KAFKA_SASL_USER" password="$KAFKA_SASL_PASSWORD";
ssl.truststore.type=PEM
ssl.truststore.location=$KAFKA_CA_FILE
PROPS

java_opts=($KAFKA_HEAP_OPTS -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
  -Dkafka.logs.dir="$KAFKA_LOG_DIR"
  -Dlog4j2.configurationFile="$FLEXWAY_ROOT/bench/kafka/log4j2.properties"
  ${KAFKA_JVM_OPTS:-})

if [ ! -f "$KAFKA_STATE_DIR/data/meta.properties" ]; then
  tool_opts=(-Xmx256m -Dlog4j2.configurationFile="$FLEXWAY_ROOT/bench/kafka/tools-log4j2.properties")
  cluster_id="$(java "${tool_opts[@]}" -cp "$KAFKA_CLASSPATH" kafka.tools.StorageTool random-uuid)"
  scram=()
  for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
    scram+=(--add-scram "$mech=[name=$KAFKA_SASL_USER,password=$KAFKA_SASL_PASSWORD]"
            --add-scram "$mech=[name=$KAFKA_ADMIN_USER,password=$KAFKA_ADMIN_PASSWORD]")
  done
  if ! java "${tool_opts[@]}" -cp "$KAFKA_CLASSPATH" kafka.tools.StorageTool format \
       -t "$cluster_id" -c "$conf" "${scram[@]}" >"$KAFKA_LOG_DIR/format.log" 2>&1; then
    echo "kafka-start: storage format failed:" >&2
    cat "$KAFKA_LOG_DIR/format.log" >&2
    exit 1
  fi
  echo "kafka-start: formatted $KAFKA_STATE_DIR/data (cluster $cluster_id, SCRAM users $KAFKA_SASL_USER, $KAFKA_ADMIN_USER)"
fi

# Keep the previous run's log for a look, start this one on a clean file.
[ -f "$KAFKA_LOG_FILE" ] && mv -f "$KAFKA_LOG_FILE" "$KAFKA_LOG_FILE.prev"
: >"$KAFKA_LOG_FILE"
out="$KAFKA_LOG_DIR/kafka.out"

# setsid + nohup: the broker outlives the shell (and the make job) that started it.
# The inner shell writes its own pid and execs java, so the pid file holds the
# broker's pid even where setsid has to fork.
rm -f "$KAFKA_PID_FILE"
nohup setsid bash -c 'echo $$ >"$0"; exec "$@"' "$KAFKA_PID_FILE" \
  java "${java_opts[@]}" -cp "$KAFKA_CLASSPATH" kafka.Kafka "$conf" \
  >"$out" 2>&1 </dev/null &
for _ in $(seq 1 50); do [ -s "$KAFKA_PID_FILE" ] && break; sleep 0.1; done
pid="$(cat "$KAFKA_PID_FILE" 2>/dev/null || true)"
[ -n "$pid" ] || { echo "kafka-start: broker process did not start" >&2; cat "$out" >&2; exit 1; }

fail() {
  echo "kafka-start: $1" >&2
  echo "---- tail of $KAFKA_LOG_FILE ----" >&2; tail -n 40 "$KAFKA_LOG_FILE" >&2 || true
  echo "---- tail of $out ----" >&2; tail -n 20 "$out" >&2 || true
  exit 1
}

deadline=$(( $(date +%s) + KAFKA_START_TIMEOUT ))
ready=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  kill -0 "$pid" 2>/dev/null || { rm -f "$KAFKA_PID_FILE"; fail "broker exited during start-up"; }
  if grep -q "Kafka Server started" "$KAFKA_LOG_FILE" 2>/dev/null \
     && port_open "$KAFKA_HOST" "$KAFKA_PLAINTEXT_PORT" \
     && port_open "$KAFKA_HOST" "$KAFKA_SASL_PORT" \
     && port_open "$KAFKA_HOST" "$KAFKA_SASL_SSL_PORT"; then
    if command -v kcat >/dev/null 2>&1; then
      # the broker really answers Metadata with itself in it
      if kcat -b "$KAFKA_BOOTSTRAP" -L -m 5 2>/dev/null | grep -q "broker 1 at"; then ready=1; break; fi
    else
      ready=1; break
    fi
  fi
  sleep 0.2
done
[ "$ready" = 1 ] || { kill -9 "$pid" 2>/dev/null || true; rm -f "$KAFKA_PID_FILE"; fail "not ready after ${KAFKA_START_TIMEOUT}s (killed it)"; }

el=$(( $(date +%s%N) / 1000000 - start_ms ))
printf 'kafka-start: Kafka %s ready in %d.%01d s (pid %s): PLAINTEXT %s, SASL_PLAINTEXT %s (PLAIN, SCRAM-SHA-256/512, user %s), SASL_SSL %s (SCRAM-SHA-512, CA %s), state %s\n' \
  "$KAFKA_VERSION" $((el / 1000)) $((el % 1000 / 100)) "$pid" "$KAFKA_BOOTSTRAP" "$KAFKA_SASL_BOOTSTRAP" \
  "$KAFKA_SASL_USER" "$KAFKA_SASL_SSL_BOOTSTRAP" "$KAFKA_CA_FILE" "$KAFKA_STATE_DIR"
