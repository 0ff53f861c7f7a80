package main

// harness current DIR (issue 35.4, make bench-table): composes BENCHMARKS.md's
// current table from the results of bench/table's parts, all measured at one
// commit. DIR holds table.env and parts.tsv (bench/table's), and per part
// what the part wrote: issue/, produce/, kfake/, many/, density/, quota/,
// reached/, otlp/ (bench/run's results folders: runs.tsv, many.md, density.md,
// quota-runs.tsv, quota-reached-runs.tsv and quota-reached.md, env.txt),
// stalled.log and hostile.log (the go test output), soak/report.md. It
// writes ONE markdown table in the current table's shape (workload | direct
// | flexway | splice relay | Go proxy | measured), headed by the date, the
// commit and the machine, and a line per row naming the part that made it.

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// currentRow is one row of the table: the workload, its four cells
// (direct, flexway, splice relay, Go proxy) and the part that made it.
type currentRow struct {
	workload string
	cells    [4]string
	runs     string // "3 runs", "one run"
	part     string
	from     string // the file it was read from, in the part's folder
}

// tablePart is a line of bench/table's parts.tsv.
type tablePart struct {
	name, cmd, status string
	seconds           int
}

// composer reads one bench/table folder.
type composer struct {
	dir   string
	env   map[string]string // table.env
	parts map[string]tablePart
	order []string // the parts, in the order they ran
	rows  []currentRow
}

func currentMain(args []string) int {
	fs := flag.NewFlagSet("current", flag.ContinueOnError)
	out := fs.String("out", "", "write the table here (default: standard output)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: harness current [-out FILE] DIR (bench/table's results folder)")
		return 2
	}
	md, err := composeCurrent(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness current:", err)
		return 1
	}
	if *out == "" {
		fmt.Print(md)
		return 0
	}
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "harness current:", err)
		return 1
	}
	return 0
}

// composeCurrent reads dir and returns current.md.
func composeCurrent(dir string) (string, error) {
	c := &composer{dir: dir, env: map[string]string{}, parts: map[string]tablePart{}}
	if err := c.readMeta(); err != nil {
		return "", err
	}
	for _, p := range c.order {
		c.rows = append(c.rows, c.partRows(p)...)
	}
	return c.markdown(), nil
}

// readMeta reads table.env (key TAB value) and parts.tsv.
func (c *composer) readMeta() error {
	data, err := os.ReadFile(filepath.Join(c.dir, "table.env"))
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			c.env[k] = strings.TrimSpace(v)
		}
	}
	data, err = os.ReadFile(filepath.Join(c.dir, "parts.tsv"))
	if err != nil {
		return err
	}
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Split(l, "\t")
		if i == 0 || len(f) < 4 {
			continue
		}
		s, _ := strconv.Atoi(f[3])
		c.parts[f[0]] = tablePart{name: f[0], cmd: f[1], status: f[2], seconds: s}
		c.order = append(c.order, f[0])
	}
	return nil
}

// partRows are the rows part p makes; when it failed, or its results
// cannot be read, its rows say so.
func (c *composer) partRows(p string) []currentRow {
	var rows []currentRow
	var err error
	switch p {
	case "issue":
		rows, err = c.issueRows()
	case "produce":
		rows, err = c.produceRows()
	case "kfake":
		rows, err = c.kfakeRows()
	case "many":
		rows, err = c.manyRows()
	case "density":
		rows, err = c.densityRows()
	case "stalled":
		rows, err = c.stalledRows()
	case "hostile":
		rows, err = c.hostileRows()
	case "quota":
		rows, err = c.quotaRows()
	case "reached":
		rows, err = c.reachedRows()
	case "otlp":
		rows, err = c.otlpRows()
	case "soak":
		rows, err = c.soakRows()
	default:
		return nil
	}
	failed := c.parts[p].status != "ok"
	if err == nil && !failed {
		return rows
	}
	why := fmt.Sprintf("the part failed: see %s.log", p)
	if err != nil {
		why += fmt.Sprintf(" (%v)", err)
	}
	if len(rows) == 0 {
		return []currentRow{{workload: partWorkloads[p], cells: [4]string{"–", why, "–", "–"}, runs: "–", part: p, from: p + ".log"}}
	}
	for i := range rows {
		rows[i].cells[1] += " · **" + why + "**"
	}
	return rows
}

// partWorkloads names a part's rows when it made none.
var partWorkloads = map[string]string{
	"issue":   "issue 11's rows (the Java producer, franz-go, the large fetches, RSS at 10 MiB fetches)",
	"produce": "the produce part: the Java producer, franz-go acks=1, kcat, unlimited and at half load",
	"kfake":   "the produce part against kfake",
	"many":    "100 large-fetch consumers at once",
	"density": "idle authenticated connection pairs, 1,000 and 9,000",
	"stalled": "stalled readers",
	"hostile": "hostile peers (`make hostile`)",
	"quota":   "quotas configured, not reached",
	"reached": "quotas reached, and the noisy neighbour",
	"otlp":    "`observability.otlp` on",
	"soak":    "a soak",
}

// ---- runs.tsv ----

// readRuns reads a runs.tsv of bench/run (its columns by their header's
// names; repeated header lines skipped).
func readRuns(path string) ([]result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var head map[string]int
	var out []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) > 1 && c[0] == "scenario" && c[1] == "path" {
			head = map[string]int{}
			for i, k := range c {
				head[k] = i
			}
			continue
		}
		if head == nil || len(c) < len(head)-1 {
			continue
		}
		num := func(k string) float64 {
			i, ok := head[k]
			if !ok || i >= len(c) {
				return nan
			}
			v, err := strconv.ParseFloat(c[i], 64)
			if err != nil {
				return nan
			}
			return v
		}
		note := ""
		if i, ok := head["note"]; ok && i < len(c) {
			note = c[i]
		}
		rep, _ := strconv.Atoi(c[head["run"]])
		out = append(out, result{scenario: c[0], path: c[1], rep: rep, recs: num("records_s"), mibps: num("mib_s"),
			p50: num("p50_ms"), p90: num("p90_ms"), p95: num("p95_ms"), p99: num("p99_ms"), p999: num("p999_ms"), bytes: num("bytes"), hopCPU: num("hop_cpu_s"),
			hopHWM: num("hop_peak_rss_kib"), brCPU: num("broker_cpu_s"), wall: num("wall_s"), note: note,
			later: num("later_max_ms"), failed: strings.HasPrefix(note, "FAILED")})
	}
	return out, sc.Err()
}

// readEnv reads bench/run's env.txt ("key:   value" lines).
func readEnv(path string) map[string]string {
	m := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// runsLabel says how many runs a row's figures are of.
func runsLabel(n int) string {
	if n == 1 {
		return "one run"
	}
	return fmt.Sprintf("%d runs", n)
}

// mdCell makes s safe in a markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "|", "\\|") }

var (
	reRate  = regexp.MustCompile(`fixed (\d+) rec/s`)
	reSpace = regexp.MustCompile(`\s+`)
)

// rateLabel is "28,000 rec/s" of a fixed-rate scenario's name.
func rateLabel(sc string) string {
	m := reRate.FindStringSubmatch(sc)
	if m == nil {
		return "half the direct rate"
	}
	n, _ := strconv.Atoi(m[1])
	return thousands(n) + " rec/s"
}

// thousands writes n with commas: 28,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// fmtF is v with prec decimals, "–" when NaN.
func fmtF(v float64, prec int) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// markdown is current.md: the header (date, commit, machine), the table,
// and a line per row naming the part that made it.
func (c *composer) markdown() string {
	var b strings.Builder
	date, commit := c.env["date"], c.env["commit"]
	day, _, _ := strings.Cut(date, "T")
	fmt.Fprintf(&b, "# Current figures: %s, %s\n\n", day, commit)
	fmt.Fprintf(&b, "`make bench-table` (bench/table) at commit %s, started %s; BENCH_REPEAT=%s; parts %s.\n",
		commit, date, c.env["repeat"], strings.Join(c.order, ", "))
	if m := c.machine(); m != "" {
		fmt.Fprintf(&b, "Machine: %s.\n", m)
	}
	if n := c.env["note"]; n != "" {
		fmt.Fprintf(&b, "Note: %s.\n", strings.TrimSuffix(n, "."))
	}
	for _, w := range c.warnings() {
		fmt.Fprintf(&b, "**Warning**: %s.\n", w)
	}
	b.WriteString("\n*ratio*: the path's throughput over direct's, median of the per-run ratios (min–max); *CPU*: the relaying\n" +
		"process's CPU seconds per GiB of payload; *RSS*: its peak (VmHWM). Medians, min–max in brackets. 1 KiB records.\n" +
		"Half-load rows: p50 / p90 / p99 ms (the Java producer's: p50 / p95 / p99, perf-test prints no p90, then its worst after\n" +
		"the first 5 s).\n\n")
	b.WriteString("| workload | direct | flexway: ratio · CPU s/GiB · RSS | splice relay: ratio · CPU s/GiB · RSS | Go proxy: ratio · CPU s/GiB · RSS | measured |\n")
	b.WriteString("| --- | --: | --- | --- | --- | --- |\n")
	for _, r := range c.rows {
		cells := make([]string, 0, 6)
		cells = append(cells, mdCell(r.workload))
		for _, x := range r.cells {
			cells = append(cells, mdCell(reSpace.ReplaceAllString(x, " ")))
		}
		cells = append(cells, fmt.Sprintf("%s, %s, %s [%s]", day, commit, r.runs, r.part))
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	b.WriteString("\nWhat made each row: its part, and the file of this folder it was read from:\n\n")
	for _, r := range c.rows {
		fmt.Fprintf(&b, "- %s: [%s] %s\n", r.workload, r.part, r.from)
	}
	abs, _ := filepath.Abs(c.dir)
	b.WriteString("\nThe parts, in the order they ran (bench/table; each one's output in <part>.log):\n\n")
	for _, name := range c.order {
		p := c.parts[name]
		fmt.Fprintf(&b, "- [%s] `%s`: %s, %d s\n", name, strings.ReplaceAll(p.cmd, abs, "<this folder>"), p.status, p.seconds)
	}
	return b.String()
}

// machine is the machine's line, from the first part's env.txt.
func (c *composer) machine() string {
	for _, p := range c.order {
		e := c.partEnv(p)
		if e["cpu"] == "" {
			continue
		}
		if kb := strings.Fields(e["memory"]); len(kb) == 3 {
			e["memory"] = fmt.Sprintf("%.0f GiB memory", num(kb[1])/(1<<20))
		}
		if e["kafka"] != "" {
			e["kafka"] = "Apache Kafka " + e["kafka"]
		}
		e["go"] = strings.TrimPrefix(e["go"], "go version ")
		var f []string
		for _, k := range []string{"cpu", "memory", "kernel", "kafka", "broker", "go", "java", "goproxy"} {
			if v := e[k]; v != "" {
				f = append(f, reSpace.ReplaceAllString(v, " "))
			}
		}
		return strings.Join(f, "; ")
	}
	return ""
}

// warnings: the commit moved during the run, or a part ran at another one.
func (c *composer) warnings() []string {
	var w []string
	commit := c.env["commit"]
	if a := c.env["commit_after"]; a != "" && a != commit {
		w = append(w, fmt.Sprintf("the checkout was at %s when the run ended", a))
	}
	want, _, _ := strings.Cut(commit, "+")
	for _, p := range c.order {
		got := c.partEnv(p)["commit"]
		if got == "" {
			continue
		}
		if h, _, _ := strings.Cut(got, " "); h != want {
			w = append(w, fmt.Sprintf("part %s ran at %s", p, got))
		}
	}
	return w
}
