package main

// SPEC O5, issue 34.4: a span is the request's life at the gateway, from
// its first byte read to its answer's last byte written, the broker's
// round trip included: read back from Jaeger, on the built binary.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// jaegerTimed is the query API's answer to /api/traces with each span's
// duration (microseconds).
type jaegerTimed struct {
	Data []struct {
		Spans []struct {
			OperationName string      `json:"operationName"`
			Duration      int64       `json:"duration"`
			Tags          []jaegerTag `json:"tags"`
		} `json:"spans"`
	} `json:"data"`
}

// The broker answers every Produce 200 ms late: each sampled Produce span
// that reaches Jaeger lasts 200 ms at least, and no more than the client
// waited for its answer; a Metadata, answered at once, is shorter.
func TestOTLPSpansLastTheBrokersRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs Jaeger")
	}
	const late = 200 * time.Millisecond
	j := startJaeger(t)
	bin := buildFlexway(t)
	k, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.KeepControl()
		time.Sleep(late)
		return nil, nil, false // then answered as kfake does
	})
	dir, base, key := quickstartOn(t, k, "")
	f, err := os.OpenFile(filepath.Join(dir, "flexway.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "observability:\n  otlp: { protocol: http/protobuf, endpoint: \"http://127.0.0.1:%d\", sampling_ratio: 1, instance_id: late-broker }\n", j.otlp)
	f.Close()
	gw := startFlexway(t, bin, dir)
	gw.waitLog("flexway started", 20*time.Second)

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", base)),
		kgo.SASL(plain.Auth{User: "acme-orders-producer", Pass: key}.AsMechanism()),
		kgo.DefaultProduceTopic("orders"),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var longest time.Duration // the longest a client waited for a Produce
	const n = 3
	for i := range n {
		sent := time.Now()
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("v", i))).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		longest = max(longest, time.Since(sent))
	}

	produce, metadata := spanDurations(t, j, n)
	t.Logf("Produce spans %v (the client's longest wait %v); Metadata spans %v", produce, longest, metadata)
	for _, d := range produce {
		if d < late || d > longest {
			t.Errorf("a Produce span lasted %v: want the broker's %v at least, the client's longest wait %v at most", d, late, longest)
		}
	}
	quick := false
	for _, d := range metadata {
		quick = quick || d < late
	}
	if !quick {
		t.Errorf("no Metadata span under %v among %v: the spans measure nothing of their own", late, metadata)
	}
}

// spanDurations waits until Jaeger holds n Produce spans and returns the
// durations of the Produce and Metadata spans.
func spanDurations(t *testing.T, j *jaeger, n int) (produce, metadata []time.Duration) {
	t.Helper()
	j.waitFor(t, 30*time.Second, fmt.Sprintf("%d Produce spans", n), func() bool {
		var tr jaegerTimed
		body, err := j.get("/api/traces?service=flexway&limit=1000")
		if err != nil || json.Unmarshal(body, &tr) != nil {
			return false
		}
		produce, metadata = produce[:0], metadata[:0]
		for _, d := range tr.Data {
			for _, sp := range d.Spans {
				dur := time.Duration(sp.Duration) * time.Microsecond
				switch sp.OperationName {
				case "kafka Produce":
					produce = append(produce, dur)
				case "kafka Metadata":
					metadata = append(metadata, dur)
				}
			}
		}
		return len(produce) >= n
	})
	return produce, metadata
}
