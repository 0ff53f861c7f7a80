package main

// The issue part's rows of harness current (current.go): issue 11's table,
// the large fetches and peak RSS at 10 MiB partition fetches, from the
// part's runs.tsv, on the four paths.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
)

// hopCols are the relaying paths in the table's column order (after direct).
var hopCols = []string{gateway, relay, goproxy}

// issueRow is one row of a part read from bench/run's runs.tsv (the issue
// part's, issueTable; the produce and kfake parts', current_produce.go):
// its workload, how its scenario is recognised, and its kind of cells.
type issueRow struct {
	workload func(sc string) string
	match    func(sc string) bool
	kind     string // "thr": MiB/s and ratios; "fixed": latencies; "rss": peak RSS
}

// issueTable is the issue part's rows.
var issueTable = []issueRow{
	{func(string) string { return "Java producer (perf-test, acks=all, 16 KiB batches), unlimited" },
		func(sc string) bool { return sc == scProduce("all") }, "thr"},
	{func(string) string { return "franz-go produce, acks=all, unlimited" },
		func(sc string) bool { return sc == scFranzProduce }, "thr"},
	{func(string) string { return "franz-go consume, default fetch sizes" },
		func(sc string) bool { return sc == scFranzConsume }, "thr"},
	{func(sc string) string {
		return "large fetches: franz-go, 50 MiB / 10 MiB a partition, " + sc[strings.LastIndex(sc, ", ")+2:]
	}, func(sc string) bool {
		return strings.HasPrefix(sc, "franz-go consume 1 KiB, fetch 50 MiB / 10 MiB per partition, ")
	}, "thr"},
	{func(sc string) string {
		return "p99 at half load: Java producer at " + rateLabel(sc) + ", p50 / p95 / p99; worst after the first 5 s"
	}, func(sc string) bool {
		return strings.HasPrefix(sc, "perf-test produce 1 KiB acks=all (16 KiB batches), fixed ")
	}, "fixed"},
	{func(sc string) string { return "p99 at half load: franz-go at " + rateLabel(sc) + ", p50 / p90 / p99" },
		func(sc string) bool {
			return strings.HasPrefix(sc, "franz-go produce 1 KiB acks=all, fixed ") && !strings.Contains(sc, "linger 0")
		}, "fixed"},
	{func(sc string) string {
		return "peak RSS, one consumer fetching 10 MiB a partition (" + strings.TrimSuffix(strings.TrimPrefix(sc, "rss-fetch franz-go consume "), ", fetch 10 MiB per partition") + ", a fresh process)"
	}, func(sc string) bool {
		return strings.HasPrefix(sc, "rss-fetch franz-go consume ") && strings.HasSuffix(sc, ", fetch 10 MiB per partition")
	}, "rss"},
}

func (c *composer) issueRows() ([]currentRow, error) {
	return c.runsRows("issue", func([]result) []issueRow { return issueTable }, "issue 11's table")
}

// runsRows are the rows of part's runs.tsv (its folder's), those of table
// (made of the runs read) in its order, a row per scenario matched; what
// names the table when no scenario matched.
func (c *composer) runsRows(part string, table func([]result) []issueRow, what string) ([]currentRow, error) {
	path := filepath.Join(c.dir, part, "runs.tsv")
	rs, err := readRuns(path)
	if err != nil {
		return nil, err
	}
	h := &harness{results: rs}
	noProxy := "no binary (" + c.goproxyBin() + ")"
	if c.partEnv(part)["goproxy"] != "" {
		noProxy = "–"
	}
	var seen []string
	for _, r := range rs {
		if !contains(seen, r.scenario) {
			seen = append(seen, r.scenario)
		}
	}
	var rows []currentRow
	for _, ir := range table(rs) {
		for _, sc := range seen {
			if !ir.match(sc) {
				continue
			}
			row := currentRow{workload: ir.workload(sc), part: part, from: part + "/runs.tsv"}
			n := 0
			for i, p := range append([]string{direct}, hopCols...) {
				cell, k := issueCell(h, ir.kind, sc, p)
				row.cells[i], n = cell, max(n, k)
				if p == goproxy && k == 0 && h.failures(sc, p) == "" {
					row.cells[i] = noProxy
				}
			}
			row.runs = runsLabel(n)
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no row of %s in %s", what, path)
	}
	return rows, nil
}

func contains(v []string, s string) bool {
	for _, x := range v {
		if x == s {
			return true
		}
	}
	return false
}

// goproxyBin is where bench/table looked for the Go proxy's binary.
func (c *composer) goproxyBin() string {
	if b := c.env["goproxy_bin"]; b != "" {
		return b
	}
	return "bin/tools/kafka-proxy"
}

// issueCell is the cell of scenario sc on path p, in the current table's
// shape, and the number of runs behind it:
//   - thr: direct "MiB/s (min–max)", a hop "ratio (min–max) · CPU s/GiB · RSS";
//   - fixed: "p50 / p90 / p99 ms" (perf-test's: "p50 / p95 / p99 ms; worst
//     after 5 s ms"; "p50 / p99 ms" for runs before the middle was kept), a hop's
//     followed by "· CPU s/GiB · RSS";
//   - rss: a hop's "RSS · CPU s/GiB · MiB/s" (direct: –).
func issueCell(h *harness, kind, sc, p string) (string, int) {
	ok := func(r result) float64 { return 1 }
	n := len(h.pick(sc, p, ok))
	fails := h.failures(sc, p)
	if n == 0 {
		if fails != "" {
			return fails, 0
		}
		return "–", 0
	}
	cpu := median(h.pick(sc, p, result.hopCPUPerGiB))
	_, peak := minMax(h.pick(sc, p, func(r result) float64 { return r.hopHWM }))
	hop := fmt.Sprintf(" · %s · %.0f MiB", fmtF(cpu, 2), peak/1024)
	var cell string
	switch kind {
	case "thr":
		if p == direct {
			mib := h.pick(sc, p, func(r result) float64 { return r.mibps })
			med, rest, _ := strings.Cut(spread(mib, "%.0f"), " ")
			return strings.TrimSpace(med + " MiB/s " + rest), n
		}
		cell = spread(h.ratios(sc, p), "%.2f") + hop
	case "fixed":
		p50 := median(h.pick(sc, p, func(r result) float64 { return r.p50 }))
		p99 := median(h.pick(sc, p, func(r result) float64 { return r.p99 }))
		mid := ""
		if v, _ := h.midPct(sc, p); !math.IsNaN(v) { // the row's name says which
			mid = " / " + fmtMS(v)
		}
		cell = fmtMS(p50) + mid + " / " + fmtMS(p99) + " ms"
		if l := h.laterOf(sc, p); len(l) > 0 {
			cell += "; " + fmtMS(median(l)) + " ms"
		}
		if p != direct {
			cell += hop
		}
	case "rss":
		if p == direct {
			return "–", 0
		}
		mib := median(h.pick(sc, p, func(r result) float64 { return r.mibps }))
		cell = fmt.Sprintf("%.0f MiB · %s · %.0f MiB/s", peak/1024, fmtF(cpu, 2), mib)
	}
	if fails != "" {
		cell += " · " + fails
	}
	return cell, n
}
