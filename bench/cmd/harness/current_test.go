package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// currentFixture copies testdata/current (every part's results, as
// bench/table leaves them) to a fresh folder, and writes many.md and the
// neighbour's table of quota-reached.md with the harness's own writers, so
// that the composing follows their shape.
func currentFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/current")); err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("many/many.md", manyTable(manyFigures{n: 100, mib: 256, idleKiB: 20 << 10, peakKiB: 32 << 10,
		total: 1 << 30, tenant: 256 << 20, perConn: 64 << 20,
		after: map[int]float64{10: 23 << 10, 30: 22 << 10, 60: 21 << 10}, mibps: 1609, cpuPerGiB: 0.31, seconds: 16, slowest: 15}))
	// The many part ran at another commit: the table must say so.
	write("many/env.txt", "commit:   def5678\n")
	win := func(before, beside, after float64) []nbWindow {
		return []nbWindow{{p99: before}, {p99: beside}, {p99: after}}
	}
	var b strings.Builder
	b.WriteString("Quotas reached (issue 22.6): ...\n")
	neighbourSummary(&b, []*neighbourResult{
		{gw: rOn, win: win(13.1, 13.8, 13.2)},
		{gw: rOff, win: win(12.5, 324, 12.6)},
		{gw: direct, pace: &nbPace{produce: 2, consume: 2, burst: 1}, win: win(11.7, 11.7, 11.7)},
		{gw: relay, pace: &nbPace{produce: 2, consume: 2, burst: 1024}, win: win(12.2, 11.9, 12.0)},
	})
	write("reached/quota-reached.md", b.String())
	return dir
}

// tableRows are the rows of current.md's table (the header and its
// separator left out), by their first cell.
func tableRows(t *testing.T, md string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	for _, f := range mdRows(md, func(first string) bool { return first != "workload" }) {
		if len(f) != 6 {
			t.Errorf("a row of %d cells, want 6: %v", len(f), f)
			continue
		}
		rows[f[0]] = f
	}
	return rows
}

// Every part's results make their rows of one table in the current
// table's shape: the date, the commit and the machine above it, the cells
// as BENCHMARKS.md writes them, a failed part and a part at another commit
// said so, and a line per row naming its part.
func TestCurrentComposesEveryPart(t *testing.T) {
	md, err := composeCurrent(currentFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Current figures: 2026-12-07, abc1234+dirty\n",
		"Machine: Test CPU @ 2.80GHz, 2 cores (nproc 2);",
		"Note: a fixture.\n",
		"**Warning**: part many ran at def5678.\n",
		"| workload | direct | flexway: ratio · CPU s/GiB · RSS | splice relay: ratio · CPU s/GiB · RSS | Go proxy: ratio · CPU s/GiB · RSS | measured |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("current.md lacks %q:\n%s", want, md)
		}
	}
	rows := tableRows(t, md)
	want := map[string][5]string{ // workload: direct, flexway, relay, Go proxy, measured
		"Java producer (perf-test, acks=all, 16 KiB batches), unlimited": {"55 MiB/s (50–60)",
			"1.15 (1.10–1.20) · 1.50 · 30 MiB", "1.03 (0.96–1.10) · 1.65 · 5 MiB", "0.90 · 3.40 · 25 MiB · failed 1 of 2 runs",
			"2026-12-07, abc1234+dirty, 2 runs [issue]"},
		"p99 at half load: Java producer at 28,000 rec/s, p50 / p95 / p99; worst after the first 5 s": {"1.00 / 150 / 190 ms; 10.5 ms",
			"1.00 / 180 / 212 ms; 29.0 ms · 2.81 · 29 MiB", "–", "–", "2026-12-07, abc1234+dirty, one run [issue]"},
		"p99 at half load: franz-go at 90,000 rec/s, p50 / p90 / p99": {"6.22 / 9.50 / 86.3 ms", "6.10 / 8.80 / 62.2 ms · 0.76 · 29 MiB", "–", "–",
			"2026-12-07, abc1234+dirty, one run [issue]"},
		"peak RSS, one consumer fetching 10 MiB a partition (1 GiB, a fresh process)": {"–", "26 MiB · 0.26 · 886 MiB/s",
			"5 MiB · 0.34 · 838 MiB/s", "–", "2026-12-07, abc1234+dirty, one run [issue]"},
		// The produce part (bench/run BENCH_PARTS=produce at 3M records):
		// the records in the workload, the half-load rows apart from the
		// issue part's, a failed kcat run said in its cell.
		"Java producer (perf-test, acks=all, 16 KiB batches), unlimited, 3M records": {"110 MiB/s (100–120)",
			"1.00 (0.90–1.10) · 2.15 · 30 MiB", "1.00 (0.90–1.10) · 1.82 · 5 MiB", "no binary (/x/bin/tools/kafka-proxy)",
			"2026-12-07, abc1234+dirty, 2 runs [produce]"},
		"franz-go produce, acks=1, unlimited, 3M records": {"320 MiB/s (300–340)",
			"0.85 (0.80–0.90) · 0.59 · 29 MiB", "0.95 (0.90–1.00) · 0.44 · 5 MiB", "no binary (/x/bin/tools/kafka-proxy)",
			"2026-12-07, abc1234+dirty, 2 runs [produce]"},
		"kcat produce (librdkafka defaults, acks=all), unlimited, 3M records": {"160 MiB/s (150–170)",
			"0.95 (0.90–1.00) · 0.73 · 28 MiB", "0.80 · 0.52 · 5 MiB · failed 1 of 2 runs", "no binary (/x/bin/tools/kafka-proxy)",
			"2026-12-07, abc1234+dirty, 2 runs [produce]"},
		"p99 at half load of the 3M-record runs: Java producer acks=all at 49,000 rec/s, p50 / p95 / p99; worst after the first 5 s": {
			"5.00 / 600 / 700 ms; 20.0 ms", "19.0 / 660 / 750 ms; 30.0 ms · 2.78 · 28 MiB", "110 / 700 / 745 ms; 40.0 ms · 2.46 · 5 MiB",
			"no binary (/x/bin/tools/kafka-proxy)", "2026-12-07, abc1234+dirty, one run [produce]"},
		"p99 at half load of the 3M-record runs: franz-go acks=1 at 183,000 rec/s, p50 / p90 / p99": {"8.01 / 51.6 / 97.3 ms",
			"6.70 / 14.0 / 32.9 ms · 0.89 · 28 MiB", "9.91 / 121 / 218 ms · 0.58 · 5 MiB", "no binary (/x/bin/tools/kafka-proxy)",
			"2026-12-07, abc1234+dirty, one run [produce]"},
		"100 large-fetch consumers at once, 256 MiB each": {"–",
			"peak 32 MiB (idle 20 MiB; 23 MiB 10 s after, 21 MiB 60 s after) · 0.31 · 1609 MiB/s in all; budgets 1 GiB (256 MiB · 64 MiB)",
			"–", "–", "2026-12-07, abc1234+dirty, one run [many]"},
		"idle authenticated connection pairs, 9,000, against Apache Kafka 4.1.2": {"–",
			"4.4 KiB (4.3–4.5) RSS each (heap 3.9 KiB (3.8–4.0)), 8,990 of 9,000 alive after 5 s; goroutines 20 → 19; idle 1.4 (1.3–1.5) ms CPU and 36 (35–37) context switches a second; 1,000 pairs 7.0 KiB (6.8–7.2) each",
			"–", "–", "2026-12-07, abc1234+dirty, 2 runs [density]"},
		"20 stalled readers (4 Fetches of 64 MiB never read, `max_in_flight_bytes` 4 MiB), in process": {"–",
			"≤ 221 KiB held each (4352 KiB reserved and unread); heap +0.1 MiB after the close; pass", "–", "–",
			"2026-12-07, abc1234+dirty, one run [stalled]"},
		"hostile peers (`make hostile`): every attack of internal/hostile on the built binary": {"–",
			"3 attacks, 2 held (failed: admin-flood); RSS at most +53 MiB to the peak (partial-7MiB); log at most 18,432 bytes (admin-flood); **FAIL** (TestHostile/admin-flood, TestHostile); each attack's figures in hostile.log · **the part failed: see hostile.log**",
			"–", "–", "2026-12-07, abc1234+dirty, one run [hostile]"},
		"quotas configured, not reached: ratio to no quotas (throughput · CPU), franz-go produce 1 KiB acks=all, unlimited, 1M records / franz-go consume 1 KiB, 1M records": {
			"–", "flexway+quotas 1.000 · 1.030 / 1.100 · 0.920", "–", "–", "2026-12-07, abc1234+dirty, 2 runs [quota]"},
		"quotas reached: 2 libraries producing at 1 MiB/s (franz-go, kcat)": {"–",
			"held at 0.985–1.024 MiB/s; CPU 15.9–25.2 against 0.65–3.94 unheld", "–", "–", "2026-12-07, abc1234+dirty, one run [reached]"},
		"quotas reached: 2 libraries consuming at 2 MiB/s (franz-go, kcat)": {"–",
			"held at 1.982–2.084 MiB/s; CPU 5.9–8.3 against 0.60–1.12 unheld; 1 run failed", "–", "–", "2026-12-07, abc1234+dirty, one run [reached]"},
		"a noisy neighbour: globex's p99 alone, then beside acme flat out": {
			"direct, acme paced at the held rates: 11.7 → 11.7 ms (+0.0 %)",
			"through seed-quotas (acme held): 13.1 → 13.8 ms (+5.3 %); through no-quotas (acme unheld): 12.5 → 324 ms (+2492.0 %)",
			"through the splice relay, acme at the held rates in lumps of 1024 records: 12.2 → 11.9 ms (-2.5 %)", "–",
			"2026-12-07, abc1234+dirty, one run [reached]"},
		"`observability.otlp` on: flexway+otlp 0 / flexway+otlp 0.01, CPU s/GiB ratio to without; franz-go produce 1 KiB acks=all, unlimited, 300k records": {"–",
			"1.075 (1.050–1.100) / 1.000 (1.000–1.000)", "–", "–", "2026-12-07, abc1234+dirty, 2 runs [otlp]"},
		"a soak: 10 tenants, ~200 connections, groups and transactions, one fault of each kind, 10m0s": {"–",
			"298,969 records acknowledged, 0 lost, 0 duplicated; 10,009 transactions committed, 0 torn; PASS", "–", "–",
			"2026-12-07, abc1234+dirty, one run [soak]"},
	}
	for w, cells := range want {
		got, ok := rows[w]
		if !ok {
			t.Errorf("no row %q", w)
			continue
		}
		for i, c := range cells {
			if got[i+1] != c {
				t.Errorf("row %q, column %d: %q, want %q", w, i+2, got[i+1], c)
			}
		}
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d (the linger 0 row and the 5 MiB fetches are not in the current table)", len(rows), len(want))
	}
	if n := strings.Count(md, "\n- "); n != len(want)+10 {
		t.Errorf("%d lines naming a row's part or a part, want %d and 10", n, len(want))
	}
	for _, l := range []string{
		"- 100 large-fetch consumers at once, 256 MiB each: [many] many/many.md\n",
		"- Java producer (perf-test, acks=all, 16 KiB batches), unlimited: [issue] issue/runs.tsv\n",
		"- [many] `cmd-many`: ok, 60 s\n",
		"- [produce] `cmd-produce`: ok, 60 s\n",
		"- franz-go produce, acks=1, unlimited, 3M records: [produce] produce/runs.tsv\n",
		"- [hostile] `cmd-hostile`: failed, 60 s\n",
	} {
		if !strings.Contains(md, l) {
			t.Errorf("no line %q:\n%s", l, md)
		}
	}
}

// Without the Go proxy's binary, its column says so on the rows it would
// have measured.
func TestCurrentNoGoProxy(t *testing.T) {
	dir := currentFixture(t)
	for _, f := range []string{"issue/runs.tsv", "issue/env.txt"} {
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(data), "\n") {
			if !strings.Contains(l, "\tgoproxy\t") && !strings.HasPrefix(l, "goproxy:") {
				keep = append(keep, l)
			}
		}
		if err := os.WriteFile(p, []byte(strings.Join(keep, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md, err := composeCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, md)
	for _, w := range []string{"Java producer (perf-test, acks=all, 16 KiB batches), unlimited", "p99 at half load: franz-go at 90,000 rec/s, p50 / p90 / p99"} {
		if got := rows[w][4]; got != "no binary (/x/bin/tools/kafka-proxy)" {
			t.Errorf("row %q, Go proxy: %q, want the missing binary said", w, got)
		}
	}
	if got := rows["100 large-fetch consumers at once, 256 MiB each"][4]; got != "–" {
		t.Errorf("the many row's Go proxy cell: %q, want –", got)
	}
}

// A part whose results are missing still has its row, saying it failed.
func TestCurrentMissingResults(t *testing.T) {
	dir := currentFixture(t)
	if err := os.RemoveAll(filepath.Join(dir, "density")); err != nil {
		t.Fatal(err)
	}
	md, err := composeCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	row, ok := tableRows(t, md)["idle authenticated connection pairs, 1,000 and 9,000"]
	if !ok || !strings.HasPrefix(row[2], "the part failed: see density.log") {
		t.Errorf("density's row: %q, want it said failed:\n%s", row, md)
	}
}

// The kfake part (bench/table's produce part against kfake, run only when
// named) composes to rows saying "against kfake"; not run, it adds no row,
// no warning, no line.
func TestCurrentKfakePart(t *testing.T) {
	dir := currentFixture(t)
	md, err := composeCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md, "kfake") {
		t.Errorf("without the kfake part, current.md names kfake:\n%s", md)
	}
	before := len(tableRows(t, md))

	if err := os.CopyFS(filepath.Join(dir, "kfake"), os.DirFS("testdata/current-kfake")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "parts.tsv"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("kfake\tcmd-kfake\tok\t60\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	md, err = composeCurrent(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, md)
	noProxy := "no binary (/x/bin/tools/kafka-proxy)"
	want := map[string][5]string{
		"franz-go produce, acks=all, unlimited, 3M records, against kfake": {"200 MiB/s",
			"0.90 · 0.56 · 29 MiB", "0.80 · 0.52 · 5 MiB", noProxy, "2026-12-07, abc1234+dirty, one run [kfake]"},
		"franz-go produce, acks=1, unlimited, 3M records, against kfake": {"250 MiB/s",
			"0.80 · 0.70 · 29 MiB", "0.90 · 0.45 · 5 MiB", noProxy, "2026-12-07, abc1234+dirty, one run [kfake]"},
		"p99 at half load of the 3M-record runs against kfake: franz-go acks=1 at 150,000 rec/s, p50 / p90 / p99": {
			"9.00 / 40.0 / 90.0 ms", "8.00 / 30.0 / 60.0 ms · 0.77 · 28 MiB", "–", noProxy, "2026-12-07, abc1234+dirty, one run [kfake]"},
	}
	for w, cells := range want {
		got, ok := rows[w]
		if !ok {
			t.Errorf("no row %q:\n%s", w, md)
			continue
		}
		for i, c := range cells {
			if got[i+1] != c {
				t.Errorf("row %q, column %d: %q, want %q", w, i+2, got[i+1], c)
			}
		}
	}
	if len(rows) != before+len(want) {
		t.Errorf("%d rows, want %d and kfake's %d", len(rows), before, len(want))
	}
	for _, l := range []string{
		"- franz-go produce, acks=1, unlimited, 3M records, against kfake: [kfake] kfake/runs.tsv\n",
		"- [kfake] `cmd-kfake`: ok, 60 s\n",
	} {
		if !strings.Contains(md, l) {
			t.Errorf("no line %q:\n%s", l, md)
		}
	}
	if strings.Contains(md, "part kfake ran at") {
		t.Errorf("kfake's env.txt at the table's commit read as another:\n%s", md)
	}
}

// The records of the unlimited runs, as the workloads name them.
func TestCurrentRecordsLabel(t *testing.T) {
	for n, want := range map[int]string{0: "", 3_000_000: "3M", 1_500_000: "1.5M", 300_000: "300k", 50_000: "50k", 12_345: "12,345", 3_145_728: "3,145,728"} {
		if got := recordsLabel(n); got != want {
			t.Errorf("recordsLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// bench/table's produce part (BENCH_PARTS=produce BENCH_KCAT=1) has the kcat
// row; the produce part without BENCH_KCAT=1 and the issue part have not,
// nor any part without kcat.
func TestCurrentProducePartRunsKcat(t *testing.T) {
	for _, c := range []struct {
		parts, env string
		kcat, want bool
	}{
		{"produce", "1", true, true},
		{"produce", "", true, false},
		{"produce", "0", false, false},
		{"produce", "1", false, false}, // kcat not installed
		{"issue", "1", true, false},
		{"table", "", true, true},
		{"table,bigfetch", "1", true, true},
	} {
		t.Setenv("BENCH_KCAT", c.env)
		p := parseParts(c.parts)
		h := &harness{kcat: c.kcat, issueOnly: p["issue"], produceOnly: p["produce"]}
		if got := h.kcatInTable(); got != c.want {
			t.Errorf("BENCH_PARTS=%s BENCH_KCAT=%q, kcat installed %v: kcat row %v, want %v", c.parts, c.env, c.kcat, got, c.want)
		}
	}
}
