package main

// observability.otlp end to end: the built gateway sends its spans and its
// flexway.kafka.* metrics to a real OTLP receiver, Jaeger (bin/tools/jaeger,
// built by make test's dependency step: scripts/build-jaeger.sh), and the
// test reads the spans back from Jaeger's query API and the metrics from
// the log of Jaeger's debug exporter.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// jaeger is a Jaeger all-in-one of the test's own, in memory, on free
// ports of 127.0.0.1: OTLP over HTTP (otlp) and gRPC (otlp+1), its query
// API (otlp+2, its gRPC otlp+3).
type jaeger struct {
	otlp   int
	stderr syncBuffer
	done   chan struct{} // closed when it has exited
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: { receivers: [otlp], exporters: [jaeger_storage_exporter] }
    metrics: { receivers: [otlp], exporters: [debug] }
  telemetry:
    metrics: { level: none }
extensions:
  jaeger_storage: { backends: { mem: { memory: { max_traces: 10000 } } } }
  jaeger_query:
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
  debug: { verbosity: detailed }
`

// startJaeger starts bin/tools/jaeger and waits until its query API
// answers; absent, the test fails: make test builds it first.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin, _ := filepath.Abs("../../bin/tools/jaeger")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("Jaeger not built: run scripts/build-jaeger.sh (make test's dependency step does) (%v)", err)
	}
	j := &jaeger{otlp: testkit.FreePorts(t, 4), done: make(chan struct{})}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	writeTestFile(t, cfg, fmt.Appendf(nil, jaegerConfig, j.otlp, j.otlp+1, j.otlp+2, j.otlp+3))
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &j.stderr, &j.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(j.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-j.done
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", tail(j.stderr.String(), 6000))
		}
	})
	j.waitFor(t, 60*time.Second, "its query API", func() bool {
		_, err := j.get("/api/services")
		return err == nil
	})
	return j
}

// waitFor polls ok until it holds; it fails when Jaeger exits or within
// passes.
func (j *jaeger) waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		select {
		case <-j.done:
			t.Fatalf("jaeger exited before %s", what)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger: no %s within %v", what, within)
		}
	}
}

// get reads a path of the query API.
func (j *jaeger) get(path string) ([]byte, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", j.otlp+2, path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, b)
	}
	return b, err
}

// jaegerTraces is the query API's answer to /api/traces.
type jaegerTraces struct {
	Data []struct {
		Spans []struct {
			OperationName string      `json:"operationName"`
			ProcessID     string      `json:"processID"`
			Tags          []jaegerTag `json:"tags"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string      `json:"serviceName"`
			Tags        []jaegerTag `json:"tags"`
		} `json:"processes"`
	} `json:"data"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Seed 001 "Signaux", on the built binary with sampling_ratio 1, over
// OTLP/HTTP and over gRPC: every authenticated request of a franz-go
// client (records produced, then a DeleteTopics its key may not make)
// reaches Jaeger as one span `kafka <API>` carrying the six attributes and
// the replica's service.instance.id, and no topic name anywhere; the
// handshake before authentication makes none. The flexway.kafka.* metrics
// reach it too, under the seed's dotted names, from the same replica.
func TestOTLPSpansAndMetricsReachJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Jaeger")
	}
	j := startJaeger(t)
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for i, c := range []struct {
		protocol string
		port     int
	}{{"http/protobuf", j.otlp}, {"grpc", j.otlp + 1}} {
		t.Run(strings.ReplaceAll(c.protocol, "/", "-"), func(t *testing.T) {
			otlp := fmt.Sprintf("protocol: %s, endpoint: \"http://127.0.0.1:%d\"", c.protocol, c.port)
			otlpThroughJaeger(t, j, bin, k, otlp, fmt.Sprint("replica-", i))
		})
	}
}

// otlpThroughJaeger runs a gateway of instance id inst sending to j (otlp:
// its protocol and endpoint) and checks what j received from it.
func otlpThroughJaeger(t *testing.T, j *jaeger, bin string, k *kfake.Cluster, otlp, inst string) {
	dir, base, key := quickstartOn(t, k, "")
	f, err := os.OpenFile(filepath.Join(dir, "flexway.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "observability:\n  otlp: { %s, sampling_ratio: 1, metrics_interval: 1s, instance_id: %s }\n", otlp, inst)
	f.Close()
	gw := startFlexway(t, bin, dir)
	gw.waitLog("flexway started", 20*time.Second)
	driveOTLPRequests(t, base, key)

	var seen map[string]bool
	var body []byte
	j.waitFor(t, 30*time.Second, "span of the refused DeleteTopics from "+inst, func() bool {
		var tr jaegerTraces
		body, err = j.get("/api/traces?service=flexway&limit=1000")
		if err != nil || json.Unmarshal(body, &tr) != nil {
			return false
		}
		seen = checkOTLPSpans(t, &tr, inst)
		return seen["kafka DeleteTopics refused admin_api"]
	})
	t.Logf("spans of %s (name, decision, cause): %v", inst, seen)
	if strings.Contains(strings.ToLower(string(body)), "orders") {
		t.Errorf("a topic name crossed into the spans:\n%s", body)
	}
	for _, w := range []string{"kafka Produce allowed none", "kafka Metadata allowed none"} {
		if !seen[w] {
			t.Errorf("no span %q among %v", w, seen)
		}
	}
	if seen["kafka SaslHandshake allowed none"] {
		t.Error("a span for the handshake, before authentication")
	}
	var batch string
	j.waitFor(t, 30*time.Second, "flexway.kafka.requests of Produce from "+inst, func() bool {
		batch = lastMetrics(j.stderr.String(), inst)
		return strings.Contains(batch, "Name: flexway.kafka.requests\n") && strings.Contains(batch, "-> api: Str(Produce)")
	})
	if strings.Contains(batch, "Name: flexway_") || strings.Contains(strings.ToLower(batch), "orders") {
		t.Errorf("the metrics of %s hold a Prometheus name or a topic:\n%s", inst, batch)
	}
	if strings.Contains(gw.stderr.String(), "otlp export failed") {
		t.Errorf("the gateway logged an export failure:\n%s", tail(gw.stderr.String(), 3000))
	}
}

// driveOTLPRequests produces three records to orders as acme-orders-producer
// and asks to delete the topic, which its key may not.
func driveOTLPRequests(t *testing.T, base int, key string) {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-orders-producer", Pass: key}.AsMechanism()),
		kgo.DefaultProduceTopic("orders"),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("v", i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"orders"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode == 0 {
		t.Fatalf("DeleteTopics answered %+v, %v: want a refusal", resp, err)
	}
}

// checkOTLPSpans checks every span of instance inst: a `kafka <API>`
// name, the six attributes, the service; it returns them as "name
// decision cause".
func checkOTLPSpans(t *testing.T, tr *jaegerTraces, inst string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, d := range tr.Data {
		for _, sp := range d.Spans {
			p := d.Processes[sp.ProcessID]
			if tagsOf(p.Tags)["service.instance.id"] != inst {
				continue
			}
			tags := tagsOf(sp.Tags)
			if !strings.HasPrefix(sp.OperationName, "kafka ") || tags["kafka.cluster"] != "shop" || tags["tenant"] != "acme" ||
				tags["auth.mechanism"] != "api_key" || tags["kafka.decision"] == nil || tags["kafka.cause"] == nil || tags["kafka.throttle_time_ms"] == nil {
				t.Errorf("span %q: tags %v", sp.OperationName, tags)
			}
			if p.ServiceName != "flexway" {
				t.Errorf("span %q from service %q", sp.OperationName, p.ServiceName)
			}
			seen[fmt.Sprint(sp.OperationName, " ", tags["kafka.decision"], " ", tags["kafka.cause"])] = true
		}
	}
	return seen
}

func tagsOf(tags []jaegerTag) map[string]any {
	m := map[string]any{}
	for _, tg := range tags {
		m[tg.Key] = tg.Value
	}
	return m
}

// lastMetrics is the last batch of metrics Jaeger's debug exporter logged
// from instance inst ("" when none): from its resource to the next.
func lastMetrics(log, inst string) string {
	i := strings.LastIndex(log, "-> service.instance.id: Str("+inst+")")
	if i < 0 {
		return ""
	}
	batch := log[i:]
	if n := strings.Index(batch, "ResourceMetrics #"); n >= 0 {
		batch = batch[:n]
	}
	return batch
}

// A collector that is not there costs a logged line, never a request:
// the gateway serves franz-go as without observability.otlp.
func TestOTLPCollectorDownServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	dir, base, key := quickstartOn(t, k, "")
	f, err := os.OpenFile(filepath.Join(dir, "flexway.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A free port nothing listens on.
	fmt.Fprintf(f, "observability:\n  otlp: { endpoint: \"http://127.0.0.1:%d\", sampling_ratio: 1, metrics_interval: 1s }\n", testkit.FreePort(t))
	f.Close()
	gw := startFlexway(t, bin, dir)
	gw.waitLog("flexway started", 20*time.Second)
	driveOTLPRequests(t, base, key)
	gw.waitLog("otlp export failed", 20*time.Second)
}
