#!/usr/bin/env bash
# kcat with the current librdkafka from scripts/install-rdkafka.sh (needed for
# SASL/SCRAM against Kafka 4.x; Debian's librdkafka 2.0.2 fails it). Falls back to
# the system librdkafka, with a warning, when that is not installed.
VENV="${FLEXWAY_PYVENV:-${HOME:-/root}/.cache/flexway/pyvenv}"
if [ -e "$VENV/rdkafka/librdkafka.so.1" ]; then
  export LD_LIBRARY_PATH="$VENV/rdkafka${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "kcat.sh: $VENV/rdkafka missing (run scripts/install-rdkafka.sh); using the system librdkafka" >&2
fi
exec kcat "$@"
