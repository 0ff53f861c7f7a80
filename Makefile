# flexway — the two commands of a fresh machine: `make run` and `make test`.
GO      ?= go
BIN     := bin/flexway
CONFIG  ?= configs/quickstart/flexway.yaml

include mk/deps.mk
include mk/interop.mk
include mk/bench.mk
include mk/package.mk
include mk/hostile.mk

.PHONY: all build run check test test-stress test-go test-real fuzz fuzz-targets bench vet install clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/flexway

# The gateway on the embedded default: an in-process Kafka (kfake, three
# brokers) behind the quickstart's cluster "shop" on ports 19092-19095.
run: build
	./$(BIN) -config $(CONFIG)

check: build
	./$(BIN) -check -config $(CONFIG)

# Installs what the tests need (Debian packages, the Kafka jars, the Java
# client; idempotently), vets, then at once: every test against the embedded
# kfake (then the Debian package's test), and against a real Apache Kafka
# broker (started and stopped by scripts/test-kafka.sh) the engine's suite
# over PLAINTEXT and its gateway-to-broker tests over SASL_SSL and
# SASL_PLAINTEXT (scripts/test.sh). Each phase prints a line when it starts
# and when it ends with its time (scripts/phase.sh).
PHASE := scripts/phase.sh
test:
	@$(PHASE) "make test" -- env GO=$(GO) MAKE=$(MAKE) TEST_KAFKA_ARGS='$(TEST_KAFKA_ARGS)' scripts/test.sh

# The kfake suite under a competing CPU load on every core, -count=3
# (STRESS_RUNS=N: N times in a row, with a tally).
test-stress:
	@GO=$(GO) scripts/test-stress.sh

FUZZTIME ?= 10s
# Each target briefly; -fuzzminimizetime keeps a short run fuzzing rather than minimising.
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
fuzz:
	@$(PHASE) "fuzz (FUZZTIME=$(FUZZTIME))" -- $(MAKE) --no-print-directory fuzz-targets

fuzz-targets:
	$(FUZZ) ./codec -fuzz '^FuzzRequestHeader$$'
	$(FUZZ) ./codec -fuzz '^FuzzProduceRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchRequestRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchResponseRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchResponseStream$$'
	$(FUZZ) ./codec -fuzz '^FuzzProduceRequestStream$$'
	$(FUZZ) ./decide -fuzz '^FuzzSessionRequest$$'
	$(FUZZ) ./decide -fuzz '^FuzzGroupResponse$$'
	$(FUZZ) ./engine/looptls -fuzz '^FuzzParseSNI$$'
	@if grep -q '^func FuzzSessionResponse' decide/*_test.go; then $(FUZZ) ./decide -fuzz '^FuzzSessionResponse$$'; fi

bench:
	$(GO) test ./codec -run '^$$' -bench . -benchmem
	$(GO) test ./bench -run '^$$' -bench . -benchtime 1x -timeout 10m
	$(GO) test ./quota -run '^$$' -bench . -benchmem
	$(GO) test ./engine/session -run 'TestQuotaPathAllocs' -bench QuotaRequestPath -benchmem -count=1
	$(GO) test ./engine -run 'TestQuotaNotReachedNoTimer' -count=1
	$(GO) test ./engine -run '^$$' -bench QuotaThroughput -benchtime 1x -timeout 10m
	@echo "quotas configured, not reached, against a real broker (issue 8.7, BENCHMARKS.md): make bench-quota"

vet:
	$(GO) vet ./...
	GOOS=darwin GOARCH=arm64 $(GO) build ./...
	scripts/check-tracked-size.sh

# A static binary and the systemd unit (P1): /usr/local/bin/flexway,
# /etc/systemd/system/flexway.service; the configuration goes to /etc/flexway/.
PREFIX ?= /usr/local
install:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN) ./cmd/flexway
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/flexway
	install -D -m 0644 configs/systemd/flexway.service $(DESTDIR)/etc/systemd/system/flexway.service
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/flexway/README.md
	install -D -m 0755 packaging/flexway-handover $(DESTDIR)$(PREFIX)/lib/flexway/flexway-handover
	@echo "flexway installed: put flexway.yaml in /etc/flexway/, then systemctl daemon-reload && systemctl enable --now flexway"
	@echo "an installed gateway already running is upgraded without a gap by $(PREFIX)/lib/flexway/flexway-handover"

clean:
	rm -rf bin
