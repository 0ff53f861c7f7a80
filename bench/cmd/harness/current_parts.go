package main

// The rows of harness current (current.go) that the parts other than issue
// make: each from what its part wrote (many.md, density.md, quota-runs.tsv,
// quota-reached-runs.tsv and quota-reached.md, otlp's runs.tsv, the go test
// logs, the soak's report.md).

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// mdRows are the data rows of the markdown tables in text whose first
// cell satisfies keep: each row's cells, trimmed.
func mdRows(text string, keep func(first string) bool) [][]string {
	var out [][]string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|-") || strings.HasPrefix(l, "| -") || strings.HasPrefix(l, "|:") {
			continue
		}
		f := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if keep(f[0]) {
			out = append(out, f)
		}
	}
	return out
}

func readText(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

// manyRows: many.md's row, "peak P (idle I; R 10 s after) · CPU · MiB/s in all".
func (c *composer) manyRows() ([]currentRow, error) {
	text, err := readText(filepath.Join(c.dir, "many", "many.md"))
	if err != nil {
		return nil, err
	}
	rows := mdRows(text, func(f string) bool { return strings.Contains(f, " × ") })
	if len(rows) == 0 || len(rows[0]) < 9 {
		return nil, fmt.Errorf("no row in many/many.md")
	}
	f := rows[0]
	thr, _, _ := strings.Cut(f[7], " (")
	n, each, _ := strings.Cut(f[0], " × ")
	cell := fmt.Sprintf("peak %s (idle %s; %s 10 s after, %s 60 s after) · %s · %s in all; budgets %s", f[2], f[1], f[4], f[6], f[8], thr, f[3])
	return []currentRow{{workload: fmt.Sprintf("%s large-fetch consumers at once, %s each", n, each),
		cells: [4]string{"–", cell, "–", "–"}, runs: "one run", part: "many", from: "many/many.md"}}, nil
}

// densityRows: density.md of each round (density/density.md, or
// density/<round>/density.md): at the largest level, the RSS and heap per
// pair (median and min–max of the rounds), the pairs alive, the goroutines;
// the RSS per pair of the smaller levels.
func (c *composer) densityRows() ([]currentRow, error) {
	files := mustGlob(filepath.Join(c.dir, "density", "density.md"))
	files = append(files, mustGlob(filepath.Join(c.dir, "density", "*", "density.md"))...)
	levels := map[int][][]string{} // pairs -> a row per round
	for _, f := range files {
		text, err := readText(f)
		if err != nil {
			return nil, err
		}
		for _, r := range mdRows(text, func(f string) bool { _, err := strconv.Atoi(f); return err == nil }) {
			if n, _ := strconv.Atoi(r[0]); len(r) >= 9 {
				levels[n] = append(levels[n], r)
			}
		}
	}
	var ns []int
	for n := range levels {
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("no level in density/")
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ns)))
	kib := func(rows [][]string, col int) string { // "4.3 KiB (4.2–4.4)"
		var v []float64
		for _, r := range rows {
			x, _, _ := strings.Cut(r[col], " ")
			v = append(v, num(x))
		}
		med, rest, _ := strings.Cut(spread(v, "%.1f"), " ")
		return strings.TrimSpace(med + " KiB " + rest)
	}
	top := levels[ns[0]]
	alive, opened, gor := math.MaxInt, 0, []string{}
	for _, r := range top {
		a, _ := strconv.Atoi(r[2])
		o, _ := strconv.Atoi(r[1])
		alive, opened = min(alive, a), max(opened, o)
		if !contains(gor, r[8]) {
			gor = append(gor, r[8])
		}
	}
	cell := fmt.Sprintf("%s RSS each (heap %s), %s of %s alive after 5 s; goroutines %s",
		kib(top, 5), kib(top, 6), thousands(alive), thousands(opened), strings.Join(gor, ", "))
	if idle := idleCPU(top); idle != "" {
		cell += "; idle " + idle
	}
	for _, n := range ns[1:] {
		cell += fmt.Sprintf("; %s pairs %s each", thousands(n), kib(levels[n], 5))
	}
	broker := "the bench broker"
	if k := c.partEnv("density")["kafka"]; k != "" {
		v, _, _ := strings.Cut(k, " ")
		broker = "Apache Kafka " + v
	}
	return []currentRow{{workload: fmt.Sprintf("idle authenticated connection pairs, %s, against %s", thousands(ns[0]), broker),
		cells: [4]string{"–", cell, "–", "–"}, runs: runsLabel(len(top)), part: "density", from: "density/density.md (each round's)"}}, nil
}

// idleCPU: the gateway's CPU and context switches a second with the pairs
// open and idle (density.md's last column, "ms · switches"), medians of
// the rounds; "" where the rounds predate the column.
func idleCPU(rows [][]string) string {
	var ms, sw []float64
	for _, r := range rows {
		if len(r) < 17 {
			return ""
		}
		a, b, ok := strings.Cut(r[16], " · ")
		if !ok {
			return ""
		}
		ms, sw = append(ms, num(a)), append(sw, num(b))
	}
	if len(ms) == 0 {
		return ""
	}
	return fmt.Sprintf("%s ms CPU and %s context switches a second", spread(ms, "%.1f"), spread(sw, "%.0f"))
}

// partEnv is bench/run's env.txt of part p (its first round's, when it
// ran in rounds: p/1/env.txt).
func (c *composer) partEnv(p string) map[string]string {
	e := readEnv(filepath.Join(c.dir, p, "env.txt"))
	if len(e) == 0 {
		e = readEnv(filepath.Join(c.dir, p, "1", "env.txt"))
	}
	return e
}

var (
	reStalled = regexp.MustCompile(`per connection: at most (\d+) KiB held, (\d+) KiB reserved\+unread; live heap ([+-]?[\d.]+) MiB after the close`)
	reHeld    = regexp.MustCompile(`(?m)^\s*\S+\.go:\d+: (.+): held \(`)
	reFail    = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
)

// testVerdict is PASS, or FAIL and the failed tests, of a go test -v log.
func testVerdict(text string) string {
	var failed []string
	for _, m := range reFail.FindAllStringSubmatch(text, -1) {
		failed = append(failed, m[1])
	}
	switch {
	case len(failed) > 0:
		return "**FAIL** (" + strings.Join(failed, ", ") + ")"
	case strings.Contains(text, "\nok ") || strings.HasPrefix(text, "ok ") || strings.Contains(text, "\nPASS"):
		return "pass"
	}
	return "**no verdict** (the test did not end)"
}

// stalledRows: TestFlowStalledReadersReleased's figures.
func (c *composer) stalledRows() ([]currentRow, error) {
	text, err := readText(filepath.Join(c.dir, "stalled.log"))
	if err != nil {
		return nil, err
	}
	cell := testVerdict(text)
	if m := reStalled.FindStringSubmatch(text); m != nil {
		cell = fmt.Sprintf("≤ %s KiB held each (%s KiB reserved and unread); heap %s MiB after the close; %s", m[1], m[2], m[3], cell)
	}
	return []currentRow{{workload: "20 stalled readers (4 Fetches of 64 MiB never read, `max_in_flight_bytes` 4 MiB), in process",
		cells: [4]string{"–", cell, "–", "–"}, runs: "one run", part: "stalled", from: "stalled.log"}}, nil
}

// hostileRows: make hostile's attacks, how many held, and its verdict.
func (c *composer) hostileRows() ([]currentRow, error) {
	text, err := readText(filepath.Join(c.dir, "hostile.log"))
	if err != nil {
		return nil, err
	}
	cell := hostileTable(text)
	if cell == "" {
		cell = fmt.Sprintf("%d attacks held", len(reHeld.FindAllStringSubmatch(text, -1)))
	}
	cell += "; " + testVerdict(text) + "; each attack's figures in hostile.log"
	return []currentRow{{workload: "hostile peers (`make hostile`): every attack of internal/hostile on the built binary",
		cells: [4]string{"–", cell, "–", "–"}, runs: "one run", part: "hostile", from: "hostile.log"}}, nil
}

// quotaRows: quota-runs.tsv, each variant's ratios to the no-quota gateway
// of the same run (throughput · CPU s/GiB), per workload.
func (c *composer) quotaRows() ([]currentRow, error) {
	tsv, err := readTSV(filepath.Join(c.dir, "quota", "quota-runs.tsv"))
	if err != nil {
		return nil, err
	}
	type key struct{ sc, v string }
	base := map[string][2]float64{} // sc\trun -> mib, cpu of the no-quota gateway
	var scs, vs []string
	for _, r := range tsv {
		if r["gateway"] == qOff {
			base[r["scenario"]+"\t"+r["run"]] = [2]float64{num(r["mib_s"]), num(r["cpu_s_per_gib"])}
		}
		if !contains(scs, r["scenario"]) {
			scs = append(scs, r["scenario"])
		}
		if r["gateway"] != qOff && !contains(vs, r["gateway"]) {
			vs = append(vs, r["gateway"])
		}
	}
	thr, cpu := map[key][]float64{}, map[key][]float64{}
	runs := map[string]bool{}
	for _, r := range tsv {
		b, ok := base[r["scenario"]+"\t"+r["run"]]
		if r["gateway"] == qOff || !ok || b[0] <= 0 || b[1] <= 0 {
			continue
		}
		k := key{r["scenario"], r["gateway"]}
		thr[k] = append(thr[k], num(r["mib_s"])/b[0])
		cpu[k] = append(cpu[k], num(r["cpu_s_per_gib"])/b[1])
		runs[r["run"]] = true
	}
	if len(thr) == 0 {
		return nil, fmt.Errorf("no pair of runs in quota/quota-runs.tsv")
	}
	var parts []string
	for _, v := range vs {
		var per []string
		for _, sc := range scs {
			k := key{sc, v}
			per = append(per, fmt.Sprintf("%s · %s", fmtF(median(thr[k]), 3), fmtF(median(cpu[k]), 3)))
		}
		parts = append(parts, v+" "+strings.Join(per, " / "))
	}
	return []currentRow{{workload: "quotas configured, not reached: ratio to no quotas (throughput · CPU), " + strings.Join(scs, " / "),
		cells: [4]string{"–", strings.Join(parts, "; "), "–", "–"}, runs: runsLabel(len(runs)), part: "quota", from: "quota/quota-runs.tsv"}}, nil
}

// readTSV reads a tab-separated file with a header line: a map per row.
func readTSV(path string) ([]map[string]string, error) {
	text, err := readText(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	head := strings.Split(lines[0], "\t")
	var out []map[string]string
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		m := map[string]string{}
		for i, h := range head {
			if i < len(f) {
				m[h] = f[i]
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func num(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return nan
	}
	return v
}

// rangeOf is "lo–hi" of v with prec decimals ("–" when empty).
func rangeOf(v []float64, prec int) string {
	if len(v) == 0 {
		return "–"
	}
	lo, hi := minMax(v)
	if lo == hi {
		return fmtF(lo, prec)
	}
	return fmtF(lo, prec) + "–" + fmtF(hi, prec)
}

// reachedRows: per direction, the held rates of every library through the
// seed's quotas (the medians of its runs), its CPU per GiB against the
// gateway without quotas; then the noisy neighbour (quota-reached.md).
func (c *composer) reachedRows() ([]currentRow, error) {
	dir := filepath.Join(c.dir, "reached")
	tsv, err := readTSV(filepath.Join(dir, "quota-reached-runs.tsv"))
	if err != nil {
		return nil, err
	}
	var rows []currentRow
	for _, d := range []string{"produce", "consume"} {
		rate, cpuOn, cpuOff := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		runs, errs := map[string]bool{}, 0
		for _, r := range tsv {
			if r["direction"] != d {
				continue
			}
			if r["error"] != "" {
				errs++
			}
			lib := r["library"]
			runs[r["run"]] = true
			switch r["gateway"] {
			case rOn:
				rate[lib] = append(rate[lib], num(r["mib_s_held"]))
				cpuOn[lib] = append(cpuOn[lib], num(r["cpu_s_per_gib"]))
			case rOff:
				cpuOff[lib] = append(cpuOff[lib], num(r["cpu_s_per_gib"]))
			}
		}
		if len(rate) == 0 {
			continue
		}
		meds := func(m map[string][]float64) []float64 {
			var v []float64
			for _, k := range sortedKeys(m) {
				if x := median(m[k]); !math.IsNaN(x) {
					v = append(v, x)
				}
			}
			return v
		}
		cell := fmt.Sprintf("held at %s MiB/s; CPU %s against %s unheld", rangeOf(meds(rate), 3), rangeOf(meds(cpuOn), 1), rangeOf(meds(cpuOff), 2))
		if errs > 0 {
			cell += fmt.Sprintf("; %s failed", strings.Replace(runsLabel(errs), "one run", "1 run", 1))
		}
		verb := map[string]string{"produce": "producing at 1 MiB/s", "consume": "consuming at 2 MiB/s"}[d]
		rows = append(rows, currentRow{workload: fmt.Sprintf("quotas reached: %d libraries %s (%s)", len(rate), verb, strings.Join(sortedKeys(rate), ", ")),
			cells: [4]string{"–", cell, "–", "–"}, runs: runsLabel(len(runs)), part: "reached", from: "reached/quota-reached-runs.tsv"})
	}
	if nb := c.neighbourRow(dir); nb != nil {
		rows = append(rows, *nb)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no run in reached/quota-reached-runs.tsv")
	}
	return rows, nil
}

// neighbourRow: quota-reached.md's "every pass" table, globex's p99 alone
// before acme and beside it, per pass, in the column of its path.
func (c *composer) neighbourRow(dir string) *currentRow {
	text, err := readText(filepath.Join(dir, "quota-reached.md"))
	if err != nil {
		return nil
	}
	_, text, ok := strings.Cut(text, "The noisy neighbour, every pass")
	if !ok {
		return nil
	}
	rows := mdRows(text, func(f string) bool { return strings.HasPrefix(f, "through ") || strings.HasPrefix(f, "direct") })
	if len(rows) == 0 {
		return nil
	}
	var cols [4][]string
	for _, r := range rows {
		if len(r) < 10 {
			continue
		}
		pct := 100 * (num(r[9]) - 1)
		s := fmt.Sprintf("%s: %s → %s ms (%+.1f %%)", r[0], r[6], r[7], pct)
		switch {
		case strings.HasPrefix(r[0], "direct"):
			cols[0] = append(cols[0], s)
		case strings.HasPrefix(r[0], "through the splice relay"):
			cols[2] = append(cols[2], s)
		default:
			cols[1] = append(cols[1], s)
		}
	}
	row := currentRow{workload: "a noisy neighbour: globex's p99 alone, then beside acme flat out", runs: "one run", part: "reached", from: "reached/quota-reached.md"}
	for i, v := range cols {
		row.cells[i] = "–"
		if len(v) > 0 {
			row.cells[i] = strings.Join(v, "; ")
		}
	}
	return &row
}

// otlpRows: the gateway's CPU per GiB with observability.otlp on, metrics
// only and with spans, to the gateway without it in the same round.
func (c *composer) otlpRows() ([]currentRow, error) {
	rs, err := readRuns(filepath.Join(c.dir, "otlp", "runs.tsv"))
	if err != nil {
		return nil, err
	}
	h := &harness{results: rs}
	const without = "flexway without otlp"
	var scs, vs []string
	for _, r := range rs {
		if !contains(scs, r.scenario) {
			scs = append(scs, r.scenario)
		}
		if r.path != without && !contains(vs, r.path) {
			vs = append(vs, r.path)
		}
	}
	var per []string
	n := 0
	for _, sc := range scs {
		var v []string
		for _, p := range vs {
			x := h.pairedRatios(sc, p, without, result.hopCPUPerGiB)
			n = max(n, len(x))
			v = append(v, spread(x, "%.3f"))
		}
		per = append(per, strings.Join(v, " / "))
	}
	if n == 0 {
		return nil, fmt.Errorf("no round in otlp/runs.tsv")
	}
	return []currentRow{{workload: fmt.Sprintf("`observability.otlp` on: %s, CPU s/GiB ratio to without; %s", strings.Join(vs, " / "), strings.Join(scs, "; ")),
		cells: [4]string{"–", strings.Join(per, "; "), "–", "–"}, runs: runsLabel(n), part: "otlp", from: "otlp/runs.tsv"}}, nil
}

var (
	reSoakAcked = regexp.MustCompile(`\| acknowledged \| (\d+) \|`)
	reSoakLost  = regexp.MustCompile(`\| lost \| (\d+)`)
	reSoakDup   = regexp.MustCompile(`\| duplicated on the broker \| (\d+)`)
	reSoakTx    = regexp.MustCompile(`\| committed \| (\d+)`)
	reSoakTorn  = regexp.MustCompile(`\| in doubt, seen in part \| (\d+)`)
	reSoakHead  = regexp.MustCompile(`(?m)^# Soak, (\S+)`)
	reSoakEnd   = regexp.MustCompile(`\*\*Soak: (\w+)\*\*`)
)

// soakRows: the soak's report.md, what was acknowledged, lost, duplicated.
func (c *composer) soakRows() ([]currentRow, error) {
	text, err := readText(filepath.Join(c.dir, "soak", "report.md"))
	if err != nil {
		return nil, err
	}
	get := func(re *regexp.Regexp) string {
		if m := re.FindStringSubmatch(text); m != nil {
			return m[1]
		}
		return "?"
	}
	n, _ := strconv.Atoi(get(reSoakAcked))
	tx, _ := strconv.Atoi(get(reSoakTx))
	cell := fmt.Sprintf("%s records acknowledged, %s lost, %s duplicated; %s transactions committed, %s torn; %s",
		thousands(n), get(reSoakLost), get(reSoakDup), thousands(tx), get(reSoakTorn), get(reSoakEnd))
	return []currentRow{{workload: "a soak: 10 tenants, ~200 connections, groups and transactions, one fault of each kind, " + get(reSoakHead),
		cells: [4]string{"–", cell, "–", "–"}, runs: "one run", part: "soak", from: "soak/report.md"}}, nil
}

// hostileTable reads make hostile's table (attack | RSS MiB before/peak/after
// | fds | goroutines | log bytes | verdict | bound): the attacks, those that
// failed, the largest RSS growth to the peak and the most log written.
func hostileTable(text string) string {
	n, growth, logs := 0, -1.0, -1.0
	var failed []string
	var grew, logged string
	for _, l := range strings.Split(text, "\n") {
		f := strings.Split(l, " | ")
		if len(f) != 7 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[5] != "PASS" && f[5] != "FAIL" {
			continue
		}
		n++
		if f[5] == "FAIL" {
			failed = append(failed, f[0])
		}
		if r := strings.Split(f[1], "/"); len(r) == 3 && num(r[1])-num(r[0]) > growth {
			growth, grew = num(r[1])-num(r[0]), f[0]
		}
		if b := num(f[4]); b > logs {
			logs, logged = b, f[0]
		}
	}
	if n == 0 {
		return ""
	}
	cell := fmt.Sprintf("%d attacks, %d held", n, n-len(failed))
	if len(failed) > 0 {
		cell += " (failed: " + strings.Join(failed, ", ") + ")"
	}
	return cell + fmt.Sprintf("; RSS at most +%.0f MiB to the peak (%s); log at most %s bytes (%s)", growth, grew, thousands(int(logs)), logged)
}
