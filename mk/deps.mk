# Real peers for tests and benchmarks: Debian packages, Apache Kafka (KRaft, from
# Maven Central), redis. Included by the top-level Makefile; scripts live in scripts/.
#   make deps            Debian packages (kcat, python clients, redis, gnuplot)
#   make kafka-install   Kafka jars into ~/.cache/flexway/kafka-<version>/libs
#   make kafka-start     broker: PLAINTEXT 127.0.0.1:18092, SASL 127.0.0.1:18093
#   make kafka-stop
#   make rdkafka-install librdkafka >= 2.6.1 (PyPI wheel) for SCRAM vs Kafka 4.x
#   make redis-start / redis-stop   redis on 127.0.0.1:6390
#   make jaeger          bin/tools/jaeger from interop/jaeger (the OTLP test's receiver)

FLEXWAY_SCRIPTS := $(CURDIR)/scripts

.PHONY: deps jaeger kafka-install kafka-start kafka-stop kafka-wipe rdkafka-install redis-start redis-stop

deps:
	$(FLEXWAY_SCRIPTS)/install-deps.sh

jaeger:
	GO=$(GO) $(FLEXWAY_SCRIPTS)/build-jaeger.sh

kafka-install:
	$(FLEXWAY_SCRIPTS)/install-kafka.sh

kafka-start: kafka-install
	$(FLEXWAY_SCRIPTS)/kafka-start.sh

kafka-stop:
	$(FLEXWAY_SCRIPTS)/kafka-stop.sh

# stop the broker and delete its state dir (next start formats afresh)
kafka-wipe:
	$(FLEXWAY_SCRIPTS)/kafka-stop.sh --wipe

rdkafka-install:
	$(FLEXWAY_SCRIPTS)/install-rdkafka.sh

redis-start:
	$(FLEXWAY_SCRIPTS)/redis-start.sh

redis-stop:
	$(FLEXWAY_SCRIPTS)/redis-stop.sh
