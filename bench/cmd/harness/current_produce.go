package main

// The produce and kfake parts' rows of harness current (current.go, issue
// 35.1): bench/run BENCH_PARTS=produce at BENCH_RECORDS records (3M in
// bench/table), against Apache Kafka (produce) and against kfake (kfake):
// the Java producer, franz-go at each BENCH_FRANZ_ACKS, kcat, unlimited,
// and the producers at half the direct rate. Each workload names the
// records of the unlimited runs (read from their bytes) and, for kfake,
// the broker, so that no row reads as one of the issue part's.

import (
	"fmt"
	"regexp"
	"strings"
)

var reAcks = regexp.MustCompile(`acks=(\w+)`)

// acksOf is the acks a scenario's name gives ("all", "1").
func acksOf(sc string) string {
	if m := reAcks.FindStringSubmatch(sc); m != nil {
		return m[1]
	}
	return "?"
}

// produceTable is the rows of a produce part's runs.tsv; on is "" or
// ", against kfake".
func produceTable(on string) func([]result) []issueRow {
	return func(rs []result) []issueRow {
		n := recordsLabel(unlimitedRecords(rs))
		unl, half := ", unlimited", "p99 at half load"
		if n != "" { // "..., unlimited, 3M records", "p99 at half load of the 3M-record runs"
			unl += ", " + n + " records"
			half += " of the " + n + "-record runs"
		}
		unl += on
		half += strings.TrimPrefix(on, ",") + ": "
		const perf, franz = "perf-test produce 1 KiB acks=", "franz-go produce 1 KiB acks="
		return []issueRow{
			{func(sc string) string {
				return "Java producer (perf-test, acks=" + acksOf(sc) + ", 16 KiB batches)" + unl
			},
				func(sc string) bool {
					return strings.HasPrefix(sc, perf) && strings.HasSuffix(sc, " (16 KiB batches), unlimited")
				}, "thr"},
			{func(sc string) string { return "franz-go produce, acks=" + acksOf(sc) + unl },
				func(sc string) bool { return strings.HasPrefix(sc, franz) && strings.HasSuffix(sc, ", unlimited") }, "thr"},
			{func(string) string { return "kcat produce (librdkafka defaults, acks=all)" + unl },
				func(sc string) bool { return sc == scKcatProduce }, "thr"},
			{func(sc string) string {
				return half + "Java producer acks=" + acksOf(sc) + " at " + rateLabel(sc) + ", p50 / p95 / p99; worst after the first 5 s"
			}, func(sc string) bool {
				return strings.HasPrefix(sc, perf) && strings.Contains(sc, " (16 KiB batches), fixed ")
			}, "fixed"},
			{func(sc string) string {
				return half + "franz-go acks=" + acksOf(sc) + " at " + rateLabel(sc) + ", p50 / p90 / p99"
			},
				func(sc string) bool {
					return strings.HasPrefix(sc, franz) && strings.Contains(sc, ", fixed ") && !strings.Contains(sc, "linger 0")
				}, "fixed"},
		}
	}
}

// unlimitedRecords is the records of 1 KiB of the unlimited runs (their
// largest payload: BENCH_RECORDS), 0 when none succeeded.
func unlimitedRecords(rs []result) int {
	n := 0
	for _, r := range rs {
		if !r.failed && strings.HasSuffix(r.scenario, ", unlimited") && r.bytes > 0 {
			n = max(n, int(r.bytes)/1024)
		}
	}
	return n
}

// recordsLabel is "3M" of 3,000,000 ("300k", "1.5M", "12,345"), "" of 0.
func recordsLabel(n int) string {
	switch {
	case n <= 0:
		return ""
	case n >= 1_000_000 && n%100_000 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return thousands(n)
}

func (c *composer) produceRows() ([]currentRow, error) {
	return c.runsRows("produce", produceTable(""), "the produce part")
}

func (c *composer) kfakeRows() ([]currentRow, error) {
	return c.runsRows("kfake", produceTable(", against kfake"), "the produce part against kfake")
}
