package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The cost of quotas configured and not reached (issue 8, item 7),
// BENCH_PARTS=quota (make bench-quota): the same build of flexway runs as
// two to four gateways at once, side by side on the one broker,
//
//   - flexway: no quotas;
//   - flexway+quotas: listeners.kafka.quotas client and tenant
//     producer_byte_rate, consumer_byte_rate and request_rate far above
//     what the run reaches (every request is counted, none is throttled);
//   - flexway again (BENCH_QUOTA_AA=1, the default): a second gateway
//     without quotas, the A/A control: its ratio to the first is what the
//     machine's noise alone gives;
//   - flexway+quotas+redis (BENCH_QUOTA_REDIS=1, the default): the same with
//     server.counters on a redis-server the harness starts, so the tenant's
//     buckets count through the shared store as well;
//
// and the franz-go producer (1 KiB, acks=all; unlimited, then at a fixed
// BENCH_QUOTA_RATE) and consumer take them in turn within each run (the
// order rotating by one each run), for BENCH_QUOTA_REPEAT runs. Recorded:
// the throughput, the gateway process's CPU seconds per GiB (its threads'
// schedstat, ns) and its requests (/metrics), each against the no-quota
// run of the same repetition; the throttles each quota gateway counted
// (flexway_kafka_throttle_seconds: none, or the quotas were reached) and
// what the Redis holds for the tenant's buckets. quota.md (the table),
// quota-runs.tsv and runs.tsv (every run); -quota-pool pools several runs.

const (
	qOff   = "flexway"
	qAA    = "flexway again" // a second gateway without quotas: the A/A control
	qOn    = "flexway+quotas"
	qRedis = "flexway+quotas+redis"
)

// quotasFar are the quotas of the quota variants: far above what one
// producer or consumer reaches here (some 500 MiB/s, 10,000 requests/s).
const quotasFar = `    quotas:
      client: { producer_byte_rate: 100GiB, consumer_byte_rate: 100GiB, request_rate: 10000000 }
      tenant: { producer_byte_rate: 100GiB, consumer_byte_rate: 100GiB, request_rate: 10000000 }
`

func scQuotaProduce(n int) string {
	return fmt.Sprintf("franz-go produce 1 KiB acks=all, unlimited, %s", recsLabel(n))
}
func scQuotaConsume(n int) string { return fmt.Sprintf("franz-go consume 1 KiB, %s", recsLabel(n)) }
func scQuotaFixed(rate, secs int) string {
	return fmt.Sprintf("franz-go produce 1 KiB acks=all, fixed %d rec/s, %d s", rate, secs)
}

func recsLabel(n int) string {
	if n%1000000 == 0 {
		return fmt.Sprintf("%dM records", n/1000000)
	}
	return fmt.Sprintf("%dk records", n/1000)
}

// gwProc is one of the quota part's gateways.
type gwProc struct {
	name, cfg, boot, admin, log string
	cmd                         *exec.Cmd
	exited                      chan struct{}
}

func (g *gwProc) pid() int {
	if g == nil || g.cmd == nil || g.cmd.Process == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

func (g *gwProc) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

func (g *gwProc) stop() {
	if g.cmd == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(15 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
}

// startQuotaGateway writes the configuration of one variant, checks it
// with flexway -check, starts bin/flexway on it and waits until its
// health answers and its bootstrap port accepts.
func (h *harness) startQuotaGateway(name string, portFrom int, admin, listenerExtra, serverExtra string) *gwProc {
	return h.startGatewayOn(name, portFrom, admin, h.gatewayYAML(portFrom, admin, listenerExtra, serverExtra))
}

// startGatewayOn is startQuotaGateway on a configuration of the caller's
// (cfg: a gatewayYAML on portFrom and admin, with lines of its own).
func (h *harness) startGatewayOn(name string, portFrom int, admin, cfg string) *gwProc {
	slug := strings.NewReplacer("+", "-", " ", "-").Replace(name)
	g := &gwProc{name: name, cfg: filepath.Join(h.work, slug+".yaml"), boot: fmt.Sprintf("127.0.0.1:%d", portFrom), admin: admin,
		log: filepath.Join(h.out, "gateway-"+slug+".log"), exited: make(chan struct{})}
	must(os.WriteFile(g.cfg, []byte(cfg), 0o600))
	if _, err := h.run("check-"+slug, nil, filepath.Join(h.bin, "flexway"), "-check", "-config", g.cfg); err != nil {
		die("%v", err)
	}
	f, err := os.Create(g.log)
	must(err)
	cmd := exec.Command(filepath.Join(h.bin, "flexway"), "-config", g.cfg)
	cmd.Dir = h.work
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWith(syscall.SIGTERM)
	must(cmd.Start())
	g.cmd = cmd
	go func() { _, _ = cmd.Process.Wait(); f.Close(); close(g.exited) }()
	if h.quotaGW == nil {
		h.quotaGW = map[string]*gwProc{}
	}
	h.quotaGW[name] = g
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if !g.alive() {
			data, _ := os.ReadFile(g.log)
			die("%s exited at start:\n%s", name, tail(string(data), 4000))
		}
		if resp, err := http.Get("http://" + admin + "/healthz"); err == nil {
			resp.Body.Close()
			if c, err := net.DialTimeout("tcp", g.boot, time.Second); err == nil {
				c.Close()
				h.say("%s up (pid %d) on %s, log %s", name, g.pid(), g.boot, g.log)
				return g
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	data, _ := os.ReadFile(g.log)
	die("%s did not start:\n%s", name, tail(string(data), 4000))
	return nil
}

func (h *harness) stopQuotaGateways() {
	for _, g := range h.quotaGW {
		g.stop()
	}
}

// redisProc is the redis-server of the server.counters variant.
type redisProc struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startRedis starts redis-server on addr, with no persistence, and waits
// until it answers PING.
func (h *harness) startRedis(port int) *redisProc {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		die("the server.counters variant needs redis-server (apt-get install redis-server), or BENCH_QUOTA_REDIS=0")
	}
	r := &redisProc{addr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	logPath := filepath.Join(h.out, "redis-server.log")
	f, err := os.Create(logPath)
	must(err)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", h.work, "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWith(syscall.SIGTERM)
	must(cmd.Start())
	r.cmd = cmd
	go func() { _, _ = cmd.Process.Wait(); f.Close(); close(r.exited) }()
	h.redis = r
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.exited:
			data, _ := os.ReadFile(logPath)
			die("redis-server exited at start (port %d taken? BENCH_REDIS_PORT=...):\n%s", port, tail(string(data), 2000))
		default:
		}
		if out, err := redisCmd(r.addr, "PING"); err == nil && strings.HasPrefix(out, "+PONG") {
			h.say("redis-server up (pid %d) on %s", cmd.Process.Pid, r.addr)
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	die("redis-server did not answer on %s", r.addr)
	return nil
}

func (h *harness) stopRedis() {
	r := h.redis
	if r == nil || r.cmd == nil || r.cmd.Process == nil {
		return
	}
	stopProc(r.cmd, r.exited)
	h.redis = nil
}

// redisCmd sends one command (RESP array of bulk strings) and returns the
// first line of the answer, or a bulk string's value.
func redisCmd(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	ans := string(buf[:n])
	if strings.HasPrefix(ans, "$") { // bulk: "$len\r\nvalue\r\n"
		if _, v, ok := strings.Cut(ans, "\r\n"); ok {
			return strings.TrimSuffix(v, "\r\n"), nil
		}
	}
	return strings.TrimSuffix(ans, "\r\n"), nil
}

// metricSum sums the samples of the series named name (any labels; for a
// histogram, name_count) on the admin endpoint at admin.
func metricSum(admin, name string) (float64, error) {
	body, err := exposition(admin)
	if err != nil {
		return 0, err
	}
	return sumSeries(body, name), nil
}

// exposition is what the admin endpoint at admin's /metrics says (16 MiB
// at most).
func exposition(admin string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// sumSeries sums the values of the exposition's lines of series name.
func sumSeries(exposition, name string) float64 {
	var sum float64
	for _, l := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(l, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, _ := strconv.ParseFloat(f[0], 64)
		sum += v
	}
	return sum
}

// quotaPart runs the part: the gateways (and the redis-server), a
// warm-up on each, then BENCH_QUOTA_REPEAT runs of the producer and of
// the consumer, the variants in turn; quota.md.
func (h *harness) quotaPart() {
	t0 := time.Now()
	repeat := envInt("BENCH_QUOTA_REPEAT", 7)
	n := envInt("BENCH_QUOTA_RECORDS", 1000000)
	rate := envInt("BENCH_QUOTA_RATE", 60000)
	secs := max(1, envInt("BENCH_QUOTA_SECONDS", 10))
	base := envInt("BENCH_QUOTA_PORT", 29102)
	withRedis := envStr("BENCH_QUOTA_REDIS", "1") == "1"
	variants := []string{qOff, qOn}
	h.startQuotaGateway(qOff, base, envStr("BENCH_QUOTA_ADMIN", "127.0.0.1:29466"), "", "")
	if envStr("BENCH_QUOTA_AA", "1") == "1" {
		h.startQuotaGateway(qAA, base+9, envStr("BENCH_QUOTA_ADMIN_AA", "127.0.0.1:29469"), "", "")
		variants = []string{qOff, qAA, qOn}
	}
	h.startQuotaGateway(qOn, base+3, envStr("BENCH_QUOTA_ADMIN_ON", "127.0.0.1:29467"), quotasFar, "")
	if withRedis {
		r := h.startRedis(envInt("BENCH_REDIS_PORT", 29479))
		h.startQuotaGateway(qRedis, base+6, envStr("BENCH_QUOTA_ADMIN_REDIS", "127.0.0.1:29468"), quotasFar,
			fmt.Sprintf("  counters: { store: \"redis://%s/0\", sync: 1s }\n", r.addr))
		variants = append(variants, qRedis)
	}
	defer func() {
		h.stopQuotaGateways()
		h.stopRedis()
	}()
	load, _ := os.ReadFile("/proc/loadavg")
	h.say("quotas configured, not reached: %v in turn, %d runs of %s each, load average %s", variants, repeat, recsLabel(n), strings.TrimSpace(string(load)))

	// Warm-up, not recorded: each gateway's heap and connections, the
	// broker's page cache for the consumers.
	for _, v := range variants {
		if _, err := h.loadgen(v, "produce", max(n/5, 50000), 1024, 0, 5*time.Millisecond); err != nil {
			die("warm-up %s: %v", v, err)
		}
		if _, err := h.loadgen(v, "consume", max(n/5, 50000), 1024, 0, 5*time.Millisecond); err != nil {
			die("warm-up %s: %v", v, err)
		}
	}
	scP, scC, scF := scQuotaProduce(n), scQuotaConsume(n), scQuotaFixed(rate, secs)
	scs := []string{scP, scC}
	if rate > 0 {
		scs = append(scs, scF)
	}
	// requests: what each run asked of its gateway (flexway_kafka_requests_total), by scenario, path, run.
	h.quotaReqs = map[string]float64{}
	counted := func(sc, v string, rep int, fn func() (result, error)) func() (result, error) {
		return func() (result, error) {
			g := h.quotaGW[v]
			r0, _ := metricSum(g.admin, "flexway_kafka_requests_total")
			r, err := fn()
			r1, _ := metricSum(g.admin, "flexway_kafka_requests_total")
			h.quotaReqs[fmt.Sprintf("%s\t%s\t%d", sc, v, rep)] = r1 - r0
			return r, err
		}
	}
	var loads []string
	for rep := 1; rep <= repeat; rep++ {
		for _, v := range order(rep, variants...) {
			h.measure(scP, v, rep, counted(scP, v, rep, func() (result, error) { return h.loadgen(v, "produce", n, 1024, 0, 5*time.Millisecond) }))
		}
		for _, v := range order(rep, variants...) {
			h.measure(scC, v, rep, counted(scC, v, rep, func() (result, error) { return h.loadgen(v, "consume", n, 1024, 0, 5*time.Millisecond) }))
		}
		// A fixed rate that every variant reaches: the same requests per
		// GiB on each (batches set by the rate and the linger), so the
		// gateway's CPU per GiB is its own cost, not the client's pace.
		for _, v := range order(rep, variants...) {
			if rate <= 0 {
				break
			}
			h.measure(scF, v, rep, counted(scF, v, rep, func() (result, error) {
				return h.loadgen(v, "produce", rate*secs, 1024, rate, 5*time.Millisecond)
			}))
		}
		load, _ := os.ReadFile("/proc/loadavg")
		loads = append(loads, strings.Fields(string(load))[0])
	}

	// The quotas held and were never reached.
	var notes []string
	for _, v := range variants[1:] {
		if v == qAA {
			continue
		}
		g := h.quotaGW[v]
		thr, err := metricSum(g.admin, "flexway_kafka_throttle_seconds_count")
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: /metrics: %v", v, err))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %.0f throttles (flexway_kafka_throttle_seconds_count)", v, thr))
	}
	if withRedis && h.redis != nil {
		for _, k := range []string{"producer_byte_rate", "consumer_byte_rate", "request_rate"} {
			key := "flexway:kafka:rate:acme:" + k + ":running"
			v, err := redisCmd(h.redis.addr, "HGET", key, "n")
			if err != nil {
				v = err.Error()
			}
			notes = append(notes, fmt.Sprintf("redis %s n = %s", key, v))
		}
	}
	h.quotaRuns(scs, variants)
	md := quotaTable(h, scs, variants, repeat, loads, notes)
	must(os.WriteFile(filepath.Join(h.out, "quota.md"), []byte(md), 0o644))
	fmt.Println()
	fmt.Println(md)
	h.say("quotas configured, not reached: %.0f s", time.Since(t0).Seconds())
}

// gwCPUPerGiB is the gateway's CPU seconds per GiB of a run: from its
// threads' schedstat (ns) where read, else utime+stime (10 ms ticks).
func gwCPUPerGiB(r result) float64 {
	if r.hopSched > 0 && r.bytes > 0 {
		return r.hopSched / (r.bytes / (1 << 30))
	}
	return r.hopCPUPerGiB()
}

// pairedRatios pairs each run of sc on path p with the run of the same
// repetition on base: f(p's) / f(base's).
func (h *harness) pairedRatios(sc, p, base string, f func(result) float64) []float64 {
	d := map[int]float64{}
	for _, r := range h.results {
		if r.scenario == sc && r.path == base {
			d[r.rep] = f(r)
		}
	}
	var v []float64
	for _, r := range h.results {
		if x, ok := d[r.rep]; r.scenario == sc && r.path == p && ok && x > 0 {
			v = append(v, f(r)/x)
		}
	}
	return v
}

// quotaRuns writes quota-runs.tsv: every run of the part, both CPU figures.
func (h *harness) quotaRuns(scs, variants []string) {
	var b strings.Builder
	fmt.Fprintln(&b, "scenario\tgateway\trun\tmib_s\tbytes\trequests\tcpu_sched_s\tcpu_utime_stime_s\tcpu_s_per_gib\tcpu_us_per_request\twall_s")
	for _, r := range h.results {
		for _, sc := range scs {
			if r.scenario != sc {
				continue
			}
			for _, v := range variants {
				if r.path == v {
					reqs := h.quotaReqs[fmt.Sprintf("%s\t%s\t%d", sc, v, r.rep)]
					fmt.Fprintf(&b, "%s\t%s\t%d\t%.2f\t%.0f\t%.0f\t%.4f\t%.2f\t%.4f\t%.2f\t%.2f\n", sc, v, r.rep, r.mibps, r.bytes, reqs,
						r.hopSched, r.hopCPU, gwCPUPerGiB(r), 1e6*r.hopSched/max(reqs, 1), r.wall)
				}
			}
		}
	}
	must(os.WriteFile(filepath.Join(h.out, "quota-runs.tsv"), []byte(b.String()), 0o644))
}

// quotaTable is quota.md: per workload and variant, the throughput and
// the gateway's CPU per GiB, each with its ratio to the no-quota gateway
// of the same run, and whether the median ratio is within 5 %.
func quotaTable(h *harness, scs, variants []string, repeat int, loads, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Quotas configured and not reached (issue 8.7). Median of %d runs (min–max); the gateways in turn within\n", repeat)
	fmt.Fprintf(&b, "each run, the order rotating by one each run. ratio: the variant's figure / the no-quota gateway's in the\n")
	fmt.Fprintf(&b, "same run (median of the per-run ratios, min–max). CPU s/GiB: the run time of that gateway process's threads\n")
	fmt.Fprintf(&b, "(/proc/<pid>/task/*/schedstat, ns) per GiB of payload. Within 5 %%: the median ratio is ≥ 0.95 (throughput)\n")
	fmt.Fprintf(&b, "or ≤ 1.05 (CPU). requests/GiB: flexway_kafka_requests_total over the run per GiB. The fixed-rate row\n")
	fmt.Fprintf(&b, "paces every variant alike (its MiB/s is the rate): its CPU s/GiB is the gateway's cost at equal batches.\n")
	fmt.Fprintf(&b, "%q: a second gateway without quotas (A/A): its ratios are what the machine's noise alone gives.\n\n", qAA)
	fmt.Fprintln(&b, "| workload | gateway | MiB/s | ratio | within 5 % | CPU s/GiB | CPU ratio | within 5 % | requests/GiB |")
	fmt.Fprintln(&b, "| --- | --- | --: | --: | :-: | --: | --: | :-: | --: |")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "**no**"
	}
	for _, sc := range scs {
		for _, v := range variants {
			mib := h.pick(sc, v, func(r result) float64 { return r.mibps })
			cpu := h.pick(sc, v, gwCPUPerGiB)
			if len(mib) == 0 {
				continue
			}
			var perGiB []float64
			for _, r := range h.results {
				if q := h.quotaReqs[fmt.Sprintf("%s\t%s\t%d", sc, v, r.rep)]; r.scenario == sc && r.path == v && q > 0 && r.bytes > 0 {
					perGiB = append(perGiB, q/(r.bytes/(1<<30)))
				}
			}
			if v == variants[0] {
				fmt.Fprintf(&b, "| %s | %s | %s | – | – | %s | – | – | %s |\n", sc, v, spread(mib, "%.0f"), spread(cpu, "%.3f"), spread(perGiB, "%.0f"))
				continue
			}
			tr := h.pairedRatios(sc, v, variants[0], func(r result) float64 { return r.mibps })
			cr := h.pairedRatios(sc, v, variants[0], gwCPUPerGiB)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sc, v, spread(mib, "%.0f"),
				spread(tr, "%.3f"), yes(median(tr) >= 0.95), spread(cpu, "%.3f"), spread(cr, "%.3f"), yes(median(cr) <= 1.05), spread(perGiB, "%.0f"))
		}
	}
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "- Load average (1 min) after each run: %s.\n", strings.Join(loads, ", "))
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	return b.String()
}

// quotaPool reads the quota-runs.tsv of several runs of the part and
// returns the pooled table: each variant's ratios to the no-quota gateway
// of the same repetition of the same run, throughput and CPU per GiB,
// median and interquartile range over every pair (harness -quota-pool).
func quotaPool(files []string) (string, error) {
	type key struct{ sc, v string }
	thr, cpu := map[key][]float64{}, map[key][]float64{}
	var order []key
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		type row struct {
			sc, v, run string
			mib, cpu   float64
		}
		var rows []row
		base := map[string]row{}
		for j, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			c := strings.Split(l, "\t")
			if j == 0 || len(c) < 11 {
				continue
			}
			mib, _ := strconv.ParseFloat(c[3], 64)
			cg, _ := strconv.ParseFloat(c[8], 64)
			r := row{c[0], c[1], c[2], mib, cg}
			rows = append(rows, r)
			if r.v == qOff {
				base[r.sc+"\t"+r.run] = r
			}
		}
		for _, r := range rows {
			b, ok := base[r.sc+"\t"+r.run]
			if r.v == qOff || !ok || b.mib <= 0 || b.cpu <= 0 {
				continue
			}
			k := key{r.sc, r.v}
			if _, seen := thr[k]; !seen {
				order = append(order, k)
			}
			thr[k] = append(thr[k], r.mib/b.mib)
			cpu[k] = append(cpu[k], r.cpu/b.cpu)
		}
	}
	iqr := func(v []float64) string {
		s := append([]float64(nil), v...)
		sort.Float64s(s)
		q := func(p float64) float64 { return s[int(p*float64(len(s)-1))] }
		return fmt.Sprintf("%.3f (%.3f–%.3f)", median(s), q(0.25), q(0.75))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs pooled: each variant's ratio to the no-quota gateway of the same repetition; median (interquartile range).\n\n", len(files))
	fmt.Fprintln(&b, "| workload | gateway | pairs | throughput ratio | CPU s/GiB ratio |")
	fmt.Fprintln(&b, "| --- | --- | --: | --: | --: |")
	sort.SliceStable(order, func(i, j int) bool { return order[i].sc < order[j].sc })
	for _, k := range order {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", k.sc, k.v, len(thr[k]), iqr(thr[k]), iqr(cpu[k]))
	}
	return b.String(), nil
}
