package main

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// Each path runs first in one repetition of four, and every path runs in
// every repetition.
func TestOrderRotates(t *testing.T) {
	want := [][]string{
		{direct, relay, gateway, goproxy},
		{relay, gateway, goproxy, direct},
		{gateway, goproxy, direct, relay},
		{goproxy, direct, relay, gateway},
		{direct, relay, gateway, goproxy},
	}
	for rep := 1; rep <= 5; rep++ {
		if got := order(rep); !reflect.DeepEqual(got, want[rep-1]) {
			t.Errorf("order(%d) = %v, want %v", rep, got, want[rep-1])
		}
	}
	if got := order(2, direct, gateway); !reflect.DeepEqual(got, []string{gateway, direct}) {
		t.Errorf("order(2, direct, gateway) = %v", got)
	}
}

// The summary has issue 11's columns, the ratio of each path to direct
// paired by repetition, the relaying process's CPU per GiB and its highest
// VmHWM, and latencies on a fixed-rate row.
func TestSummaryTableShape(t *testing.T) {
	h := &harness{repeat: 2, bigMiB: 2048}
	h.fixed = []string{scProduceFixed("all", 1000)}
	gib := float64(1 << 30)
	add := func(sc, p string, rep int, mibps, cpu, hwmKiB, p50, p99 float64) {
		h.results = append(h.results, result{scenario: sc, path: p, rep: rep, recs: 1, mibps: mibps,
			bytes: gib, hopCPU: cpu, hopHWM: hwmKiB, p50: p50, p99: p99})
	}
	sc := h.scBigFetch()
	add(sc, direct, 1, 500, 0, 0, nan, nan)
	add(sc, direct, 2, 400, 0, 0, nan, nan)
	add(sc, gateway, 1, 250, 1.8, 100<<10, nan, nan)
	add(sc, gateway, 2, 240, 1.9, 300<<10, nan, nan)
	add(sc, relay, 1, 400, 0.4, 5<<10, nan, nan)
	add(sc, relay, 2, 360, 0.5, 6<<10, nan, nan)
	fx := h.fixed[0]
	add(fx, direct, 1, 1, 0, 0, 1.1, 25)
	add(fx, gateway, 1, 1, 0.2, 50<<10, 2.3, 111)
	add(fx, relay, 1, 1, 0.1, 5<<10, 1.9, 49)

	out := h.summaryTable()
	for _, want := range []string{
		"| workload | direct MiB/s | flexway ratio · CPU s/GiB · VmHWM | splice relay ratio · CPU s/GiB · VmHWM |",
		// ratios 0.50 and 0.60 per repetition; CPU median 1.85; VmHWM the highest, 300 MiB
		"| " + sc + " | 450 (400–500) | 0.55 (0.50–0.60) · 1.85 · 300 MiB | 0.85 (0.80–0.90) · 0.45 · 6 MiB |",
		"| " + fx + " | 1.10 / 25.0 ms | 2.30 / 111 ms · 0.20 · 50 MiB | 1.90 / 49.0 ms · 0.10 · 5 MiB |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, scProduce("1")) {
		t.Errorf("a scenario that did not run is in the summary:\n%s", out)
	}
}

// BENCH_PARTS=many runs that part alone (no warm-up, no relay); the default
// list does not hold it.
func TestPartsMany(t *testing.T) {
	if got := parseParts("many"); !reflect.DeepEqual(got, map[string]bool{"many": true}) {
		t.Errorf(`parseParts("many") = %v`, got)
	}
	if got := parseParts("table,bigfetch,rssfetch,sweep,profile"); got["many"] {
		t.Errorf("the default parts hold many: %v", got)
	}
}

// The many-consumers table: idle, peak, the budget in force, RSS 10/30/60 s
// after, throughput; and the two claims of issue 11 item 3 against them.
func TestManyTable(t *testing.T) {
	f := manyFigures{n: 100, mib: 256, idleKiB: 20 << 10, peakKiB: 300 << 10,
		total: 1 << 30, tenant: 128 << 20, perConn: 64 << 20,
		after: map[int]float64{5: 200 << 10, 10: 150 << 10, 30: 60 << 10, 60: 30 << 10},
		mibps: 400, cpuPerGiB: 0.85, seconds: 64, slowest: 63.5,
		heapIdle: 4 << 20, heapAfter: map[int]float64{60: 6 << 20}}
	out := manyTable(f)
	for _, want := range []string{
		"| 100 × 256 MiB | 20 MiB | 300 MiB | 1 GiB (128 MiB · 64 MiB) | 150 MiB | 60 MiB | 30 MiB | 400 MiB/s (64 s, slowest consumer 64 s) | 0.85 |",
		"- Peak: 280 MiB above idle, within max_total_in_flight_bytes (1 GiB) over the idle base.",
		"- 60 s after the consumers stopped: 30 MiB, 10 MiB above idle (96 % of the growth at the peak returned).",
		"- Go heap in use (/metrics): 4 MiB idle, 6 MiB 60 s after.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("many.md lacks %q:\n%s", want, out)
		}
	}
	f.peakKiB = 2 << 20 // 2 GiB
	if out := manyTable(f); !strings.Contains(out, "above max_total_in_flight_bytes (1 GiB)") {
		t.Errorf("a peak over the budget is not told:\n%s", out)
	}
}

// perf-test's producer: the final line, and the worst latency of the
// windows after the first (its start makes the p99 of a short run).
func TestParsePerfProducer(t *testing.T) {
	out := `[2026-12-04 16:57:00,000] WARN something
214970 records sent, 42994.0 records/sec (41.99 MB/sec), 75.7 ms avg latency, 453.0 ms max latency.
215030 records sent, 43006.0 records/sec (42.00 MB/sec), 1.2 ms avg latency, 14.0 ms max latency.
215000 records sent, 43000.0 records/sec (41.99 MB/sec), 1.1 ms avg latency, 31.5 ms max latency.
645000 records sent, 42980.1 records/sec (41.97 MB/sec), 26.01 ms avg latency, 453.00 ms max latency, 1 ms 50th, 260 ms 95th, 305 ms 99th, 440 ms 99.9th.
`
	r, err := parsePerfProducer(out, 1024, 645000)
	if err != nil {
		t.Fatal(err)
	}
	if r.p99 != 305 || r.p50 != 1 || r.later != 31.5 || r.mibps != 41.97 || r.p95 != 260 || !math.IsNaN(r.p90) {
		t.Fatalf("parsed p50 %v p95 %v p90 %v p99 %v later %v MiB/s %v; want 1, 260, NaN (perf-test prints none), 305, 31.5 (the windows after the first), 41.97",
			r.p50, r.p95, r.p90, r.p99, r.later, r.mibps)
	}
	// One window only (a short run): no "after".
	one := "1000 records sent, 999.0 records/sec (0.98 MB/sec), 9.0 ms avg latency, 300.0 ms max latency.\n" +
		"1000 records sent, 999.0 records/sec (0.98 MB/sec), 9.00 ms avg latency, 300.00 ms max latency, 2 ms 50th, 280 ms 95th, 299 ms 99th, 300 ms 99.9th.\n"
	if r, err := parsePerfProducer(one, 1024, 1000); err != nil || !math.IsNaN(r.later) {
		t.Fatalf("one window: later %v, err %v; want NaN", r.later, err)
	}
	if _, err := parsePerfProducer(out, 1024, 700000); err == nil {
		t.Fatal("a run that sent fewer records than asked passed")
	}
	// In the summary: the median of the runs' "after 5 s".
	h := &harness{repeat: 2}
	fx := scProduceFixed("all", 43000)
	h.fixed = []string{fx}
	for i, l := range []float64{14, 40} {
		h.results = append(h.results,
			result{scenario: fx, path: direct, rep: i + 1, recs: 1, mibps: 1, p50: 1, p99: 250, later: 12},
			result{scenario: fx, path: gateway, rep: i + 1, recs: 1, mibps: 1, bytes: 1 << 30, p50: 1, p99: 300, later: l},
			result{scenario: fx, path: relay, rep: i + 1, recs: 1, mibps: 1, bytes: 1 << 30, p50: 1, p99: 280, later: nan})
	}
	s := h.summaryTable()
	for _, want := range []string{"1.00 / 250 ms (after 5 s: max 12.0)", "1.00 / 300 ms (after 5 s: max 27.0)", "1.00 / 280 ms · "} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// Issue 35.2: the half-load cells say p50 / p90 / p99 (loadgen), p50 / p95
// / p99 for perf-test's producer (it prints no p90), and p50 / p99 for runs
// read back from before either was kept.
func TestHalfLoadCellsSayTheMiddle(t *testing.T) {
	h := &harness{repeat: 3}
	fx := scProduceFixed("all", 43000)
	h.fixed = []string{fx}
	for i := range 3 {
		g := float64(i)
		h.results = append(h.results,
			result{scenario: fx, path: direct, rep: i + 1, recs: 1, mibps: 1, p50: 2, p90: 5 + g, p95: 7, p99: 20, later: nan},
			result{scenario: fx, path: gateway, rep: i + 1, recs: 1, mibps: 1, bytes: 1 << 30, p50: 3, p90: nan, p95: 30 + g, p99: 40, later: nan},
			result{scenario: fx, path: relay, rep: i + 1, recs: 1, mibps: 1, bytes: 1 << 30, p50: 4, p99: 50, later: nan})
	}
	s := h.summaryTable()
	for _, want := range []string{"2.00 / 6.00 / 20.0 ms", "3.00 / p95 31.0 / 40.0 ms", "4.00 / 50.0 ms"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if d := h.table(); !strings.Contains(d, "| p50 ms | p90 ms | p99 ms |") || !strings.Contains(d, "| 2.00 | 6.00 | 20.0 (20.0–20.0) |") {
		t.Errorf("the detail table lacks the p90 column or direct's 6.00:\n%s", d)
	}
}

// Issue 35.2: a fixed-rate row runs at half the direct maximum (whole
// thousands, 1,000 at least), or at the rate given, whatever the direct
// maximum of the run.
func TestHalfRateGivenOrHalf(t *testing.T) {
	for _, c := range []struct {
		max       float64
		given, at int
	}{{250_999, 0, 125_000}, {1_999, 0, 1_000}, {0, 0, 1_000}, {250_999, 100_000, 100_000}, {50_000, 100_000, 100_000}} {
		if got := halfRate(c.max, c.given); got != c.at {
			t.Errorf("halfRate(%v, %d) = %d, want %d", c.max, c.given, got, c.at)
		}
	}
}
