// Command harness is the body of bench/run (issue 4, items 3-5; issue 11,
// items 4 and 6): against one real Apache Kafka broker that bench/run has
// started, it writes a gateway configuration, starts bin/flexway, the
// splice relay (bench/cmd/splicerelay) and the Go proxy (grepplabs/kafka-proxy,
// goproxy.go, when bench/run gives its binary) in front of the broker and
// measures four paths side by side, in turn within each repetition: direct
// to the broker, through the splice relay (a kernel-only relay of the same
// connections: the physical limit of a relaying process here), through the
// gateway and through the Go proxy (another Kafka proxy written in Go):
//
//   - kafka-producer-perf-test (org.apache.kafka.tools.ProducerPerformance),
//     1 KiB records, acks=all and acks=1, unlimited rate and a fixed rate at
//     half the direct maximum measured in the same run;
//   - the consumer perf test (org.apache.kafka.tools.ConsumerPerformance);
//   - the franz-go load generator (bench/cmd/loadgen): produce, consume, and
//     produce at a fixed rate with latencies in microseconds;
//   - the franz-go consumer with large fetches (50 MiB per fetch, 10 MiB per
//     partition) reading 2 GiB (bigfetch.go);
//   - peak RSS against the consumer's partition fetch size, 1 to 50 MiB,
//     gateway and relay, and its plot (bigfetch.go);
//   - the record-size sweep of the plot (100 B to 100 KiB, acks=1);
//   - a CPU profile of the gateway (perf record) under an unlimited producer;
//   - density (bench/cmd/density): idle authenticated connection pairs;
//   - quotas configured and not reached (BENCH_PARTS=quota, quota.go): the
//     gateway with and without quotas, in turn on the same broker;
//   - quotas reached (BENCH_PARTS=quota-reached, reached.go): each client
//     library held by the seed's quotas, and a noisy neighbour;
//   - the cost of observability.otlp (BENCH_PARTS=otlp, otlp.go): the
//     gateway without it, with metrics only and sampling 1 %, in turn,
//     sending to a Jaeger of its own.
//
// It parses the tools' own output lines, reads the relaying process's (the
// gateway's, the relay's or the Go proxy's) CPU time and peak RSS from /proc, and prints one
// table (median and min-max of BENCH_REPEAT runs). Everything it writes goes
// to -out.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flexway/flexway/bench/procstat"
)

type harness struct {
	root, out, bin, work string
	broker               string // direct bootstrap
	gwBoot               string // the gateway's bootstrap
	gwPortFrom           int
	relayBoot            string // the splice relay's listening address
	relayTarget          string // the broker's RELAY listener, which advertises relayBoot
	admin                string
	keyID, key           string
	clientProps          string // SASL properties for the Java tools (the gateway's tenant key)
	relayProps           string // SASL properties for the Java tools through the relay (the broker's user)
	relayUser, relayPass string // the broker's PLAIN user on its RELAY listener (bench/run)

	repeat       int
	records      int
	fixedSeconds int
	sizes        []int
	plotMiB      int
	plotRepeat   int
	densityN     []int
	profile      bool
	syscalls     bool            // BENCH_SYSCALLS=1: each relaying run's system calls counted (waits.go)
	runProfiles  bool            // BENCH_RUN_PROFILE=1: each relaying run's CPU sampled (waits.go)
	passage      bool            // BENCH_PASSAGE=1: each fixed-rate relaying run's requests split (passage.go)
	e2e          string          // the current run's loadgen -e2e file (passage.go); "" none
	parts        map[string]bool // BENCH_PARTS
	issueOnly    bool            // BENCH_PARTS=issue: the table's rows of issue 11 only
	produceOnly  bool            // BENCH_PARTS=produce: of those, the Produce rows only
	bigMiB       int             // BENCH_BIG_MIB
	bigJava      bool            // BENCH_BIG_JAVA=1: the large fetches with the consumer perf test too
	rssMiB       int             // BENCH_RSS_MIB
	rssFetchMiB  []int           // BENCH_RSS_FETCH_MIB
	manyN        int             // BENCH_MANY_N
	manyMiB      int             // BENCH_MANY_MIB
	manyAfter    int             // BENCH_MANY_AFTER_S

	gw        *exec.Cmd
	gwExited  chan struct{}
	gwLog     string
	brokerPID int
	seq       int
	logf      *os.File
	relay     *exec.Cmd
	relayDone chan struct{}
	relayLog  string
	gp        *goProxy // the Go proxy (goproxy.go); nil when left out

	firstNodeID int // the broker's node.id (1; tests against kfake: 0)

	brokerKind string                 // BENCH_BROKER: kafka (bench/run's Apache Kafka) or kfake (kfake.go)
	kf         *kfakeProc             // kfake: the current run's kfakesrv
	kfakeVer   string                 // kfake: its module's version (kfakesrv -version)
	kcat       bool                   // the table's kcat row (kcat.go): kcat installed, BENCH_KCAT not 0
	kcatIn     map[string]recordsFile // kcat's input files, counted once
	franzAcks  []string               // BENCH_FRANZ_ACKS: the franz-go producer's acks, rows of each

	quotaGW map[string]*gwProc // the quota part's gateways, by path (quota.go)
	redis   *redisProc         // the quota part's redis-server
	// quotaReqs: the requests each run of the quota part asked of its
	// gateway, by "scenario\tpath\trun"
	quotaReqs map[string]float64

	reached []reachedRun // the quotas-reached part's runs (reached.go)

	jaeger *jaegerProc // the otlp part's Jaeger (otlp.go)

	results []result
	fixed   []string // the fixed-rate scenarios' names (they hold the rates)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "client" { // the franz-go clients of the quotas-reached part (client.go)
		os.Exit(clientMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "current" { // make bench-table's table (current.go)
		os.Exit(currentMain(os.Args[2:]))
	}
	h := &harness{firstNodeID: 1}
	mode := flag.String("mode", "real", "real (table, plot, profile) | density | all")
	flag.StringVar(&h.root, "root", ".", "the repository")
	flag.StringVar(&h.out, "out", "", "results folder (default bench/results/<date>)")
	flag.StringVar(&h.bin, "bin", "", "folder holding flexway, loadgen and density")
	flag.StringVar(&h.work, "work", "", "scratch folder (gateway configuration)")
	flag.StringVar(&h.broker, "broker", "127.0.0.1:29192", "the broker's PLAINTEXT address")
	flag.StringVar(&h.relayBoot, "relay", "127.0.0.1:29196", "the splice relay's listening address (the broker's RELAY listener advertises it)")
	flag.StringVar(&h.relayTarget, "relay-target", "127.0.0.1:29195", "the broker's RELAY listener, where the relay connects")
	gpBin := flag.String("goproxy-bin", "", "the Go proxy's binary (grepplabs/kafka-proxy); empty: that path is left out")
	gpBoot := flag.String("goproxy", "127.0.0.1:29199", "the Go proxy's listening address")
	gpTarget := flag.String("goproxy-target", "127.0.0.1:29198", "the broker's GOPROXY listener (advertising itself), which the Go proxy proxies")
	pool := flag.String("quota-pool", "", "print the pooled table of these quota-runs.tsv files (comma-separated) and exit")
	flag.Parse()
	if *pool != "" {
		md, err := quotaPool(strings.Split(*pool, ","))
		if err != nil {
			die("%v", err)
		}
		fmt.Print(md)
		return
	}

	h.repeat = envInt("BENCH_REPEAT", 3)
	h.records = envInt("BENCH_RECORDS", 300000)
	h.fixedSeconds = envInt("BENCH_FIXED_SECONDS", 10)
	h.sizes = envInts("BENCH_SIZES", []int{100, 1024, 10240, 102400})
	h.plotMiB = envInt("BENCH_PLOT_MIB", 300)
	h.plotRepeat = envInt("BENCH_PLOT_REPEAT", h.repeat)
	h.densityN = envInts("BENCH_DENSITY_N", []int{1000, 9000})
	h.profile = os.Getenv("BENCH_PROFILE") != "0"
	h.syscalls = os.Getenv("BENCH_SYSCALLS") == "1"
	h.runProfiles = os.Getenv("BENCH_RUN_PROFILE") == "1"
	h.passage = os.Getenv("BENCH_PASSAGE") == "1"
	h.parts = parseParts(envStr("BENCH_PARTS", defaultParts(os.Getenv("BENCH_BROKER"))))
	h.issueOnly = h.parts["issue"]
	h.produceOnly = h.parts["produce"]
	h.bigMiB = envInt("BENCH_BIG_MIB", 2048)
	h.bigJava = os.Getenv("BENCH_BIG_JAVA") == "1"
	h.rssMiB = envInt("BENCH_RSS_MIB", 1024)
	h.rssFetchMiB = envInts("BENCH_RSS_FETCH_MIB", []int{1, 2, 5, 10, 20, 50})
	h.manyN = max(1, envInt("BENCH_MANY_N", 100))
	h.manyMiB = envInt("BENCH_MANY_MIB", 256)
	h.manyAfter = envInt("BENCH_MANY_AFTER_S", 60)
	h.gwPortFrom = envInt("BENCH_GW_PORT", 29092)
	h.gwBoot = fmt.Sprintf("127.0.0.1:%d", h.gwPortFrom)
	h.admin = envStr("BENCH_ADMIN", "127.0.0.1:29464")
	h.brokerPID = envInt("BENCH_BROKER_PID", 0)
	h.brokerKind = envStr("BENCH_BROKER", brokerKafka)
	switch h.brokerKind {
	case brokerKafka:
	case brokerKfake:
		h.firstNodeID = 0
		if err := checkKfakeParts(h.parts); err != nil {
			die("%v", err)
		}
		if *mode != "real" {
			die("BENCH_BROKER=kfake runs the table (mode real), not -mode %s", *mode)
		}
	default:
		die("BENCH_BROKER=%q: want kafka or kfake", h.brokerKind)
	}
	h.kcat = kcatOn()
	h.franzAcks = franzAcksList(envStr("BENCH_FRANZ_ACKS", "all"))

	var err error
	if h.root, err = filepath.Abs(h.root); err != nil {
		die("%v", err)
	}
	if h.out == "" {
		h.out = filepath.Join(h.root, "bench", "results", time.Now().Format("2006-01-02T150405"))
	}
	if h.bin == "" {
		h.bin = filepath.Join(h.root, "bin")
	}
	if h.work == "" {
		if h.work, err = os.MkdirTemp("", "flexway-bench-"); err != nil {
			die("%v", err)
		}
		defer os.RemoveAll(h.work)
	}
	must(os.MkdirAll(filepath.Join(h.out, "logs"), 0o755))
	h.logf, err = os.Create(filepath.Join(h.out, "harness.log"))
	must(err)

	// Stop the gateway whatever happens: a signal, a panic, a fatal error.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s := <-sigc
		h.say("signal %v: stopping", s)
		h.stopGateway()
		h.stopRelay()
		h.stopGoProxy()
		h.stopQuotaGateways()
		h.stopRedis()
		h.stopJaeger()
		h.stopKfake()
		os.Exit(130)
	}()
	defer h.stopKfake()
	defer h.stopGateway()
	defer h.stopRelay()
	defer h.stopGoProxy()
	h.setupGoProxy(*gpBin, *gpBoot, *gpTarget)

	h.writeEnv()
	h.writeGatewayConfig()
	if !h.isKfake() { // kfakesrv seeds them
		h.createTopics()
	}

	switch *mode {
	case "real":
		h.runReal()
	case "density":
		h.runDensity()
	case "all":
		h.runReal()
		h.runDensity()
	default:
		die("-mode %q: want real, density or all", *mode)
	}
	h.say("results in %s", h.out)
}

// parseParts reads BENCH_PARTS: table, bigfetch, rssfetch, sweep, profile,
// many, quota, quota-reached and otlp (not in the default list, nor in "all":
// many.go, quota.go, reached.go, otlp.go);
// "new" stands for bigfetch,rssfetch (what issue 11 added), "issue" for the
// rows of issue 11's table (the table restricted to them, bigfetch, rssfetch),
// "produce" for its Produce rows only (perf-test and franz-go, unlimited and
// at half the direct maximum: the round trip's cost and tail, issue 11.4).
func parseParts(v string) map[string]bool {
	known := map[string]bool{"table": true, "bigfetch": true, "rssfetch": true, "sweep": true, "profile": true}
	// "hold" (not in "all"): the set-up held for hand experiments (hold.go).
	out := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "all":
			for k := range known {
				out[k] = true
			}
		case "many", "quota", "quota-reached", "otlp", "hold":
			out[f] = true
		case "new":
			out["bigfetch"], out["rssfetch"] = true, true
		case "issue":
			out["issue"], out["table"], out["bigfetch"], out["rssfetch"] = true, true, true, true
		case "produce":
			out["produce"], out["issue"], out["table"] = true, true, true
		default:
			if !known[f] {
				die("BENCH_PARTS=%q: %q is not one of table, bigfetch, rssfetch, sweep, profile, many, quota, quota-reached, otlp, hold, all, new, issue, produce", v, f)
			}
			out[f] = true
		}
	}
	return out
}

// defaultParts is BENCH_PARTS's default for the broker (BENCH_BROKER):
// against kfake the table and the large fetches, the parts it can run.
func defaultParts(broker string) string {
	if broker == brokerKfake {
		return "table,bigfetch"
	}
	return "table,bigfetch,rssfetch,sweep,profile"
}

// franzAcksList reads BENCH_FRANZ_ACKS: the franz-go producer's acks, all
// and/or 1 (a row of each, unlimited and at half rate).
func franzAcksList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		switch f = strings.TrimSpace(f); f {
		case "":
		case "all", "1":
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		default:
			die("BENCH_FRANZ_ACKS=%q: want all, 1 or all,1", v)
		}
	}
	if len(out) == 0 {
		die("BENCH_FRANZ_ACKS=%q: want all, 1 or all,1", v)
	}
	return out
}

// kcatVersion is kcat's version line ("Version 1.7.1 (..., librdkafka
// 2.0.2 ...)") shortened to "kcat 1.7.1, librdkafka 2.0.2".
func kcatVersion() string {
	out, _ := exec.Command("kcat", "-V").CombinedOutput()
	return kcatVersionOf(string(out))
}

var kcatVersionRe = regexp.MustCompile(`Version (\S+) .*librdkafka (\S+)`)

func kcatVersionOf(out string) string {
	if m := kcatVersionRe.FindStringSubmatch(out); m != nil {
		return "kcat " + m[1] + ", librdkafka " + m[2]
	}
	return "kcat (unknown version)"
}

// ---- small helpers ----

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "harness: "+f+"\n", a...)
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		die("%v", err)
	}
}

func envStr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v := os.Getenv(k); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			die("%s=%q: not an integer", k, v)
		}
		return n
	}
	return def
}

func envInts(k string, def []int) []int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			die("%s=%q: want integers separated by commas", k, v)
		}
		out = append(out, n)
	}
	return out
}

// say prints a progress line on stderr and in harness.log.
func (h *harness) say(f string, a ...any) {
	line := time.Now().Format("15:04:05 ") + fmt.Sprintf(f, a...)
	fmt.Fprintln(os.Stderr, line)
	if h.logf != nil {
		fmt.Fprintln(h.logf, line)
	}
}

// run runs a command, its output (stdout and stderr) kept in logs/NNN-name.log;
// it returns the output.
func (h *harness) run(name string, env []string, args ...string) (string, error) {
	h.seq++
	logPath := filepath.Join(h.out, "logs", fmt.Sprintf("%03d-%s.log", h.seq, name))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = h.root
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = dieWith(syscall.SIGKILL)
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(logPath, append([]byte("$ "+strings.Join(redact(args, h.key), " ")+"\n"), out...), 0o644)
	if err != nil {
		return string(out), fmt.Errorf("%s: %v (log %s)", name, err, logPath)
	}
	return string(out), nil
}

func redact(args []string, secret string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if secret != "" {
			a = strings.ReplaceAll(a, secret, "<key>")
		}
		out[i] = a
	}
	return out
}

func (h *harness) kafkaTool(name string, class string, args ...string) (string, error) {
	return h.run(name, nil, append([]string{filepath.Join(h.root, "scripts", "kafka-tool.sh"), class}, args...)...)
}

// ---- environment ----

func (h *harness) writeEnv() {
	var b strings.Builder
	cpu := "unknown"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	cmdOut := func(args ...string) string {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			return "unknown"
		}
		return strings.TrimSpace(string(out))
	}
	mem := "unknown"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		mem = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
	}
	java := strings.SplitN(cmdOut("java", "-version"), "\n", 2)[0]
	commit := cmdOut("git", "-C", h.root, "rev-parse", "--short", "HEAD")
	if cmdOut("git", "-C", h.root, "status", "--porcelain") != "" {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "date:     %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "commit:   %s\n", commit)
	fmt.Fprintf(&b, "cpu:      %s, %d cores (nproc %s)\n", cpu, countCPUs(), cmdOut("nproc"))
	fmt.Fprintf(&b, "memory:   %s\n", mem)
	fmt.Fprintf(&b, "kernel:   %s\n", cmdOut("uname", "-sr"))
	fmt.Fprintf(&b, "go:       %s\n", cmdOut("go", "version"))
	fmt.Fprintf(&b, "java:     %s\n", java)
	if h.isKfake() {
		fmt.Fprintf(&b, "broker:   kfake %s (franz-go's in-memory broker, bench/cmd/kfakesrv, a fresh one per run; %s, relay's %s), not Apache Kafka\n",
			h.kfakeVersion(), h.broker, h.relayTarget)
	} else {
		fmt.Fprintf(&b, "kafka:    %s (single-node KRaft, %s)\n", envStr("KAFKA_VERSION", "unknown"), h.broker)
	}
	if h.kcat {
		fmt.Fprintf(&b, "kcat:     %s\n", kcatVersion())
	}
	if h.gp != nil {
		fmt.Fprintf(&b, "goproxy:  grepplabs/kafka-proxy %s (%s), %s -> %s\n", h.gp.version, h.gp.bin, h.gp.boot, h.gp.target)
	}
	fmt.Fprintf(&b, "nofile:   %s\n", cmdOut("bash", "-c", "echo soft $(ulimit -Sn) hard $(ulimit -Hn)"))
	fmt.Fprintf(&b, "load:     %s (before the run)\n", cmdOut("cat", "/proc/loadavg"))
	must(os.WriteFile(filepath.Join(h.out, "env.txt"), []byte(b.String()), 0o644))
	h.say("environment:\n%s", b.String())
}

func countCPUs() int {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "\nprocessor") + map[bool]int{true: 1}[strings.HasPrefix(string(data), "processor")]
}

// ---- the gateway ----

const contract = `# flexway benchmark contract (written by bench/run)
asyncapi: 3.0.0
info: { title: flexway benchmark, version: "1.0.0" }
channels:
  perf:
    address: "{tenant}.perf"
    parameters:
      tenant: { x-flexway-bind: tenant }
  big:
    address: "{tenant}.big"
    parameters:
      tenant: { x-flexway-bind: tenant }
  quota:
    address: "{tenant}.quota"
    parameters:
      tenant: { x-flexway-bind: tenant }
operations:
  perfSend:
    action: send
    channel: { $ref: "#/channels/perf" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  perfReceive:
    action: receive
    channel: { $ref: "#/channels/perf" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  bigReceive:
    action: receive
    channel: { $ref: "#/channels/big" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  quotaSend:
    action: send
    channel: { $ref: "#/channels/quota" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
  quotaReceive:
    action: receive
    channel: { $ref: "#/channels/quota" }
    x-flexway-upstream: kafka
    x-flexway-kafka-proxy: { cluster: shop }
    security: [ { $ref: "#/components/securitySchemes/plain" } ]
components:
  securitySchemes:
    plain: { type: plain }
`

// gatewayYAML is the benchmark gateway's configuration: cluster shop on
// ports portFrom..portFrom+2, the admin endpoint on admin, and extra lines
// under listeners.kafka and server (the quota part's variants, quota.go).
func (h *harness) gatewayYAML(portFrom int, admin, listenerExtra, serverExtra string) string {
	return fmt.Sprintf(`# flexway benchmark gateway (written by bench/run)
version: 1
contracts:
  asyncapi: ./asyncapi.yaml
upstreams:
  kafka:
    protocol: kafka
    brokers: [%s]
auth:
  api_keys:
    store: "file:./api-keys.yaml"
listeners:
  kafka:
    # density: up to ~10,000 connections from one address and one tenant
    max_connections: 20000
    max_connections_per_ip: 0
    max_connections_per_tenant: 20000
    max_connection_rate_per_tenant: 0
    max_unauthenticated_connections: 256
%s    plaintext:
      mesh_only: true
      bind_host: 127.0.0.1
      advertised_host: 127.0.0.1
      clusters:
        shop: { ports: { from: %d, to: %d }, first_node_id: %d }
server:
%s  admin:
    address: %s
`, h.broker, listenerExtra, portFrom, portFrom+2, h.firstNodeID, serverExtra, admin)
}

func (h *harness) writeGatewayConfig() {
	cfg := h.gatewayYAML(h.gwPortFrom, h.admin, "", "")
	must(os.WriteFile(filepath.Join(h.work, "flexway.yaml"), []byte(cfg), 0o600))
	must(os.WriteFile(filepath.Join(h.work, "asyncapi.yaml"), []byte(contract), 0o600))

	// One API key for tenant acme, made by the gateway's own command (which
	// checks the operations against the contract: the store must exist).
	must(os.WriteFile(filepath.Join(h.work, "api-keys.yaml"), []byte("keys: []\n"), 0o600))
	h.keyID = "bench-acme"
	out, err := h.run("keys-new", nil, filepath.Join(h.bin, "flexway"), "keys", "new",
		"--id", h.keyID, "--tenant", "acme", "--operations", "perfSend,perfReceive,bigReceive",
		"--config", filepath.Join(h.work, "flexway.yaml"))
	must(err)
	lines := strings.Split(out, "\n")
	var entry []string
	for i, l := range lines {
		if strings.HasPrefix(l, "# The key") && i+1 < len(lines) {
			h.key = strings.TrimSpace(lines[i+1])
		}
		if strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "- id:") {
			entry = append(entry, l)
		}
	}
	if h.key == "" || len(entry) == 0 {
		die("cannot read the output of flexway keys new:\n%s", out)
	}
	must(os.WriteFile(filepath.Join(h.work, "api-keys.yaml"), []byte("keys:\n"+strings.Join(entry, "\n")+"\n"), 0o600))
	h.clientProps = h.writeSASLProps("client-sasl.properties", h.keyID, h.key)
	// Through the relay, the broker's own user (the RELAY listener is
	// SASL_PLAINTEXT, bench/run): the same handshake as the gateway's.
	h.relayUser, h.relayPass = envStr("KAFKA_SASL_USER", "flexway"), envStr("KAFKA_SASL_PASSWORD", "flexway-secret")
	h.relayProps = h.writeSASLProps("relay-sasl.properties", h.relayUser, h.relayPass)
	// Rewrite the key out of the saved log (keys-new printed it).
	for _, m := range mustGlob(filepath.Join(h.out, "logs", "*keys-new.log")) {
		if data, err := os.ReadFile(m); err == nil {
			_ = os.WriteFile(m, []byte(strings.ReplaceAll(string(data), h.key, "<key>")), 0o644)
		}
	}
	if _, err := h.run("flexway-check", nil, filepath.Join(h.bin, "flexway"), "-check", "-config", filepath.Join(h.work, "flexway.yaml")); err != nil {
		die("%v", err)
	}
}

// writeSASLProps writes the Java tools' properties for SASL_PLAINTEXT PLAIN
// as user into the work folder and returns the file's path.
func (h *harness) writeSASLProps(name, user, pass string) string {
	f := filepath.Join(h.work, name)
	must(os.WriteFile(f, []byte(fmt.Sprintf(`security.protocol=SASL_PLAINTEXT
sasl.mechanism=PLAIN
sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="%s" password="%s";
`, user, pass)), 0o600))
	return f
}

func mustGlob(p string) []string {
	m, _ := filepath.Glob(p)
	return m
}

func (h *harness) createTopics() {
	// big, acme.big: the large-fetch consumers' topics (bigfetch.go).
	// Each partition keeps its last 2 GiB (the broker looks every 30 s):
	// the bench writes some 1 GiB a million records, and long or repeated
	// runs filled this machine's disk before.
	for _, t := range []string{"perf", "acme.perf", "big", "acme.big"} {
		if _, err := h.kafkaTool("topic-"+t, "org.apache.kafka.tools.TopicCommand",
			"--bootstrap-server", h.broker, "--create", "--if-not-exists", "--topic", t,
			"--partitions", "3", "--replication-factor", "1",
			"--config", "retention.bytes=2147483648", "--config", "segment.bytes=268435456"); err != nil {
			die("%v", err)
		}
	}
	h.say("topics perf, acme.perf, big, acme.big (3 partitions each) on %s", h.broker)
}

func (h *harness) startGateway() { h.startGatewayWith("flexway", "http://"+h.admin+"/healthz") }

// startGatewayWith starts bin (flexway, or gwprof for the Go profile) on the
// benchmark's configuration and waits until health answers and the
// bootstrap port accepts.
func (h *harness) startGatewayWith(bin, health string, args ...string) {
	h.stopGateway()
	h.gwLog = filepath.Join(h.out, fmt.Sprintf("%s-%d.log", strings.Replace(bin, "flexway", "gateway", 1), time.Now().UnixNano()))
	f, err := os.Create(h.gwLog)
	must(err)
	cmd := exec.Command(filepath.Join(h.bin, bin), append([]string{"-config", filepath.Join(h.work, "flexway.yaml")}, args...)...)
	cmd.Dir = h.work
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = dieWith(syscall.SIGTERM)
	must(cmd.Start())
	h.gw = cmd
	exited := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); close(exited) }()
	h.gwExited = exited
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			data, _ := os.ReadFile(h.gwLog)
			die("%s exited at start:\n%s", bin, data)
		default:
		}
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if c, err := net.DialTimeout("tcp", h.gwBoot, time.Second); err == nil {
				c.Close()
				h.say("%s up (pid %d) on %s, log %s", bin, cmd.Process.Pid, h.gwBoot, h.gwLog)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	data, _ := os.ReadFile(h.gwLog)
	die("%s did not start:\n%s", bin, data)
}

func (h *harness) stopGateway() {
	if h.gw == nil || h.gw.Process == nil {
		return
	}
	_ = h.gw.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.gwExited:
	case <-time.After(15 * time.Second):
		_ = h.gw.Process.Kill()
		<-h.gwExited
	}
	h.gw = nil
}

func (h *harness) gwPID() int {
	if h.gw == nil || h.gw.Process == nil {
		return 0
	}
	return h.gw.Process.Pid
}

// gatewayAlive says whether the gateway still runs (a crash is a finding).
func (h *harness) gatewayAlive() bool {
	if h.gw == nil {
		return false
	}
	select {
	case <-h.gwExited:
		return false
	default:
		return true
	}
}

// ---- the splice relay ----

// startRelay starts bench/cmd/splicerelay (relayBoot -> relayTarget, the
// broker's RELAY listener) and waits until it accepts.
func (h *harness) startRelay() {
	h.stopRelay()
	h.relayLog = filepath.Join(h.out, fmt.Sprintf("splicerelay-%d.log", time.Now().UnixNano()))
	h.relay, h.relayDone = h.startHop("splicerelay", h.relayLog, h.relayBoot, 10*time.Second,
		filepath.Join(h.bin, "splicerelay"), "-map", h.relayBoot+"="+h.relayTarget)
	h.say("splicerelay up (pid %d) on %s -> %s", h.relay.Process.Pid, h.relayBoot, h.relayTarget)
}

// startHop starts a relaying process (argv), its output to log, and waits
// within for it to accept on addr; done is closed when it exits. It dies
// with the process's log if the process exits first or never accepts.
func (h *harness) startHop(name, log, addr string, within time.Duration, argv ...string) (*exec.Cmd, chan struct{}) {
	return h.startHopEnv(name, log, addr, within, nil, argv...)
}

// startHopEnv is startHop with env added to the process's environment.
func (h *harness) startHopEnv(name, log, addr string, within time.Duration, env []string, argv ...string) (*exec.Cmd, chan struct{}) {
	f, err := os.Create(log)
	must(err)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = dieWith(syscall.SIGTERM)
	must(cmd.Start())
	done := make(chan struct{})
	go func() { _, _ = cmd.Process.Wait(); f.Close(); close(done) }()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			data, _ := os.ReadFile(log)
			die("%s exited at start:\n%s", name, tail(string(data), 4000))
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return cmd, done
		}
		time.Sleep(50 * time.Millisecond)
	}
	die("%s did not accept on %s", name, addr)
	return nil, nil
}

func (h *harness) stopRelay() {
	if h.relay == nil || h.relay.Process == nil {
		return
	}
	stopProc(h.relay, h.relayDone)
	h.relay = nil
}

// stopProc ends a child the harness started: SIGTERM, then SIGKILL after
// 10 s; exited is closed once it is reaped.
func stopProc(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func (h *harness) relayPID() int {
	if h.relay == nil || h.relay.Process == nil {
		return 0
	}
	return h.relay.Process.Pid
}

func (h *harness) relayAlive() bool {
	if h.relay == nil {
		return false
	}
	select {
	case <-h.relayDone:
		return false
	default:
		return true
	}
}

// ---- /proc ----

var clkTck = func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			return float64(n)
		}
	}
	return 100
}()

// cpuSeconds is utime+stime of pid, from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces
	f := strings.Fields(s[i+2:])
	// f[0] is field 3 (state): utime is field 14, stime 15.
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clkTck
}

// schedSeconds is the time pid's threads have run (procstat.Sched's
// field 0, ns), in seconds.
func schedSeconds(pid int) float64 { return procstat.Sched(pid, 0) / 1e9 }

// statusKiB reads one "Vm...:  N kB" line of /proc/<pid>/status.
func statusKiB(pid int, key string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return n
		}
	}
	return 0
}

// resetPeak sets VmHWM back to the current RSS (clear_refs 5), so that the
// next reading is the peak of one run.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0o200)
}
