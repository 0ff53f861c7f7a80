package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// kafka-proxy maps the broker's GOPROXY listener to its own address, with
// no dynamic listener and no HTTP endpoint (its default binds 0.0.0.0).
func TestGoProxyArgs(t *testing.T) {
	got := goProxyArgs("127.0.0.1:29199", "127.0.0.1:29198")
	want := []string{"server", "--bootstrap-server-mapping", "127.0.0.1:29198,127.0.0.1:29199",
		"--dynamic-listeners-disable", "--default-listener-ip", "127.0.0.1", "--http-disable", "--log-level", "warning"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("goProxyArgs = %q, want %q", got, want)
	}
}

// The summary has a column for the Go proxy (ratio, CPU s/GiB, VmHWM like
// the relay's); a failed run is left out of the figures and told in the
// cell and under the table; a workload that failed on every run says so.
func TestSummaryGoProxyColumn(t *testing.T) {
	h := &harness{repeat: 2, bigMiB: 2048, out: t.TempDir(), gp: &goProxy{version: "v0.4.2"}}
	gib := float64(1 << 30)
	add := func(sc, p string, rep int, mibps, cpu, hwmKiB float64) {
		h.results = append(h.results, result{scenario: sc, path: p, rep: rep, recs: 1, mibps: mibps,
			bytes: gib, hopCPU: cpu, hopHWM: hwmKiB, p50: nan, p99: nan, p999: nan})
	}
	sc := h.scBigFetch()
	for rep := 1; rep <= 2; rep++ {
		add(sc, direct, rep, 500, 0, 0)
		add(sc, gateway, rep, 250, 1.8, 100<<10)
		add(sc, relay, rep, 400, 0.4, 5<<10)
	}
	add(sc, goproxy, 1, 300, 1.2, 40<<10)
	h.results = append(h.results, result{scenario: sc, path: goproxy, rep: 2, failed: true, note: "FAILED: loadgen: exit status 1"})
	fr := scFranzConsume
	for rep := 1; rep <= 2; rep++ {
		add(fr, direct, rep, 700, 0, 0)
		add(fr, gateway, rep, 350, 0.5, 20<<10)
		add(fr, relay, rep, 600, 0.4, 5<<10)
		h.results = append(h.results, result{scenario: fr, path: goproxy, rep: rep, failed: true, note: "FAILED: no RESULT line"})
	}

	out := h.summaryTable()
	for _, want := range []string{
		"| workload | direct MiB/s | flexway ratio · CPU s/GiB · VmHWM | splice relay ratio · CPU s/GiB · VmHWM | Go proxy (kafka-proxy v0.4.2) ratio · CPU s/GiB · VmHWM |",
		"| --- | --: | --- | --- | --- |",
		"| " + sc + " | 500 (500–500) | 0.50 (0.50–0.50) · 1.80 · 100 MiB | 0.80 (0.80–0.80) · 0.40 · 5 MiB | 0.60 · 1.20 · 40 MiB · failed 1 of 2 runs |",
		"| " + fr + " | 700 (700–700) | 0.50 (0.50–0.50) · 0.50 · 20 MiB | 0.86 (0.86–0.86) · 0.40 · 5 MiB | failed 2 of 2 runs |",
		"- " + fr + ", goproxy: no RESULT line",
		"- " + sc + ", goproxy: loadgen: exit status 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	detail := h.table()
	for _, want := range []string{
		"| " + sc + " | goproxy (failed 1 of 2 runs) | 1 | 300.0 |",
		"| " + fr + " | goproxy (failed 2 of 2 runs) | | | | | | | | | | |",
	} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q:\n%s", want, detail)
		}
	}
}

// Without the Go proxy (BENCH_GOPROXY=0, or no binary) the tables are as
// before: three paths, no fourth column.
func TestSummaryWithoutGoProxy(t *testing.T) {
	saved := paths
	defer func() { paths = saved }()
	paths = withoutPath(paths, goproxy)
	if !reflect.DeepEqual(paths, []string{direct, relay, gateway}) || !reflect.DeepEqual(order(2), []string{relay, gateway, direct}) {
		t.Fatalf("paths without the Go proxy: %v, order(2) %v", paths, order(2))
	}
	h := &harness{repeat: 1, bigMiB: 2048}
	sc := h.scBigFetch()
	h.results = []result{{scenario: sc, path: direct, rep: 1, recs: 1, mibps: 500, p99: nan},
		{scenario: sc, path: gateway, rep: 1, recs: 1, mibps: 250, bytes: 1 << 30, p99: nan}}
	out := h.summaryTable()
	if !strings.Contains(out, "| workload | direct MiB/s | flexway ratio · CPU s/GiB · VmHWM | splice relay ratio · CPU s/GiB · VmHWM |\n| --- | --: | --- | --- |\n") ||
		strings.Contains(out, "Go proxy") || !strings.Contains(out, "| 0.50 · 0.00 · 0 MiB | – |\n") {
		t.Errorf("summary without the Go proxy:\n%s", out)
	}
}

// A failed run through the Go proxy is recorded, not fatal: its reason in
// the note, its figures out of the medians.
func TestGoProxyFailedRecorded(t *testing.T) {
	h := &harness{out: t.TempDir(), gp: &goProxy{}}
	r := h.goProxyFailed("perf-test consume 1 KiB", 2, 1.5, errors.New("consumer-perf-goproxy: exit status 1 (log x)\nmore"))
	if !r.failed || r.note != "FAILED: consumer-perf-goproxy: exit status 1 (log x)" {
		t.Errorf("failed run: %+v", r)
	}
	if len(h.results) != 1 || len(h.pick("perf-test consume 1 KiB", goproxy, func(r result) float64 { return r.wall })) != 0 {
		t.Errorf("results %+v: the failed run is not recorded, or is picked", h.results)
	}
}
