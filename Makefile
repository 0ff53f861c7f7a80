# flexway — the two commands of a fresh machine: `make run` and `make test`.
GO      ?= go
BIN     := bin/flexway
CONFIG  ?= configs/quickstart/flexway.yaml

include mk/deps.mk
include mk/interop.mk
include mk/bench.mk
include mk/package.mk

.PHONY: all build run check test test-go test-real fuzz bench vet install clean

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
# client; idempotently), runs every test against the embedded kfake, then
# the engine's suite again against a real Apache Kafka broker (started and
# stopped by scripts/test-kafka.sh).
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(MAKE) test-package
	$(MAKE) test-kafka

FUZZTIME ?= 10s
# Each target briefly; -fuzzminimizetime keeps a short run fuzzing rather than minimising.
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s
fuzz:
	$(FUZZ) ./codec -fuzz '^FuzzRequestHeader$$'
	$(FUZZ) ./codec -fuzz '^FuzzProduceRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchRequestRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchResponseRewrite$$'
	$(FUZZ) ./codec -fuzz '^FuzzFetchResponseStream$$'
	$(FUZZ) ./codec -fuzz '^FuzzProduceRequestStream$$'
	$(FUZZ) ./decide -fuzz '^FuzzSessionRequest$$'
	$(FUZZ) ./decide -fuzz '^FuzzGroupResponse$$'
	$(FUZZ) ./engine -fuzz '^FuzzParseSNI$$'
	@if grep -q '^func FuzzSessionResponse' decide/*_test.go; then $(FUZZ) ./decide -fuzz '^FuzzSessionResponse$$'; fi

bench:
	$(GO) test ./codec -run '^$$' -bench . -benchmem
	$(GO) test ./bench -run '^$$' -bench . -benchtime 1x -timeout 10m
	$(GO) test ./quota -run '^$$' -bench . -benchmem
	$(GO) test ./engine -run 'TestQuotaPathAllocs|TestQuotaNotReachedNoTimer' -bench QuotaRequestPath -benchmem -count=1
	$(GO) test ./engine -run '^$$' -bench QuotaThroughput -benchtime 1x -timeout 10m
	@echo "quotas configured, not reached, against a real broker (issue 8.7, BENCHMARKS.md): make bench-quota"

vet:
	$(GO) vet ./...

# A static binary and the systemd unit (P1): /usr/local/bin/flexway,
# /etc/systemd/system/flexway.service; the configuration goes to /etc/flexway/.
PREFIX ?= /usr/local
install:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN) ./cmd/flexway
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/flexway
	install -D -m 0644 configs/systemd/flexway.service $(DESTDIR)/etc/systemd/system/flexway.service
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/flexway/README.md
	@echo "flexway installed: put flexway.yaml in /etc/flexway/, then systemctl daemon-reload && systemctl enable --now flexway"

clean:
	rm -rf bin
