package main

// The cost of observability.otlp (issue 24, item 8), BENCH_PARTS=otlp
// (make bench-otlp): the same build of flexway runs as three gateways at
// once on the one broker,
//
//   - flexway without otlp: no observability.otlp (the default);
//   - flexway+otlp 0: observability.otlp with sampling_ratio 0, the
//     flexway.kafka.* metrics only (every metrics_interval, 60 s by default);
//   - flexway+otlp 0.01: the same with sampling_ratio BENCH_OTLP_RATIO
//     (0.01): a span for one authenticated request in a hundred;
//
// both OTLP gateways sending to one Jaeger all-in-one the harness starts
// (bin/tools/jaeger, scripts/build-jaeger.sh; in memory, on
// BENCH_OTLP_JAEGER_PORT and the 3 ports above). The franz-go producer and
// consumer of issue 11's unlimited rows (BENCH_RECORDS of 1 KiB, acks=all)
// take the gateways in turn, the order rotating by one each round, for
// BENCH_REPEAT rounds. Recorded: each gateway's throughput and CPU seconds
// per GiB (its threads' schedstat), each against the gateway without otlp
// of the same round; then, the sampled gateway stopped (its last spans
// flushed), the spans Jaeger holds from each instance (its query API)
// beside the ratio of the requests that gateway counted: the sanity check
// that the sample was drawn. otlp.md (the table) and runs.tsv.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// otlpVariant is one gateway of the part.
type otlpVariant struct {
	path     string  // its name in runs.tsv and the table
	ratio    float64 // sampling_ratio; below 0: no observability.otlp
	instance string  // service.instance.id
	port     int     // its cluster's ports: port..port+2
	admin    string  // its /metrics
}

// otlpVariants are the part's three gateways: without otlp, metrics only,
// sampled at ratio; cluster ports from base (3 each), admin ports from
// adminPort.
func otlpVariants(ratio float64, base, adminPort int) []otlpVariant {
	r := strconv.FormatFloat(ratio, 'f', -1, 64)
	vs := []otlpVariant{
		{path: "flexway without otlp", ratio: -1},
		{path: "flexway+otlp 0", ratio: 0, instance: "bench-otlp-0"},
		{path: "flexway+otlp " + r, ratio: ratio, instance: "bench-otlp-" + r},
	}
	for i := range vs {
		vs[i].port = base + 3*i
		vs[i].admin = fmt.Sprintf("127.0.0.1:%d", adminPort+i)
	}
	return vs
}

// label says what the variant configures, for the table.
func (v otlpVariant) label() string {
	switch {
	case v.ratio < 0:
		return "none"
	case v.ratio == 0:
		return "sampling_ratio: 0 (metrics only)"
	}
	return "sampling_ratio: " + strconv.FormatFloat(v.ratio, 'f', -1, 64)
}

// otlpGatewayYAML is the variant's configuration: the benchmark gateway's,
// with observability.otlp sending to endpoint over protocol where the
// variant has it (metrics_interval: the default).
func (h *harness) otlpGatewayYAML(v otlpVariant, endpoint, protocol string) string {
	cfg := h.gatewayYAML(v.port, v.admin, "", "")
	if v.ratio < 0 {
		return cfg
	}
	return cfg + fmt.Sprintf("observability:\n  otlp: { endpoint: %q, protocol: %s, sampling_ratio: %s, instance_id: %s }\n",
		endpoint, protocol, strconv.FormatFloat(v.ratio, 'f', -1, 64), v.instance)
}

// ---- Jaeger ----

// jaegerMaxTraces is what its memory store keeps (each span is a trace of
// its own: the gateway's spans are roots).
const jaegerMaxTraces = 200000

// benchJaegerConfig: OTLP over HTTP (base) and gRPC (base+1), the query
// API (base+2, its gRPC base+3; no traces of its own: they would go to
// 127.0.0.1:4317); the metrics counted by the debug exporter, one log line
// per export.
const benchJaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], exporters: [jaeger_storage_exporter] }
    metrics: { receivers: [otlp], exporters: [debug] }
  telemetry:
    metrics: { level: none }
extensions:
  jaeger_storage: { backends: { mem: { memory: { max_traces: %[5]d } } } }
  jaeger_query:
    enable_tracing: false
    storage: { traces: mem }
    http: { endpoint: "127.0.0.1:%[3]d" }
    grpc: { endpoint: "127.0.0.1:%[4]d" }
receivers:
  otlp:
    protocols:
      http: { endpoint: "127.0.0.1:%[1]d" }
      grpc: { endpoint: "127.0.0.1:%[2]d" }
exporters:
  jaeger_storage_exporter: { trace_storage: mem }
  debug: { verbosity: basic }
`

// jaegerProc is the part's Jaeger.
type jaegerProc struct {
	base   int
	cpu0   float64 // its CPU seconds when the rounds start
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// endpoint is the OTLP endpoint of protocol (http/protobuf or grpc).
func (j *jaegerProc) endpoint(protocol string) string {
	if protocol == "grpc" {
		return fmt.Sprintf("http://127.0.0.1:%d", j.base+1)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", j.base)
}

// startJaeger starts bin/tools/jaeger on ports base..base+3 and waits until
// its query API answers.
func (h *harness) startJaeger(base int) *jaegerProc {
	bin := filepath.Join(h.root, "bin", "tools", "jaeger")
	if _, err := os.Stat(bin); err != nil {
		die("BENCH_PARTS=otlp needs Jaeger: %s is missing; scripts/build-jaeger.sh (make jaeger) builds it, bench/run does when BENCH_PARTS has otlp", bin)
	}
	for p := base; p < base+4; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			die("Jaeger's port 127.0.0.1:%d is taken (%v); choose others: BENCH_OTLP_JAEGER_PORT=... (4 ports from it)", p, err)
		}
		l.Close()
	}
	j := &jaegerProc{base: base, log: filepath.Join(h.out, "jaeger.log"), exited: make(chan struct{})}
	cfg := filepath.Join(h.work, "jaeger.yaml")
	must(os.WriteFile(cfg, []byte(fmt.Sprintf(benchJaegerConfig, base, base+1, base+2, base+3, jaegerMaxTraces)), 0o600))
	f, err := os.Create(j.log)
	must(err)
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWith(syscall.SIGTERM)
	must(cmd.Start())
	j.cmd = cmd
	go func() { _, _ = cmd.Process.Wait(); f.Close(); close(j.exited) }()
	h.jaeger = j
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-j.exited:
			data, _ := os.ReadFile(j.log)
			die("jaeger exited at start:\n%s", tail(string(data), 4000))
		default:
		}
		if _, err := j.get("/api/services"); err == nil {
			h.say("jaeger up (pid %d): OTLP on 127.0.0.1:%d (http), %d (grpc), query API on %d, log %s", cmd.Process.Pid, base, base+1, base+2, j.log)
			return j
		}
		time.Sleep(200 * time.Millisecond)
	}
	die("jaeger's query API did not answer on 127.0.0.1:%d (log %s)", base+2, j.log)
	return nil
}

func (h *harness) stopJaeger() {
	j := h.jaeger
	if j == nil || j.cmd == nil || j.cmd.Process == nil {
		return
	}
	stopProc(j.cmd, j.exited)
	h.jaeger = nil
}

// get reads a path of the query API.
func (j *jaegerProc) get(path string) ([]byte, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", j.base+2, path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, tail(string(b), 500))
	}
	return b, err
}

// spans counts the spans of service flexway Jaeger holds that started
// since from, by service.instance.id.
func (j *jaegerProc) spans(from time.Time) (map[string]int, error) {
	q := url.Values{"service": {"flexway"}, "limit": {strconv.Itoa(jaegerMaxTraces)},
		"start": {strconv.FormatInt(from.UnixMicro(), 10)}, "end": {strconv.FormatInt(time.Now().Add(time.Minute).UnixMicro(), 10)}}
	body, err := j.get("/api/traces?" + q.Encode())
	if err != nil {
		return nil, err
	}
	return countSpans(body)
}

// countSpans reads the query API's answer to /api/traces: the spans by
// their process's service.instance.id ("" when it has none).
func countSpans(body []byte) (map[string]int, error) {
	var tr struct {
		Data []struct {
			Spans []struct {
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				Tags []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &tr); err != nil {
		return nil, fmt.Errorf("the query API's traces: %v", err)
	}
	n := map[string]int{}
	for _, t := range tr.Data {
		for _, s := range t.Spans {
			inst := ""
			for _, tag := range t.Processes[s.ProcessID].Tags {
				if tag.Key == "service.instance.id" {
					inst = fmt.Sprint(tag.Value)
				}
			}
			n[inst]++
		}
	}
	return n, nil
}

// waitSpans reads the spans since from until two readings a second apart
// agree (the receiver stores what it was sent a little later), within 30 s.
func (j *jaegerProc) waitSpans(from time.Time) (map[string]int, error) {
	var last map[string]int
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := j.spans(from)
		if err != nil {
			return nil, err
		}
		if fmt.Sprint(n) == fmt.Sprint(last) || time.Now().After(deadline) {
			return n, nil
		}
		last = n
		time.Sleep(time.Second)
	}
}

// ---- the part ----

// otlpPart runs the part: Jaeger, the three gateways, a warm-up on each,
// BENCH_REPEAT rounds of the producer and of the consumer on each in turn,
// then the spans; otlp.md.
func (h *harness) otlpPart() {
	t0 := time.Now()
	ratio := envFloat("BENCH_OTLP_RATIO", 0.01)
	if !(ratio > 0 && ratio <= 1) {
		die("BENCH_OTLP_RATIO=%v: want a sampling ratio above 0, at most 1", ratio)
	}
	protocol := envStr("BENCH_OTLP_PROTOCOL", "http/protobuf")
	if protocol != "http/protobuf" && protocol != "grpc" {
		die("BENCH_OTLP_PROTOCOL=%q: want http/protobuf or grpc", protocol)
	}
	j := h.startJaeger(envInt("BENCH_OTLP_JAEGER_PORT", 29480))
	defer h.stopJaeger()
	vs := otlpVariants(ratio, envInt("BENCH_OTLP_PORT", 29132), envInt("BENCH_OTLP_ADMIN_PORT", 29472))
	var paths []string
	for _, v := range vs {
		h.startGatewayOn(v.path, v.port, v.admin, h.otlpGatewayYAML(v, j.endpoint(protocol), protocol))
		paths = append(paths, v.path)
	}
	defer h.stopQuotaGateways()
	n := h.records
	load, _ := os.ReadFile("/proc/loadavg")
	h.say("observability.otlp: %v in turn, %d rounds of %s each (OTLP %s to %s), load average %s",
		paths, h.repeat, recsLabel(n), protocol, j.endpoint(protocol), strings.TrimSpace(string(load)))

	// Warm-up, not recorded: each gateway's heap and connections, the
	// broker's page cache for the consumers.
	for _, p := range paths {
		for _, phase := range []string{"produce", "consume"} {
			if _, err := h.loadgen(p, phase, max(n/5, 10000), 1024, 0, 5*time.Millisecond); err != nil {
				die("warm-up %s: %v", p, err)
			}
		}
	}
	scs := []string{scQuotaProduce(n), scQuotaConsume(n)}
	j.cpu0 = schedSeconds(j.cmd.Process.Pid)
	var loads []string
	for rep := 1; rep <= h.repeat; rep++ {
		for i, phase := range []string{"produce", "consume"} {
			for _, p := range order(rep, paths...) {
				h.measure(scs[i], p, rep, func() (result, error) { return h.loadgen(p, phase, n, 1024, 0, 5*time.Millisecond) })
			}
		}
		load, _ := os.ReadFile("/proc/loadavg")
		loads = append(loads, strings.Fields(string(load))[0])
	}
	notes := h.otlpNotes(j, vs, t0)
	md := otlpTable(h, scs, vs, h.repeat, loads, notes)
	must(os.WriteFile(filepath.Join(h.out, "otlp.md"), []byte(md), 0o644))
	fmt.Println()
	fmt.Println(md)
	h.say("observability.otlp: %.0f s", time.Since(t0).Seconds())
}

// otlpNotes stops the OTLP gateways (their last spans and metrics sent)
// and says what Jaeger received from each since from, against the
// requests the gateway counted, and Jaeger's own CPU time.
func (h *harness) otlpNotes(j *jaegerProc, vs []otlpVariant, from time.Time) []string {
	var notes []string
	reqs := map[string]float64{}
	for _, v := range vs[1:] {
		g := h.quotaGW[v.path]
		r, err := metricSum(g.admin, "flexway_kafka_requests_total")
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: /metrics: %v", v.path, err))
		}
		reqs[v.instance] = r
		g.stop()
	}
	spans, err := j.waitSpans(from.Add(-time.Minute))
	cpu := schedSeconds(j.cmd.Process.Pid) - j.cpu0
	if err != nil {
		return append(notes, fmt.Sprintf("Jaeger's query API: %v", err))
	}
	return append(notes, spanNotes(vs, spans, reqs, cpu)...)
}

// spanNotes are the table's lines on the spans: per OTLP gateway, the
// spans Jaeger holds from its instance beside its requests times its
// ratio (a sample of a ratio draws that many within 4 standard deviations
// of the binomial, give or take one; below 5 expected, too few to judge);
// spans of any other instance; Jaeger's CPU seconds.
func spanNotes(vs []otlpVariant, spans map[string]int, reqs map[string]float64, jaegerCPU float64) []string {
	var notes []string
	known := map[string]bool{}
	for _, v := range vs {
		if v.ratio < 0 {
			continue
		}
		known[v.instance] = true
		want := v.ratio * reqs[v.instance]
		got := spans[v.instance]
		check := "as sampled"
		switch {
		case v.ratio == 0 && got != 0:
			check = "**not as configured**"
		case v.ratio > 0 && want < 5:
			check = "too few requests to judge"
		case v.ratio > 0 && got == 0:
			check = "**not as configured**"
		case v.ratio > 0 && math.Abs(float64(got)-want) > 4*math.Sqrt(want*(1-v.ratio))+1:
			check = "**far from the ratio**"
		}
		notes = append(notes, fmt.Sprintf("%s (service.instance.id %s): Jaeger received %d spans; %.0f requests (flexway_kafka_requests_total, warm-up included) x %s = %.0f expected: %s.",
			v.path, v.instance, got, reqs[v.instance], strconv.FormatFloat(v.ratio, 'f', -1, 64), want, check))
	}
	var other []string
	for inst, n := range spans {
		if !known[inst] {
			other = append(other, fmt.Sprintf("%q: %d", inst, n))
		}
	}
	sort.Strings(other)
	if len(other) > 0 {
		notes = append(notes, "spans of other instances: "+strings.Join(other, ", ")+".")
	}
	if n := spans[vs[len(vs)-1].instance]; n >= jaegerMaxTraces {
		notes = append(notes, fmt.Sprintf("Jaeger keeps %d traces: the count is a floor.", jaegerMaxTraces))
	}
	return append(notes, fmt.Sprintf("Jaeger's CPU time over the rounds: %.2f s.", jaegerCPU))
}

// otlpTable is otlp.md: per workload and gateway, the throughput and the
// gateway's CPU per GiB, each with its ratio to the gateway without otlp
// in the same round.
func otlpTable(h *harness, scs []string, vs []otlpVariant, repeat int, loads, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The cost of observability.otlp (issue 24.8). Median of %d rounds (min–max); the gateways in turn within each\n", repeat)
	fmt.Fprintf(&b, "round, the order rotating by one each round, on the one broker. ratio: the gateway's figure / the one without\n")
	fmt.Fprintf(&b, "otlp in the same round (median of the per-round ratios, min–max). CPU s/GiB: the run time of that gateway\n")
	fmt.Fprintf(&b, "process's threads (/proc/<pid>/task/*/schedstat, ns) per GiB of payload. Both OTLP gateways send to one\n")
	fmt.Fprintf(&b, "Jaeger on the same machine, the metrics every 60 s (metrics_interval's default).\n\n")
	fmt.Fprintln(&b, "| workload | gateway | observability.otlp | MiB/s | ratio | CPU s/GiB | CPU ratio |")
	fmt.Fprintln(&b, "| --- | --- | --- | --: | --: | --: | --: |")
	base := vs[0].path
	for _, sc := range scs {
		for _, v := range vs {
			mib := h.pick(sc, v.path, func(r result) float64 { return r.mibps })
			cpu := h.pick(sc, v.path, gwCPUPerGiB)
			if len(mib) == 0 {
				continue
			}
			tr, cr := "–", "–"
			if v.path != base {
				tr = spread(h.pairedRatios(sc, v.path, base, func(r result) float64 { return r.mibps }), "%.3f")
				cr = spread(h.pairedRatios(sc, v.path, base, gwCPUPerGiB), "%.3f")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", sc, v.path, v.label(), spread(mib, "%.0f"), tr, spread(cpu, "%.3f"), cr)
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "- Load average (1 min) after each round: %s.\n", strings.Join(loads, ", "))
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	return b.String()
}
