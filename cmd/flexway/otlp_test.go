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
	t      *testing.T
	otlp   int
	stderr syncBuffer
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
	j := &jaeger{t: t, otlp: testkit.FreePorts(t, 4)}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	writeTestFile(t, cfg, fmt.Appendf(nil, jaegerConfig, j.otlp, j.otlp+1, j.otlp+2, j.otlp+3))
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &j.stderr, &j.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", tail(j.stderr.String(), 6000))
		}
	})
	j.waitFor(done, 60*time.Second, "its query API", func() bool {
		_, err := j.get("/api/services")
		return err == nil
	})
	return j
}

// waitFor polls ok until it holds; it fails when Jaeger exits or within
// passes.
func (j *jaeger) waitFor(done chan struct{}, within time.Duration, what string, ok func() bool) {
	j.t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		select {
		case <-done:
			j.t.Fatalf("jaeger exited before %s", what)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("jaeger: no %s within %v", what, within)
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

// Seed 001 "Signaux", on the built binary with sampling_ratio 1: every
// authenticated request of a franz-go client (records produced, then a
// DeleteTopics its key may not make) reaches Jaeger as one span `kafka
// <API>` carrying the six attributes and the replica's
// service.instance.id, and no topic name anywhere; the handshake before
// authentication makes none. The flexway.kafka.* metrics reach it too,
// under the seed's dotted names, from the same replica.
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
	dir, base, key := quickstartOn(t, k, "")
	f, err := os.OpenFile(filepath.Join(dir, "flexway.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "observability:\n  otlp:\n    endpoint: http://127.0.0.1:%d\n    sampling_ratio: 1\n    metrics_interval: 1s\n    instance_id: replica-7\n", j.otlp)
	f.Close()
	gw := startFlexway(t, bin, dir)
	gw.waitLog("flexway started", 20*time.Second)
	driveOTLPRequests(t, base, key)

	var tr jaegerTraces
	var body []byte
	j.waitFor(nil, 30*time.Second, "span of the refused DeleteTopics", func() bool {
		body, err = j.get("/api/traces?service=flexway&limit=100")
		return err == nil && json.Unmarshal(body, &tr) == nil && strings.Contains(string(body), "kafka DeleteTopics")
	})
	if strings.Contains(strings.ToLower(string(body)), "orders") {
		t.Errorf("a topic name crossed into the spans:\n%s", body)
	}
	seen := checkOTLPSpans(t, &tr)
	t.Logf("spans (name, decision, cause): %v", seen)
	for _, w := range []string{"kafka Produce allowed none", "kafka DeleteTopics refused admin_api", "kafka Metadata allowed none"} {
		if !seen[w] {
			t.Errorf("no span %q among %v", w, seen)
		}
	}
	if seen["kafka SaslHandshake allowed none"] {
		t.Error("a span for the handshake, before authentication")
	}
	j.waitFor(nil, 30*time.Second, "flexway.kafka.requests from replica-7", func() bool {
		s := j.stderr.String()
		return strings.Contains(s, "service.instance.id: Str(replica-7)") && strings.Contains(s, "Name: flexway.kafka.requests")
	})
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

// checkOTLPSpans checks every span: a `kafka <API>` name, the six
// attributes, the replica's resource; it returns the spans seen as
// "name decision cause".
func checkOTLPSpans(t *testing.T, tr *jaegerTraces) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, d := range tr.Data {
		for _, sp := range d.Spans {
			tags := map[string]any{}
			for _, tg := range sp.Tags {
				tags[tg.Key] = tg.Value
			}
			if !strings.HasPrefix(sp.OperationName, "kafka ") || tags["kafka.cluster"] != "shop" || tags["tenant"] != "acme" ||
				tags["auth.mechanism"] != "api_key" || tags["kafka.decision"] == nil || tags["kafka.cause"] == nil || tags["kafka.throttle_time_ms"] == nil {
				t.Errorf("span %q: tags %v", sp.OperationName, tags)
			}
			p := d.Processes[sp.ProcessID]
			inst := ""
			for _, tg := range p.Tags {
				if tg.Key == "service.instance.id" {
					inst, _ = tg.Value.(string)
				}
			}
			if p.ServiceName != "flexway" || inst != "replica-7" {
				t.Errorf("span %q from %q instance %q: want flexway, replica-7", sp.OperationName, p.ServiceName, inst)
			}
			seen[fmt.Sprint(sp.OperationName, " ", tags["kafka.decision"], " ", tags["kafka.cause"])] = true
		}
	}
	return seen
}
