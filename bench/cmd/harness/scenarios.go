package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// result is one run of one scenario on one path.
type result struct {
	scenario string
	path     string // direct | relay | gateway | goproxy
	rep      int
	recs     float64 // records/s
	mibps    float64
	p50      float64 // ms; NaN when the tool measures no latency
	p90      float64 // loadgen's; NaN for perf-test's producer, which prints none
	p95      float64 // loadgen's and perf-test's
	p99      float64
	p999     float64
	// later: perf-test's producer, the highest of its 5 s windows' maximum
	// latencies after the first (ms): the run's worst once the producer has
	// started (its first seconds make the p99 of a 10 s run at half load);
	// 0 or NaN when the tool prints no such window
	later    float64
	bytes    float64 // payload bytes moved (relayed, for the gateway and the relay)
	hopCPU   float64 // the relaying process's (gateway's or relay's) utime+stime over the run, seconds
	hopSched float64 // the same from its threads' schedstat run time (ns precision; quota.go), seconds
	hopHWM   float64 // its peak RSS during the run (VmHWM), KiB
	hopWakes float64 // the times its threads were scheduled in over the run (waits.go)
	hopSys   float64 // its system calls over the run, BENCH_SYSCALLS=1 (waits.go); < 0: not counted
	brCPU    float64 // broker's utime+stime over the run, seconds
	wall     float64 // seconds the tool ran
	slowest  float64 // loadgen -clients: the slowest consumer's seconds
	note     string
	failed   bool // the run failed (the Go proxy's: goProxyFailed); its figures are not in the tables
}

// hopCPUPerGiB is the relaying process's CPU seconds per GiB of payload
// (NaN on the direct path, which has none).
func (r result) hopCPUPerGiB() float64 {
	if r.bytes == 0 || r.path == direct {
		return math.NaN()
	}
	return r.hopCPU / (r.bytes / (1 << 30))
}

const (
	direct  = "direct"
	relay   = "relay" // bench/cmd/splicerelay: splice(2), one connection per connection
	gateway = "gateway"
	goproxy = "goproxy" // the Go proxy: grepplabs/kafka-proxy (goproxy.go)
)

// paths is every path, in the order of the first repetition (without
// goproxy when the Go proxy is left out: setupGoProxy).
var paths = []string{direct, relay, gateway, goproxy}

// hasPath says whether p is one of paths.
func hasPath(p string) bool {
	for _, x := range paths {
		if x == p {
			return true
		}
	}
	return false
}

var nan = math.NaN()

// scenario names, in the table's order. kafka-producer-perf-test runs with
// the Java producer's defaults (batch.size 16 KiB, linger.ms 5).
func scProduce(acks string) string {
	return "perf-test produce 1 KiB acks=" + acks + " (16 KiB batches), unlimited"
}
func scProduceFixed(acks string, rate int) string {
	return fmt.Sprintf("perf-test produce 1 KiB acks=%s (16 KiB batches), fixed %d rec/s", acks, rate)
}

// scFranz is the franz-go producer's unlimited row with acks (all: the
// row kept since issue 4; 1: BENCH_FRANZ_ACKS=all,1, issue 35.1).
func scFranz(acks string) string {
	if acks == "all" {
		return scFranzProduce
	}
	return "franz-go produce 1 KiB acks=" + acks + ", unlimited"
}

// scFranzFixed is its row at a fixed rate.
func scFranzFixed(acks string, rate int) string {
	if acks == "all" {
		return fmt.Sprintf(scFranzFixedFmt, rate)
	}
	return fmt.Sprintf("franz-go produce 1 KiB acks=%s, fixed %d rec/s", acks, rate)
}

const (
	scConsume       = "perf-test consume 1 KiB"
	scFranzProduce  = "franz-go produce 1 KiB acks=all, unlimited"
	scFranzConsume  = "franz-go consume 1 KiB"
	scFranzFixedFmt = "franz-go produce 1 KiB acks=all, fixed %d rec/s"
	scFranzLowFmt   = "franz-go produce 1 KiB acks=all, fixed %d rec/s, linger 0"
)

func (h *harness) bootstrap(path string) string {
	if g := h.quotaGW[path]; g != nil {
		return g.boot
	}
	switch path {
	case gateway:
		return h.gwBoot
	case relay:
		return h.relayBoot
	case goproxy:
		return h.gp.boot
	}
	return h.broker
}

// saslProps is the Java tools' SASL properties file through path: the
// tenant's key through the gateway, the broker's user through the relay
// and the Go proxy (the same handshake), none direct.
func (h *harness) saslProps(path string) string {
	switch path {
	case gateway:
		return h.clientProps
	case relay, goproxy:
		return h.relayProps
	}
	return ""
}

// hopPID is the relaying process of path: the gateway, the relay, the Go
// proxy, or none.
func (h *harness) hopPID(path string) int {
	if g := h.quotaGW[path]; g != nil {
		return g.pid()
	}
	switch path {
	case gateway:
		return h.gwPID()
	case relay:
		return h.relayPID()
	case goproxy:
		return h.goProxyPID()
	}
	return 0
}

// measure runs fn and wraps it with the relaying process's (gateway's or
// relay's) and the broker's CPU time and the relaying process's peak RSS
// (VmHWM, reset to the current RSS by clear_refs before the run); it records
// the result in runs.tsv.
func (h *harness) measure(scenario, path string, rep int, fn func() (result, error)) result {
	if h.isKfake() {
		h.kfakeBefore(scenario, path) // a fresh broker, filled when the run reads (kfake.go)
	}
	hop := h.hopPID(path)
	if hop != 0 {
		resetPeak(hop)
	}
	var counters map[string]float64
	if path == gateway {
		counters = h.engineCounters()
	}
	trace := h.startSysTrace(hop)
	prof := h.startRunProfile(hop, scenario, path, rep)
	pass := h.startPassage(hop, scenario, path, rep)
	h.e2e = h.e2eFile(scenario, path, rep)
	g0, b0, s0, w0 := cpuSeconds(hop), cpuSeconds(h.brokerPID), schedSeconds(hop), schedSlices(hop)
	t0 := time.Now()
	r, err := fn()
	wall := time.Since(t0).Seconds()
	g1, b1, s1, w1 := cpuSeconds(hop), cpuSeconds(h.brokerPID), schedSeconds(hop), schedSlices(hop)
	r.hopSys = trace.stop()
	prof.stop()
	split := pass.stop()
	split.roundTrips(h.e2e)
	h.e2e = ""
	if counters != nil && h.gatewayAlive() {
		h.writeCounterDelta(scenario, path, rep, counters, h.engineCounters())
	}
	if path == relay && !h.relayAlive() {
		data, _ := os.ReadFile(h.relayLog)
		die("the splice relay died during %s (run %d): %v\n%s", scenario, rep, err, tail(string(data), 4000))
	}
	if path == goproxy && (err != nil || !h.goProxyAlive()) {
		return h.goProxyFailed(scenario, rep, wall, err)
	}
	if g := h.quotaGW[path]; g != nil && !g.alive() {
		data, _ := os.ReadFile(g.log)
		die("the gateway %s died during %s (run %d): %v\n---- tail of %s ----\n%s", path, scenario, rep, err, g.log, tail(string(data), 4000))
	}
	if path == gateway && !h.gatewayAlive() {
		data, _ := os.ReadFile(h.gwLog)
		tail := string(data)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		die("the gateway died during %s (%s, run %d): %v\n---- tail of %s ----\n%s", scenario, path, rep, err, h.gwLog, tail)
	}
	if err != nil {
		die("%s (%s, run %d): %v", scenario, path, rep, err)
	}
	r.scenario, r.path, r.rep, r.wall = scenario, path, rep, wall
	r.brCPU = b1 - b0
	if hop != 0 {
		r.hopCPU = g1 - g0
		r.hopSched = s1 - s0
		r.hopWakes = w1 - w0
		r.hopHWM = statusKiB(hop, "VmHWM")
	}
	h.record(r)
	h.writeSyscalls(scenario, path, rep, trace, r.bytes)
	h.recordPassage(scenario, path, rep, split)
	extra := ""
	if hop != 0 {
		extra = fmt.Sprintf(", %s %.2f CPU s/GiB, peak RSS %.0f MiB", path, r.hopCPUPerGiB(), r.hopHWM/1024)
		if r.bytes > 0 {
			gib := r.bytes / (1 << 30)
			extra += fmt.Sprintf(", %.0fk wake-ups/GiB", r.hopWakes/gib/1000)
			if r.hopSys >= 0 {
				extra += fmt.Sprintf(", %.0fk syscalls/GiB", r.hopSys/gib/1000)
			}
		}
	}
	lat := ""
	if !math.IsNaN(r.p99) {
		lat = fmt.Sprintf(", p50/p99/p99.9 %s/%s/%s ms", fmtMS(r.p50), fmtMS(r.p99), fmtMS(r.p999))
	}
	h.say("  %-48s %-7s run %d: %9.0f rec/s %7.1f MiB/s%s%s%s %s", scenario, path, rep, r.recs, r.mibps, lat, extra, split.summary(), r.note)
	return r
}

// appendTSV opens the results' file name to append rows, its header
// written first when the file is new; nil when it cannot.
func (h *harness) appendTSV(name, header string) *os.File {
	p := filepath.Join(h.out, name)
	_, statErr := os.Stat(p)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil
	}
	if statErr != nil {
		if _, err := fmt.Fprintln(f, header); err != nil {
			f.Close()
			return nil
		}
	}
	return f
}

func (h *harness) record(r result) {
	// hop_*: the relaying process of the path (gateway or relay; 0 direct)
	// later_max_ms: perf-test's producer, the highest window maximum after its first 5 s
	f := h.appendTSV("runs.tsv", "scenario\tpath\trun\trecords_s\tmib_s\tp50_ms\tp99_ms\tp999_ms\tbytes\thop_cpu_s\thop_cpu_s_per_gib\thop_peak_rss_kib\tbroker_cpu_s\twall_s\tnote\tlater_max_ms\tp90_ms\tp95_ms")
	if f == nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t%.3f\t%.3f\t%.0f\t%.3f\t%.2f\t%s\t%.1f\t%.2f\t%.2f\n",
		r.scenario, r.path, r.rep, r.recs, r.mibps, r.p50, r.p99, r.p999, r.bytes, r.hopCPU, r.hopCPUPerGiB(), r.hopHWM, r.brCPU, r.wall, r.note, r.later, r.p90, r.p95)
	h.results = append(h.results, r)
}

// ---- the tools ----

// ProducerPerformance's final line:
// "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
var perfLine = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th, ([\d.]+) ms 99.9th`)

func (h *harness) perfProducer(path, acks string, size, n, rate int) (result, error) {
	props := envStr("KAFKA_PERF_PROPS_FLAG", "--producer-props")
	args := []string{"--topic", "perf", "--num-records", strconv.Itoa(n), "--record-size", strconv.Itoa(size),
		"--throughput", strconv.Itoa(rate), props, "bootstrap.servers=" + h.bootstrap(path), "acks=" + acks}
	if f := h.saslProps(path); f != "" {
		args = append(args, envStr("KAFKA_PERF_CONFIG_FLAG", "--producer.config"), f)
	}
	out, err := h.kafkaTool(fmt.Sprintf("producer-%s-acks%s-%dB", path, acks, size), "org.apache.kafka.tools.ProducerPerformance", args...)
	if err != nil {
		return result{}, err
	}
	return parsePerfProducer(out, size, n)
}

// ProducerPerformance's window lines, one each 5 s before the final one:
// "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency."
var perfWindow = regexp.MustCompile(`(?m)^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, ([\d.]+) ms max latency\.\s*$`)

// parsePerfProducer reads ProducerPerformance's output: the final line, and
// the highest maximum of the windows after the first (result.later).
func parsePerfProducer(out string, size, n int) (result, error) {
	m := perfLine.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return result{}, fmt.Errorf("no final line in the ProducerPerformance output:\n%s", tail(out, 2000))
	}
	f := m[len(m)-1]
	num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v }
	sent := num(1)
	if int(sent) != n {
		return result{}, fmt.Errorf("ProducerPerformance sent %v of %d records", sent, n)
	}
	later := nan
	if w := perfWindow.FindAllStringSubmatch(out, -1); len(w) > 1 {
		later = 0
		for _, x := range w[1:] {
			if v, _ := strconv.ParseFloat(x[1], 64); v > later {
				later = v
			}
		}
	}
	return result{recs: num(2), mibps: num(3), p50: num(6), p90: nan, p95: num(7), p99: num(8), p999: num(9), later: later, bytes: sent * float64(size)}, nil
}

// ConsumerPerformance prints a header line then one line of values:
// start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
// rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
func (h *harness) perfConsumer(path string, n int) (result, error) {
	return h.perfConsumerOf(path, "perf", n, "")
}

// perfConsumerOf is perfConsumer on topic with extra consumer properties
// (lines of a properties file, "" for none): through the gateway or the
// relay they go in one file with the SASL ones.
func (h *harness) perfConsumerOf(path, topic string, n int, props string) (result, error) {
	args := []string{"--bootstrap-server", h.bootstrap(path), "--topic", topic, "--messages", strconv.Itoa(n), "--timeout", "60000"}
	sp := h.saslProps(path)
	switch {
	case props != "":
		f := filepath.Join(h.work, "consumer-"+path+".properties")
		if sp != "" {
			sasl, err := os.ReadFile(sp)
			if err != nil {
				return result{}, err
			}
			props = string(sasl) + props
		}
		if err := os.WriteFile(f, []byte(props), 0o600); err != nil {
			return result{}, err
		}
		args = append(args, consumerConfigFlag(), f)
	case sp != "":
		args = append(args, consumerConfigFlag(), sp)
	}
	out, err := h.kafkaTool("consumer-"+topic+"-"+path, "org.apache.kafka.tools.ConsumerPerformance", args...)
	if err != nil {
		return result{}, err
	}
	lines := strings.Split(out, "\n")
	var head []string
	var vals []string
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "start.time") && i+1 < len(lines) {
			head = splitCSV(l)
			vals = splitCSV(lines[i+1])
		}
	}
	if len(head) == 0 || len(vals) != len(head) {
		return result{}, fmt.Errorf("no result line in the ConsumerPerformance output:\n%s", tail(out, 2000))
	}
	get := func(k string) float64 {
		for i, hk := range head {
			if hk == k {
				v, _ := strconv.ParseFloat(vals[i], 64)
				return v
			}
		}
		return nan
	}
	msgs := get("data.consumed.in.nMsg")
	if msgs < float64(n) {
		return result{}, fmt.Errorf("ConsumerPerformance consumed %v of %d records", msgs, n)
	}
	// The fetch.* figures leave out the group join (rebalance.time.ms).
	return result{recs: get("fetch.nMsg.sec"), mibps: get("fetch.MB.sec"), p50: nan, p99: nan, p999: nan,
		bytes: get("data.consumed.in.MB") * (1 << 20),
		note:  fmt.Sprintf("(join %.0f ms; with it %.1f MiB/s)", get("rebalance.time.ms"), get("MB.sec"))}, nil
}

func consumerConfigFlag() string {
	// Kafka 4.2 renamed --consumer.config to --command-config, as it did
	// for the producer tool.
	if envStr("KAFKA_PERF_CONFIG_FLAG", "--producer.config") == "--command-config" {
		return "--command-config"
	}
	return "--consumer.config"
}

func splitCSV(l string) []string {
	var out []string
	for _, f := range strings.Split(l, ",") {
		out = append(out, strings.TrimSpace(f))
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var loadgenLine = regexp.MustCompile(`RESULT phase=(\w+) (.*)`)

// loadgen runs bench/cmd/loadgen for one phase (produce or consume); extra
// flags come last (a later -topic wins).
func (h *harness) loadgen(path, phase string, n, size, rate int, linger time.Duration, extra ...string) (result, error) {
	args := []string{filepath.Join(h.bin, "loadgen"), "-brokers", h.bootstrap(path), "-topic", "perf",
		"-n", strconv.Itoa(n), "-size", strconv.Itoa(size), "-acks", "all", "-linger", linger.String(),
		"-produce=" + strconv.FormatBool(phase == "produce"), "-consume=" + strconv.FormatBool(phase == "consume")}
	if rate > 0 {
		args = append(args, "-rate", strconv.Itoa(rate))
	}
	if h.e2e != "" && phase == "produce" {
		args = append(args, "-e2e", h.e2e)
	}
	args = append(args, extra...)
	var env []string
	switch {
	case path == gateway || h.quotaGW[path] != nil:
		args = append(args, "-user", h.keyID)
		env = []string{"LOADGEN_PASS=" + h.key}
	case path == relay || path == goproxy:
		args = append(args, "-user", h.relayUser)
		env = []string{"LOADGEN_PASS=" + h.relayPass}
	}
	out, err := h.run(fmt.Sprintf("loadgen-%s-%s", phase, path), env, args...)
	if err != nil {
		return result{}, fmt.Errorf("%v\n%s", err, tail(out, 2000))
	}
	m := loadgenLine.FindStringSubmatch(out)
	if m == nil || m[1] != phase {
		return result{}, fmt.Errorf("no RESULT line in the loadgen output:\n%s", tail(out, 2000))
	}
	kv := map[string]float64{}
	for _, f := range strings.Fields(m[2]) {
		if k, v, ok := strings.Cut(f, "="); ok {
			x, _ := strconv.ParseFloat(v, 64)
			kv[k] = x
		}
	}
	r := result{recs: kv["rec_s"], mibps: kv["mib_s"], p50: nan, p90: nan, p95: nan, p99: nan, p999: nan, bytes: kv["records"] * float64(size),
		slowest: kv["slowest_s"]}
	if c := kv["clients"]; c > 0 {
		r.note = fmt.Sprintf("clients=%.0f connects=%.0f read_errors=%.0f", c, kv["connects"], kv["read_errors"])
	}
	if phase == "produce" {
		r.p50, r.p99, r.p999 = kv["p50_ms"], kv["p99_ms"], kv["p999_ms"]
		r.p90, r.p95 = nan, nan
		if v, ok := kv["p90_ms"]; ok {
			r.p90 = v
		}
		if v, ok := kv["p95_ms"]; ok {
			r.p95 = v
		}
	}
	return r, nil
}

// ---- the run ----

// order is the order of the paths in repetition rep: the list rotated by
// one each repetition, so that no path always runs first (direct, relay,
// gateway; then relay, gateway, direct; ...). Without a list: every path.
func order(rep int, ps ...string) []string {
	if len(ps) == 0 {
		ps = paths
	}
	out := make([]string, 0, len(ps))
	for i := range ps {
		out = append(out, ps[(rep-1+i)%len(ps)])
	}
	return out
}

func (h *harness) runReal() {
	t0 := time.Now()
	// BENCH_PARTS=many, quota, quota-reached, otlp alone: no relay, no
	// warm-up (they start their own gateways).
	own := 0
	for _, p := range []string{"many", "quota", "quota-reached", "otlp"} {
		if h.parts[p] {
			own++
		}
	}
	if len(h.parts) > own {
		if h.isKfake() {
			h.freshKfake(direct, false) // the gateway's upstream, up before it
		}
		h.startGateway()
		h.startRelay()
		h.startGoProxy()
		// Warm-up, not recorded: JIT of the broker, page cache, the gateway's heap.
		h.say("warm-up")
		for _, p := range paths {
			if h.isKfake() {
				h.freshKfake(p, false)
			}
			if _, err := h.perfProducer(p, "1", 1024, 50000, -1); err != nil {
				if p != goproxy {
					die("warm-up: %v", err)
				}
				h.say("warm-up through the Go proxy failed (its runs will say): %s", firstLine(err.Error()))
				if !h.goProxyAlive() {
					h.startGoProxy()
				}
			}
		}
	}

	if h.parts["hold"] {
		h.hold()
	}
	if h.parts["table"] {
		h.runTable()
	}
	if (h.parts["bigfetch"] || h.parts["rssfetch"] || h.parts["many"]) && !h.isKfake() { // kfake: each run's own fill
		h.fillBig()
	}
	if h.parts["bigfetch"] {
		h.bigFetch()
	}
	if h.parts["table"] || h.parts["bigfetch"] {
		summary, detail := h.summaryTable(), h.table()
		must(os.WriteFile(filepath.Join(h.out, "table.md"), []byte(summary), 0o644))
		must(os.WriteFile(filepath.Join(h.out, "table-detail.md"), []byte(detail), 0o644))
		fmt.Println()
		fmt.Println(summary)
		fmt.Println(detail)
		h.say("table: %.0f s", time.Since(t0).Seconds())
	}
	if h.parts["rssfetch"] {
		h.rssFetch()
	}
	if h.parts["sweep"] {
		h.sweep()
	}
	if h.parts["many"] {
		h.many()
	}
	if h.parts["quota"] {
		h.quotaPart()
	}
	if h.parts["quota-reached"] {
		h.reachedPart()
	}
	if h.parts["otlp"] {
		h.otlpPart()
	}
	h.stopKfake()
	h.stopRelay()
	h.stopGoProxy()
	if h.parts["profile"] && h.profile {
		if !h.gatewayAlive() {
			h.startGateway()
		}
		h.cpuProfile()
		h.goProfile()
	}
	h.stopGateway()
	h.gatewayErrors()
	load, _ := os.ReadFile("/proc/loadavg")
	h.say("real-broker run: %.0f s; load average now %s", time.Since(t0).Seconds(), strings.TrimSpace(string(load)))
}

// runTable runs the scenarios of the table on every path. With
// BENCH_PARTS=issue only the rows of issue 11's table: perf-test acks=all
// and franz-go, unlimited and at half the direct maximum.
func (h *harness) runTable() {
	acksList := []string{"all", "1"}
	if h.issueOnly {
		acksList = []string{"all"}
	}
	h.say("unlimited rate, %d records of 1 KiB, %d runs each, paths %v in turn", h.records, h.repeat, paths)
	for rep := 1; rep <= h.repeat; rep++ {
		for _, acks := range acksList {
			for _, p := range order(rep) {
				h.measure(scProduce(acks), p, rep, func() (result, error) { return h.perfProducer(p, acks, 1024, h.records, -1) })
			}
		}
		if !h.issueOnly {
			for _, p := range order(rep) {
				h.measure(scConsume, p, rep, func() (result, error) { return h.perfConsumer(p, h.records) })
			}
		}
		for _, acks := range h.franzAcks {
			for _, p := range order(rep) {
				h.measure(scFranz(acks), p, rep, func() (result, error) {
					return h.loadgen(p, "produce", h.records, 1024, 0, 5*time.Millisecond, "-acks", acks)
				})
			}
		}
		if h.kcatInTable() {
			for _, p := range order(rep) {
				h.measure(scKcatProduce, p, rep, func() (result, error) { return h.kcatProducer(p, 1024) })
			}
		}
		if h.produceOnly {
			continue
		}
		for _, p := range order(rep) {
			h.measure(scFranzConsume, p, rep, func() (result, error) { return h.loadgen(p, "consume", h.records, 1024, 0, 5*time.Millisecond) })
		}
	}

	// Fixed rate: half of the direct maximum measured above (median), or
	// the rate given (BENCH_HALF_RATE_PERF, BENCH_HALF_RATE_FRANZ): one rate
	// for every build compared (issue 35.2: each run's own half moved by
	// 1.7x in a day, and every path's tail with it).
	half := func(sc, env string) int {
		return halfRate(median(h.pick(sc, direct, func(r result) float64 { return r.recs })), envInt(env, 0))
	}
	rates := map[string]int{}
	for _, acks := range acksList {
		rates[acks] = half(scProduce(acks), "BENCH_HALF_RATE_PERF")
	}
	franzRates := map[string]int{}
	for _, acks := range h.franzAcks {
		franzRates[acks] = half(scFranz(acks), "BENCH_HALF_RATE_FRANZ")
	}
	lowRate := envInt("BENCH_LOW_RATE", 1000)
	h.say("fixed rate, %d s per run: perf-test %v rec/s (by acks), franz-go %v rec/s (by acks), and franz-go at %d rec/s with linger 0",
		h.fixedSeconds, rates, franzRates, lowRate)
	h.fixed = nil
	for _, acks := range acksList {
		h.fixed = append(h.fixed, scProduceFixed(acks, rates[acks]))
	}
	for _, acks := range h.franzAcks {
		h.fixed = append(h.fixed, scFranzFixed(acks, franzRates[acks]))
	}
	if !h.issueOnly {
		h.fixed = append(h.fixed, fmt.Sprintf(scFranzLowFmt, lowRate))
	}
	for rep := 1; rep <= h.repeat; rep++ {
		for _, acks := range acksList {
			rate := rates[acks]
			for _, p := range order(rep) {
				h.measure(scProduceFixed(acks, rate), p, rep, func() (result, error) {
					return h.perfProducer(p, acks, 1024, rate*h.fixedSeconds, rate)
				})
			}
		}
		for _, acks := range h.franzAcks {
			rate := franzRates[acks]
			for _, p := range order(rep) {
				h.measure(scFranzFixed(acks, rate), p, rep, func() (result, error) {
					return h.loadgen(p, "produce", rate*h.fixedSeconds, 1024, rate, 5*time.Millisecond, "-acks", acks)
				})
			}
		}
		if h.issueOnly {
			continue
		}
		// A light load: what one request costs through the gateway when
		// the machine is not saturated (one record per request).
		for _, p := range order(rep) {
			h.measure(fmt.Sprintf(scFranzLowFmt, lowRate), p, rep, func() (result, error) {
				return h.loadgen(p, "produce", lowRate*h.fixedSeconds, 1024, lowRate, 0)
			})
		}
	}
}

// gatewayErrors reports what the gateway logged at WARN and above.
func (h *harness) gatewayErrors() {
	logs := mustGlob(filepath.Join(h.out, "gateway-*.log"))
	var b strings.Builder
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, `"level":"ERROR"`) || strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, "panic") {
				fmt.Fprintf(&b, "%s: %s\n", filepath.Base(p), l)
			}
		}
	}
	if b.Len() == 0 {
		h.say("the gateway logged no warning or error")
		return
	}
	_ = os.WriteFile(filepath.Join(h.out, "gateway-warnings.txt"), []byte(b.String()), 0o644)
	h.say("the gateway logged warnings or errors (gateway-warnings.txt):\n%s", tail(b.String(), 3000))
}

// ---- statistics and the table ----

func (h *harness) pick(sc, path string, f func(result) float64) []float64 {
	var v []float64
	for _, r := range h.results {
		if r.scenario == sc && r.path == path && !r.failed {
			if x := f(r); !math.IsNaN(x) {
				v = append(v, x)
			}
		}
	}
	return v
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return nan
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minMax(v []float64) (float64, float64) {
	if len(v) == 0 {
		return nan, nan
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func spread(v []float64, format string) string {
	if len(v) == 0 {
		return "–"
	}
	lo, hi := minMax(v)
	if len(v) == 1 {
		return fmt.Sprintf(format, median(v))
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", median(v), lo, hi)
}

func spreadMS(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	lo, hi := minMax(v)
	if len(v) == 1 {
		return fmtMS(median(v))
	}
	return fmt.Sprintf("%s (%s–%s)", fmtMS(median(v)), fmtMS(lo), fmtMS(hi))
}

// scenarios lists the table's scenarios that ran, in the table's order.
func (h *harness) scenarios() []string {
	all := append([]string{scProduce("all"), scProduce("1"), scConsume, scFranzProduce, scFranz("1"), scKcatProduce, scFranzConsume,
		h.scBigFetch(), h.scBigFetchJava()}, h.fixed...)
	var out []string
	for _, sc := range all {
		if len(h.pick(sc, direct, func(r result) float64 { return r.mibps })) > 0 {
			out = append(out, sc)
		}
	}
	return out
}

// summaryTable is the table in the shape of issue 11's: per workload, the
// direct MiB/s, then per relaying path its ratio to direct, its CPU seconds
// per GiB and its peak RSS. A fixed-rate workload shows its latencies (p50 /
// p99 ms) instead of the MiB/s and the ratio.
func (h *harness) summaryTable() string {
	var b strings.Builder
	hops, heads, who, procs := []string{gateway, relay}, []string{"flexway", "splice relay"}, "splice relay, flexway", "the gateway, or the relay"
	if hasPath(goproxy) {
		hops, heads = append(hops, goproxy), append(heads, h.goProxyLabel())
		who, procs = who+", "+h.goProxyLabel(), "the gateway, the relay, or the Go proxy"
	}
	fmt.Fprintf(&b, "%s\n", h.brokerLine())
	fmt.Fprintf(&b, "Median of %d runs (min–max); paths in turn within each run: direct, %s.\n", h.repeat, who)
	fmt.Fprintf(&b, "ratio: the path's MiB/s / direct's (median of the per-run ratios, min–max); CPU s/GiB: utime+stime of the relaying\n")
	fmt.Fprintf(&b, "process (%s) per GiB of payload (median); VmHWM: its peak RSS, highest of the runs (reset\n", procs)
	fmt.Fprintf(&b, "to the current RSS before each run by clear_refs; the process runs for the whole table). Fixed-rate rows: p50 / p99 ms\n")
	fmt.Fprintf(&b, "of the producer's records, at half the direct maximum of the unlimited row above, or at BENCH_HALF_RATE_PERF and\n")
	fmt.Fprintf(&b, "BENCH_HALF_RATE_FRANZ when given (the rate is in the row's name; the linger 0 row: a light load);\n")
	fmt.Fprintf(&b, "perf-test's: \"after 5 s: max M\", the median of its runs' worst latency once its first 5 s window is past (its start,\n")
	fmt.Fprintf(&b, "connections and SASL with the backlog they leave, makes the p99 of a 10 s run).\n\n")
	fmt.Fprint(&b, "| workload | direct MiB/s |")
	for _, hd := range heads {
		fmt.Fprintf(&b, " %s ratio · CPU s/GiB · VmHWM |", hd)
	}
	fmt.Fprintln(&b, "\n| --- | --: |"+strings.Repeat(" --- |", len(hops)))
	for _, sc := range h.scenarios() {
		fixed := len(h.pick(sc, direct, func(r result) float64 { return r.p99 })) > 0 && strings.Contains(sc, "fixed")
		mib := func(p string) []float64 { return h.pick(sc, p, func(r result) float64 { return r.mibps }) }
		var first string
		if fixed {
			first = h.latCell(sc, direct)
		} else {
			first = spread(mib(direct), "%.0f")
		}
		cells := []string{}
		for _, p := range hops {
			fails := h.failures(sc, p)
			if len(mib(p)) == 0 {
				cells = append(cells, cmp.Or(fails, "–"))
				continue
			}
			var lead string
			if fixed {
				lead = h.latCell(sc, p)
			} else {
				lead = spread(h.ratios(sc, p), "%.2f")
			}
			cpu := median(h.pick(sc, p, result.hopCPUPerGiB))
			hwm := h.pick(sc, p, func(r result) float64 { return r.hopHWM })
			_, peak := minMax(hwm)
			cell := fmt.Sprintf("%s · %.2f · %.0f MiB", lead, cpu, peak/1024)
			if fails != "" {
				cell += " · " + fails
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", sc, first, strings.Join(cells, " | "))
	}
	b.WriteString(h.failureNotes(func(s string) bool { return slices.Contains(h.scenarios(), s) }))
	return b.String()
}

// latCell is "p50 / p90 / p99" (medians) of sc on path p, in ms
// ("p50 / p95 / p99" for perf-test's producer, which prints no p90; "p50 /
// p99" for runs before either was kept), and for perf-test's producer the
// median of its runs' worst latency after the first 5 s ("after 5 s: max M").
func (h *harness) latCell(sc, p string) string {
	p50 := median(h.pick(sc, p, func(r result) float64 { return r.p50 }))
	p99 := median(h.pick(sc, p, func(r result) float64 { return r.p99 }))
	mid := ""
	if m := h.midCell(sc, p); m != "" {
		mid = " / " + m
	}
	c := fmtMS(p50) + mid + " / " + fmtMS(p99) + " ms"
	if l := h.laterOf(sc, p); len(l) > 0 {
		c += " (after 5 s: max " + fmtMS(median(l)) + ")"
	}
	return c
}

// midPct is the median p90 of sc on path p in ms, or its p95 where the
// tool prints no p90 (perf-test's producer: p95 true); NaN where neither
// was kept (runs read back from before they were: 0).
func (h *harness) midPct(sc, p string) (ms float64, p95 bool) {
	kept := func(x float64) float64 {
		if x <= 0 {
			return nan
		}
		return x
	}
	if v := median(h.pick(sc, p, func(r result) float64 { return kept(r.p90) })); !math.IsNaN(v) {
		return v, false
	}
	return median(h.pick(sc, p, func(r result) float64 { return kept(r.p95) })), true
}

// midCell is midPct as a cell: "X", "p95 X", or "".
func (h *harness) midCell(sc, p string) string {
	v, p95 := h.midPct(sc, p)
	switch {
	case math.IsNaN(v):
		return ""
	case p95:
		return "p95 " + fmtMS(v)
	}
	return fmtMS(v)
}

// laterOf: the runs' result.later of sc on path p, those that have one.
func (h *harness) laterOf(sc, p string) []float64 {
	var v []float64
	for _, x := range h.pick(sc, p, func(r result) float64 { return r.later }) {
		if !math.IsNaN(x) && x > 0 {
			v = append(v, x)
		}
	}
	return v
}

// ratios pairs each run of sc on path p with the direct run of the same
// repetition: p's MiB/s over direct's.
func (h *harness) ratios(sc, p string) []float64 {
	d := map[int]float64{}
	for _, r := range h.results {
		if r.scenario == sc && r.path == direct {
			d[r.rep] = r.mibps
		}
	}
	var v []float64
	for _, r := range h.results {
		if r.scenario == sc && r.path == p && !r.failed && d[r.rep] > 0 {
			v = append(v, r.mibps/d[r.rep])
		}
	}
	return v
}

// table is the markdown table of the medians and spreads, one row per
// scenario and path (table-detail.md).
func (h *harness) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", h.brokerLine())
	fmt.Fprintf(&b, "Median of %d runs, (min–max). MiB/s of payload. /direct: ratio of the median MiB/s; +p99: the path's p99 − direct p99 (medians).\n", h.repeat)
	procs := "the gateway, or the splice relay"
	if hasPath(goproxy) {
		procs = "the gateway, the splice relay, or the Go proxy: " + h.goProxyLabel()
	}
	fmt.Fprintf(&b, "hop: the relaying process (%s): utime+stime per GiB of payload; peak RSS: VmHWM during the run.\n\n", procs)
	fmt.Fprintf(&b, "max after 5 s: perf-test's producer, the worst latency of its windows after the first (median, min–max).\n\n")
	fmt.Fprintln(&b, "| scenario | path | records/s | MiB/s | p50 ms | p90 ms | p99 ms | p99.9 ms | /direct | +p99 ms | hop CPU s/GiB | hop peak RSS MiB | max after 5 s ms |")
	fmt.Fprintln(&b, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, sc := range h.scenarios() {
		dm := median(h.pick(sc, direct, func(r result) float64 { return r.mibps }))
		dp99 := median(h.pick(sc, direct, func(r result) float64 { return r.p99 }))
		for _, p := range paths {
			recs := h.pick(sc, p, func(r result) float64 { return r.recs })
			fails := h.failures(sc, p)
			if len(recs) == 0 {
				if fails != "" {
					fmt.Fprintf(&b, "| %s | %s (%s) | | | | | | | | | | | |\n", sc, p, fails)
				}
				continue
			}
			name := p
			if fails != "" {
				name += " (" + fails + ")"
			}
			mib := h.pick(sc, p, func(r result) float64 { return r.mibps })
			ratio, addP99, cpu, rss := "", "", "", ""
			if p != direct {
				ratio = fmt.Sprintf("%.2f", median(mib)/dm)
				if gp := median(h.pick(sc, p, func(r result) float64 { return r.p99 })); !math.IsNaN(gp) {
					addP99 = fmt.Sprintf("%+.2f", gp-dp99)
				}
				cpu = spread(h.pick(sc, p, result.hopCPUPerGiB), "%.2f")
				rss = fmt.Sprintf("%.0f", median(h.pick(sc, p, func(r result) float64 { return r.hopHWM }))/1024)
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sc, name,
				median(recs), spread(mib, "%.1f"),
				fmtMS(median(h.pick(sc, p, func(r result) float64 { return r.p50 }))), h.midCell(sc, p),
				spreadMS(h.pick(sc, p, func(r result) float64 { return r.p99 })),
				fmtMS(median(h.pick(sc, p, func(r result) float64 { return r.p999 }))),
				ratio, addP99, cpu, rss, spreadMS(h.laterOf(sc, p)))
		}
	}
	return b.String()
}

// halfRate is the rate of a fixed-rate row: given (> 0), or half the
// direct maximum in whole thousands, 1,000 at least.
func halfRate(directMax float64, given int) int {
	if given > 0 {
		return given
	}
	return max(1000, int(directMax/2/1000)*1000)
}
