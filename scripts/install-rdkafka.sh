#!/usr/bin/env bash
# Installs a current librdkafka for clients that must do SASL/SCRAM against Kafka 4.x.
#
# Why: Debian 12's librdkafka 2.0.2 (used by kcat and python3-confluent-kafka) builds
# a wrong SCRAM client-final nonce; Kafka 4.x checks it strictly (RFC 5802) and
# rejects every SCRAM login from it ("invalid credentials"). librdkafka >= 2.6.1
# is fixed. PyPI's confluent-kafka wheel ships one, so this makes a venv
# ($FLEXWAY_PYVENV, default ~/.cache/flexway/pyvenv) with it, and links its
# librdkafka as $FLEXWAY_PYVENV/rdkafka/librdkafka.so.1 for scripts/kcat.sh.
# Idempotent (marker file).
set -euo pipefail
CK_VERSION="${CK_VERSION:-2.16.1}"
VENV="${FLEXWAY_PYVENV:-${HOME:-/root}/.cache/flexway/pyvenv}"
marker="$VENV/.installed-confluent-kafka-$CK_VERSION"

if [ -f "$marker" ] && [ -e "$VENV/rdkafka/librdkafka.so.1" ]; then
  echo "install-rdkafka: confluent-kafka $CK_VERSION already in $VENV"
  exit 0
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" || {
  echo "install-rdkafka: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
"$VENV/bin/pip" install -q --disable-pip-version-check "confluent-kafka==$CK_VERSION"
lib="$(ls "$VENV"/lib/python3*/site-packages/confluent_kafka.libs/librdkafka-*.so.1 2>/dev/null | head -n 1)"
[ -n "$lib" ] || { echo "install-rdkafka: no bundled librdkafka in the confluent-kafka wheel" >&2; exit 1; }
mkdir -p "$VENV/rdkafka"
ln -sf "$lib" "$VENV/rdkafka/librdkafka.so.1"
touch "$marker"
echo "install-rdkafka: confluent-kafka $CK_VERSION (librdkafka $("$VENV/bin/python" -c 'import confluent_kafka as c; print(c.libversion()[0])')) in $VENV"
