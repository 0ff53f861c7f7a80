package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// promtool finds Prometheus' promtool (Debian's prometheus package, which
// scripts/install-deps.sh installs for `make test`), or skips saying so.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: install Debian's prometheus package (scripts/install-deps.sh, run by make test)")
	}
	return p
}

// seedQueries reads the seed's "Lire les signaux" block, shipped as
// configs/prometheus/seed-queries.promql: one expression per line, a line
// that starts with a space continuing the one above, # a comment.
func seedQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../configs/prometheus/seed-queries.promql")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, " ") && len(out) > 0:
			out[len(out)-1] += " " + strings.TrimSpace(line)
		default:
			out = append(out, line)
		}
	}
	return out
}

// promRate: the input series grow by 60*V a minute for five minutes, so
// that rate(x[5m]) at 5m is exactly V (what the run counted): the sums
// and ratios below are then the float operations PromQL does.
func inputSeries(samples []sample) string {
	var b strings.Builder
	for _, s := range samples {
		if !strings.HasPrefix(s.name, "flexway_kafka_") {
			continue
		}
		values := fmt.Sprintf("0+%sx5", strconv.FormatFloat(60*s.value, 'g', -1, 64))
		if s.name == "flexway_kafka_connections" { // a gauge
			values = fmt.Sprintf("%sx5", strconv.FormatFloat(s.value, 'g', -1, 64))
		}
		fmt.Fprintf(&b, "      - series: '%s'\n        values: '%s'\n", seriesOf(s), values)
	}
	return b.String()
}

func seriesOf(s sample) string {
	keys := make([]string, 0, len(s.labels))
	for k := range s.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+`="`+s.labels[k]+`"`)
	}
	return s.name + "{" + strings.Join(parts, ",") + "}"
}

// result is one expected sample of an expression.
type result struct {
	labels string // `{k="v"}`
	value  float64
}

// sumBy sums the samples of name that keep pass, by the label by.
func sumBy(samples []sample, name, by string, pass func(sample) bool) map[string]float64 {
	out := map[string]float64{}
	for _, s := range samples {
		if s.name == name && (pass == nil || pass(s)) {
			out[s.labels[by]] += s.value
		}
	}
	return out
}

func results(by string, m map[string]float64) []result {
	var out []result
	for k, v := range m {
		out = append(out, result{labels: fmt.Sprintf(`{%s="%s"}`, by, k), value: v})
	}
	return out
}

// bucketQuantile is PromQL's histogram_quantile over one histogram's
// cumulative buckets (le -> count), with its float operations.
func bucketQuantile(q float64, buckets map[float64]float64) float64 {
	les := make([]float64, 0, len(buckets))
	for le := range buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) < 2 || !math.IsInf(les[len(les)-1], 1) {
		return math.NaN()
	}
	observations := buckets[les[len(les)-1]]
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	b := sort.Search(len(les)-1, func(i int) bool { return buckets[les[i]] >= rank })
	if b == len(les)-1 {
		return les[len(les)-2]
	}
	if b == 0 && les[0] <= 0 {
		return les[0]
	}
	bucketStart, bucketEnd, count := 0.0, les[b], buckets[les[b]]
	if b > 0 {
		bucketStart = les[b-1]
		count -= buckets[les[b-1]]
		rank -= buckets[les[b-1]]
	}
	return bucketStart + (bucketEnd-bucketStart)*(rank/count)
}

// expected computes, from the scraped samples, what each of the seed's
// five expressions must give.
func expected(t *testing.T, samples []sample) [5][]result {
	var out [5][]result
	// 1. the share of throttled requests, by cluster.
	all := sumBy(samples, "flexway_kafka_requests_total", "cluster", nil)
	thr := sumBy(samples, "flexway_kafka_requests_total", "cluster", func(s sample) bool { return s.labels["decision"] == "throttled" })
	for c, n := range thr {
		out[0] = append(out[0], result{labels: fmt.Sprintf(`{cluster="%s"}`, c), value: n / all[c]})
	}
	// 2. refusals by cause, the day/month quota aside.
	out[1] = results("cause", sumBy(samples, "flexway_kafka_requests_total", "cause", func(s sample) bool {
		return s.labels["decision"] == "refused" && s.labels["cause"] != "quota"
	}))
	// 3, 4. connections refused by bound; normal closures by cause.
	out[2] = results("bound", sumBy(samples, "flexway_kafka_connections_refused_total", "bound", nil))
	out[3] = results("cause", sumBy(samples, "flexway_kafka_connections_closed_total", "cause", nil))
	// 5. p95 of the wait for a tenant's share.
	hist := map[string]map[float64]float64{}
	for _, s := range samples {
		if s.name != "flexway_kafka_tenant_budget_wait_seconds_bucket" {
			continue
		}
		le, err := strconv.ParseFloat(s.labels["le"], 64)
		if err != nil {
			t.Fatalf("le of %q", s.line)
		}
		if hist[s.labels["tenant"]] == nil {
			hist[s.labels["tenant"]] = map[float64]float64{}
		}
		hist[s.labels["tenant"]][le] += s.value
	}
	for tenant, h := range hist {
		out[4] = append(out[4], result{labels: fmt.Sprintf(`{tenant="%s"}`, tenant), value: bucketQuantile(0.95, h)})
	}
	return out
}

// sampleTotal sums the samples of name that pass keeps (all of them when
// pass is nil).
func sampleTotal(samples []sample, name string, pass func(sample) bool) float64 {
	return sumBy(samples, name, "", pass)[""]
}

// scrapeMetrics gets url's /metrics and parses it.
func scrapeMetrics(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return parseExposition(t, string(b))
}

// O1, issue 10.2: the seed's PromQL runs as written over the series of a
// real run: refusals of several causes, a connection refused by a tenant
// bound, a connection closed at auth_timeout, waits for a tenant's share;
// /metrics scraped, its samples given to `promtool test rules` as input
// series, and each expression's result checked.
func TestMetricsSeedPromQL(t *testing.T) {
	tool := promtool(t)
	queries := seedQueries(t)
	if len(queries) != 5 {
		t.Fatalf("%d expressions in the seed's block, want 5: %q", len(queries), queries)
	}
	env := newTestEnv(t, "    auth_timeout: 1s\n    max_in_flight_bytes: 1MiB\n    max_response_bytes: 2MiB\n    max_tenant_in_flight_bytes: 2MiB\n", WithWriteTimeout(20*time.Second))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { env.e.Metrics().WritePrometheus(w) }))
	defer srv.Close()

	waitForTenantShare(t, env, srv.URL)
	refuseEachCause(t, env)
	refuseAtTenantBound(t, env)

	var samples []sample
	waitUntil(t, 10*time.Second, "the closure at auth_timeout and the bound's refusal counted", func() bool {
		samples = scrapeMetrics(t, srv.URL)
		return sampleTotal(samples, "flexway_kafka_connections_closed_total", func(s sample) bool { return s.labels["cause"] == "auth_timeout" }) > 0 &&
			sampleTotal(samples, "flexway_kafka_connections_refused_total", func(s sample) bool { return s.labels["bound"] == "max_connections_per_tenant" }) > 0
	})
	checkClosed(t, samples, map[string]bool{"shop": true})
	exp := expected(t, samples)
	checkRunShown(t, exp)
	runSeedQueries(t, tool, queries, samples, exp)
}

// waitForTenantShare makes acme's connections wait for the tenant's share:
// connections that do not read, until a wait is counted; then they read,
// and the waits end, observed in the histogram /metrics (at url) shows.
func waitForTenantShare(t *testing.T, env *testEnv, url string) {
	fillOrders(t, env, 40)
	addr := leaderOf0(t, env)
	var stalls []*rawConn
	for i := 0; i < 4; i++ {
		stalls = append(stalls, stall(t, env, addr, 200))
	}
	waitUntil(t, 15*time.Second, "a wait for the tenant's share", func() bool { return env.e.env.Signals.BudgetWaited() > 0 })
	for _, r := range stalls {
		go func(r *rawConn) {
			_ = r.c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, _ = io.Copy(io.Discard, r.c)
		}(r)
	}
	waitUntil(t, 15*time.Second, "a wait observed", func() bool {
		return sampleTotal(scrapeMetrics(t, url), "flexway_kafka_tenant_budget_wait_seconds_count", nil) > 0
	})
}

// refuseEachCause has requests refused for unknown topics, a Produce
// without send (acl) and a wrong key, and a connection closed at
// auth_timeout (1s).
func refuseEachCause(t *testing.T, env *testEnv) {
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	for i := 0; i < 3; i++ {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 9
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("nowhere")}}
		r.send(md)
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 9
		r.recv(resp)
	}
	reader := env.client("acme-orders-reader", kgo.RecordRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := reader.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("x")}).FirstErr(); err == nil {
		t.Error("a key without send produced")
	}
	cancel()
	bad := dialPlain(t, env.boot)
	bad.saslPlain("acme-app", "not-the-key")
	bad.expectClosed(5 * time.Second)

	// A connection closed at auth_timeout (1s).
	dialPlain(t, env.boot).expectClosed(10 * time.Second)
}

// refuseAtTenantBound reloads with max_connections_per_tenant: 1 and
// connects globex twice: the second connection is refused by the bound.
func refuseAtTenantBound(t *testing.T, env *testEnv) {
	reloadReplacing(t, env, "  kafka:\n", "  kafka:\n    max_connections_per_tenant: 1\n")
	dialRaw(t, env.boot, "globex-app", env.keys["globex-app"])
	second := dialPlain(t, env.boot)
	second.saslPlain("globex-app", env.keys["globex-app"])
	second.expectClosed(5 * time.Second)
}

// checkRunShown checks what the run must have shown, before PromQL is
// asked: refusals of unknown_topic, acl and authentication, and a budget
// wait histogram.
func checkRunShown(t *testing.T, exp [5][]result) {
	causes := map[string]bool{}
	for _, r := range exp[1] {
		if r.value > 0 {
			causes[r.labels] = true
		}
	}
	for _, c := range []string{`{cause="unknown_topic"}`, `{cause="acl"}`, `{cause="authentication"}`} {
		if !causes[c] {
			t.Errorf("no refusal of %s counted: %v", c, exp[1])
		}
	}
	if len(exp[4]) == 0 {
		t.Error("no budget wait histogram")
	}
}

// runSeedQueries has promtool evaluate each of queries over samples (as
// input series) and compare its result with exp.
func runSeedQueries(t *testing.T, tool string, queries []string, samples []sample, exp [5][]result) {
	var y strings.Builder
	y.WriteString("rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	y.WriteString(inputSeries(samples))
	y.WriteString("    promql_expr_test:\n")
	// promtool compares values to the last bit, and a quantile computed
	// here and by Prometheus may differ there: each query, as written, is
	// rounded to 1e-9 by PromQL's round, and the expected value by the
	// same arithmetic (round's: floor(v/to + 0.5) with the inverse taken
	// at run time, as Prometheus does).
	to := 1e-9
	inv := 1.0 / to
	roundAsPromQL := func(v float64) float64 { return math.Floor(v*inv+0.5) / inv }
	for i, q := range queries {
		fmt.Fprintf(&y, "      - expr: 'round(%s, 1e-9)'\n        eval_time: 5m\n        exp_samples:\n", q)
		if len(exp[i]) == 0 {
			y.WriteString("          []\n")
		}
		for _, r := range exp[i] {
			if math.IsNaN(r.value) {
				t.Fatalf("expression %d: NaN for %s", i+1, r.labels)
			}
			fmt.Fprintf(&y, "          - labels: '%s'\n            value: %s\n", r.labels, strconv.FormatFloat(roundAsPromQL(r.value), 'g', -1, 64))
		}
	}
	file := filepath.Join(t.TempDir(), "seed-queries.test.yaml")
	must(t, os.WriteFile(file, []byte(y.String()), 0o600))
	out, err := exec.Command(tool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n--- %s:\n%s", err, out, file, y.String())
	}
	for i, q := range queries {
		t.Logf("%s\n  = %v", q, exp[i])
	}
}
