# The benchmark harness against a real Apache Kafka broker (issue 4).
# Included by the top-level Makefile; works alone too: make -f mk/bench.mk bench-real
#
#   make bench-real      bench/run: kafka-producer-perf-test, the consumer perf
#                        test and the franz-go load generator, direct to a fresh
#                        broker, through the splice relay (bench/cmd/splicerelay),
#                        through the gateway and through the Go proxy (the fourth
#                        path: grepplabs/kafka-proxy, another Kafka proxy written in
#                        Go, run from BENCH_GOPROXY_BIN, bin/tools/kafka-proxy, when
#                        there; BENCH_GOPROXY=0 leaves it out), in turn, in one
#                        table (median and spread of BENCH_REPEAT runs); the large-fetch consumer
#                        (50 MiB / 10 MiB per partition, 2 GiB); peak RSS against
#                        the fetch size (docs/bench-rss-fetch.png); the record-size
#                        sweep and its plot (docs/bench-throughput.png); a perf
#                        profile of the gateway. About 20 minutes at the defaults.
#   make bench-new       only what issue 11 added: the large-fetch consumer and
#                        the RSS plot, on every path (BENCH_PARTS=new).
#   make bench-issue11   the rows of issue 11's table (perf-test acks=all with the
#                        Java producer's 16 KiB batches, franz-go produce and
#                        consume, at half the direct maximum too), the large-fetch
#                        consumer and the RSS plot (BENCH_PARTS=issue), on the four
#                        paths (direct, splice relay, flexway, Go proxy).
#   make bench-many      100 franz-go consumers at once (BENCH_MANY_N), each
#                        fetching 50 MiB / 10 MiB per partition and reading
#                        BENCH_MANY_MIB (256) through a fresh gateway: its idle
#                        RSS, VmHWM during the run against the budgets in force,
#                        VmRSS every 5 s for a minute after (BENCH_PARTS=many,
#                        many.md). A few minutes.
#   make bench-quota     quotas configured and not reached (issue 8.7,
#                        BENCH_PARTS=quota): the same flexway build as three
#                        gateways at once, no quotas, quotas on every rate far
#                        above the run, and the same with server.counters on a
#                        redis-server of its own; the franz-go producer (1 KiB,
#                        acks=all) and consumer take them in turn, 7 runs of 1M
#                        records, and the producer at a fixed 60,000 rec/s for
#                        10 s: throughput and gateway CPU s/GiB against the
#                        no-quota gateway of the same run (quota.md). About 10
#                        minutes. Then bench-quota-reached's part.
#   make bench-quota-reached  the seed's quotas reached (issue 22.6-7,
#                        BENCH_PARTS=quota-reached): a gateway with the seed's
#                        quotas and one without; franz-go, kafka-producer-perf-test
#                        and kafka-consumer-perf-test, kcat, confluent-kafka and
#                        kafka-python (python3), each with its defaults, flat out,
#                        producing 18 MiB or reading 36 MiB, 3 runs each: the rate
#                        over seconds 4-14, the first second's bytes, a request's
#                        p99 while held, the gateway's CPU s/GiB against the
#                        no-quota gateway; then a noisy neighbour: tenant globex at
#                        512 records/s alone, beside tenant acme's three keys
#                        producing and consuming flat out, and alone again,
#                        through each gateway, and its floor: the same without
#                        the gateway, acme paced at the held rates
#                        (quota-reached.md). About 13 minutes.
#   make bench-neighbour only the noisy neighbour of bench-quota-reached (its
#                        passes: seed-quotas, no-quotas, the floor, and the floor
#                        of a held client's shape: acme's producers in lumps of
#                        BENCH_NEIGHBOUR_FLOOR_BURST records, 1,024; 1 turns it
#                        off; the same lumps through the splice relay), no library (BENCH_PARTS=quota-reached
#                        BENCH_REACHED_LIBS=none). About 5 minutes.
#   make bench-otlp      the cost of observability.otlp (issue 24.8,
#                        BENCH_PARTS=otlp): three gateways at once, without it,
#                        with it at sampling_ratio 0 (metrics only) and at 0.01
#                        (BENCH_OTLP_RATIO), both sending to one Jaeger the
#                        harness starts (bin/tools/jaeger, built first when
#                        missing); the franz-go producer and consumer of issue
#                        11's unlimited rows (BENCH_RECORDS of 1 KiB) take them
#                        in turn, BENCH_REPEAT rounds, the order rotating:
#                        throughput and gateway CPU s/GiB against the gateway
#                        without, and the spans Jaeger received from each
#                        (otlp.md). A few minutes at the defaults.
#   make bench-alternate BEFORE=dir AFTER=dir  bench/alternate: bench/run on two
#                        checkouts in turn, BENCH_ALT_ROUNDS (3) rounds, before
#                        and after a change (issue 23.5); BENCH_PARTS as above.
#   make bench-density   bench/run density: 1,000 and 9,000 idle authenticated
#                        connection pairs: RSS per pair, GC pauses, one producer.
#   make bench-table     bench/table (issue 35.4): every row of BENCHMARKS.md's
#                        current table at the checkout's commit, part after part
#                        (BENCH_TABLE_PARTS: issue, produce, many, density,
#                        stalled, hostile, quota, reached, otlp; kfake and soak
#                        when named, or "all"), BENCH_REPEAT (3) runs each, then
#                        ONE table, bench/results/table-<date>/current.md, with
#                        the date, the commit and the machine. About 50 minutes
#                        (80 with kfake and the soak). Takes the broker's lock
#                        itself, part by part: do not wrap it in flock.
#   make bench-micro     the codec micro-benchmarks and the in-process kfake
#                        loopback benchmark (what `make bench` runs).
#   make soak            bench/cmd/soak (issue 25.4): the built gateway, 10
#                        tenants, ~200 client connections producing, consuming,
#                        in groups and transactions, with connections cut and
#                        clients restarted at random, the gateway killed once and
#                        a broker reset, blackholed, slowed, stopped, and Redis
#                        (server.counters, redis-server of make deps) killed, in
#                        turn every few minutes; lost/duplicated records, Redis's
#                        budget counts against what was admitted, errors by kind, and
#                        RSS, fds, goroutines every 10 s (flat after warm-up),
#                        plotted. SOAK=10m by default (SOAK=1h for longer);
#                        results in bench/results/soak-<date>/, exit 1 on a fail.
#
# Settings are environment variables, listed at the top of bench/run, e.g.
#   make bench-real BENCH_REPEAT=5
# Results go to bench/results/<date>/ (gitignored); BENCHMARKS.md holds the
# latest figures.

GO ?= go
BENCH_RUN := $(CURDIR)/bench/run

.PHONY: bench-real bench-new bench-issue11 bench-many bench-quota bench-quota-reached bench-neighbour bench-otlp bench-alternate bench-density bench-all bench-table bench-micro soak

bench-real:
	GO=$(GO) $(BENCH_RUN) real

bench-new:
	BENCH_PARTS=new GO=$(GO) $(BENCH_RUN) real

bench-issue11:
	BENCH_PARTS=issue GO=$(GO) $(BENCH_RUN) real

bench-many:
	BENCH_PARTS=many GO=$(GO) $(BENCH_RUN) real

bench-quota:
	BENCH_PARTS=quota,quota-reached GO=$(GO) $(BENCH_RUN) real

bench-quota-reached:
	BENCH_PARTS=quota-reached GO=$(GO) $(BENCH_RUN) real

bench-neighbour:
	BENCH_PARTS=quota-reached BENCH_REACHED_LIBS=none GO=$(GO) $(BENCH_RUN) real

bench-otlp:
	BENCH_PARTS=otlp GO=$(GO) $(BENCH_RUN) real

bench-alternate:
	GO=$(GO) bench/alternate $(BEFORE) $(AFTER)

bench-density:
	GO=$(GO) $(BENCH_RUN) density

bench-all:
	GO=$(GO) $(BENCH_RUN) all

bench-table:
	GO=$(GO) bench/table

bench-micro:
	$(GO) test ./codec -run '^$$' -bench . -benchmem
	$(GO) test ./bench -run '^$$' -bench LoopbackThroughput -benchtime 1x -timeout 10m

SOAK ?= 10m
soak:
	$(GO) build -o bin/flexway ./cmd/flexway
	$(GO) build -o bin/soak ./bench/cmd/soak
	bin/soak -flexway bin/flexway -duration $(SOAK)
