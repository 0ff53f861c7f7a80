# The interoperability suite against a real Apache Kafka broker (issue 4).
# Included by the top-level Makefile; works alone too:
#   make -f mk/interop.mk test-kafka
#
#   make test-kafka     install Kafka (cached), build the Java client (cached),
#                       start a fresh single-node KRaft broker, run the engine's
#                       tests against it (FLEXWAY_TEST_UPSTREAM=kafka), stop it
#                       even when they fail. TEST_KAFKA_ARGS adds go test flags,
#                       e.g. make test-kafka TEST_KAFKA_ARGS='-run Java -v'
#   make java-client    build interop/java (kafka-clients of the broker's version)

GO              ?= go
INTEROP_SCRIPTS := $(CURDIR)/scripts
TEST_KAFKA_ARGS ?=

.PHONY: test-kafka java-client

test-kafka:
	GO=$(GO) $(INTEROP_SCRIPTS)/test-kafka.sh $(TEST_KAFKA_ARGS)

java-client:
	$(INTEROP_SCRIPTS)/build-java-client.sh
