# The interoperability suite against a real Apache Kafka broker (issue 4).
# Included by the top-level Makefile; works alone too:
#   make -f mk/interop.mk test-kafka
#
#   make test-kafka     install Kafka (cached), build the Java client (cached),
#                       start a fresh single-node KRaft broker, run the engine's
#                       tests against it (FLEXWAY_TEST_UPSTREAM=kafka), stop it
#                       even when they fail: the whole suite over PLAINTEXT, the
#                       gateway-to-broker tests (scripts/test-kafka.sh's
#                       KAFKA_SASL_TESTS) over SASL_SSL and SASL_PLAINTEXT, at
#                       once. What make test runs against Kafka.
#                       TEST_KAFKA_ARGS adds go test flags,
#                       e.g. make test-kafka TEST_KAFKA_ARGS='-run Java -v'
#   make test-kafka-all the whole suite over each of the three, in turn (about
#                       17 minutes on 2 cores)
#   make java-client    build interop/java (kafka-clients of the broker's version)

GO              ?= go
INTEROP_SCRIPTS := $(CURDIR)/scripts
TEST_KAFKA_ARGS ?=

.PHONY: test-kafka test-kafka-all java-client

test-kafka:
	GO=$(GO) KAFKA_TEST_PLAN=ci $(INTEROP_SCRIPTS)/test-kafka.sh $(TEST_KAFKA_ARGS)

test-kafka-all:
	GO=$(GO) KAFKA_TEST_PLAN=all $(INTEROP_SCRIPTS)/test-kafka.sh $(TEST_KAFKA_ARGS)

java-client:
	$(INTEROP_SCRIPTS)/build-java-client.sh
