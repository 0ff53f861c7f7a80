package engine

// Issue 34.3 and 34.4 (SPEC O1, O5, Q2): every throttle is counted where
// it happens, and a span is the request's life, from the read that
// brought its first byte to its answer's last byte written.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// traceAll makes env's gateway trace every request into the recorder
// returned.
func traceAll(t *testing.T, env *testEnv) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	env.e.Trace(signals.NewTracer(tp.Tracer("test"), 1))
	return rec
}

// spansNamed waits for n spans named name and returns them.
func spansNamed(t *testing.T, rec *tracetest.SpanRecorder, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	waitUntil(t, 10*time.Second, "spans "+name, func() bool {
		got = got[:0]
		for _, sp := range rec.Ended() {
			if sp.Name() == name {
				got = append(got, sp)
			}
		}
		return len(got) >= n
	})
	return got
}

// spanAttr is one attribute of a span.
func spanAttr(sp sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// waitMetrics waits until the metrics hold every line of want.
func waitMetrics(t *testing.T, env *testEnv, want ...string) string {
	t.Helper()
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		body = metricsText(t, env.e)
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
			}
		}
		if missing == "" {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %s:\n%s", missing, grepLines(body, "flexway_kafka_"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Q2, O1: a Fetch forwarded whose answer spends consumer_byte_rate past its
// bucket carries a throttle: it is counted decision="throttled" with cause
// quota, never "allowed", and its span's kafka.throttle_time_ms is the one
// its answer carried.
func TestFetchThrottledAfterForwardCounted(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnvWith(t, envConfig{
		listenerExtra: "    quotas:\n      client: { consumer_byte_rate: 100KiB }\n      max_throttle: 2s\n",
		upstream:      "    embedded: { brokers: 1, partitions: 2 }\n",
	})
	rec := traceAll(t, env)
	prod := env.client("acme-orders-producer", kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceN(t, prod, "orders", 1, strings.Repeat("x", 300<<10)) // one batch of 300 KiB: past the 100 KiB bucket
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(rawFetch(50 << 20)) // forwarded: the bucket is full
	a := fetchAnswer()
	r.recv(a)
	if a.ThrottleMillis <= 0 {
		t.Fatalf("the answer of 300 KiB carries throttle_time_ms %d: want a throttle", a.ThrottleMillis)
	}
	body := waitMetrics(t, env,
		`flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Fetch",decision="throttled",cause="quota"} 1`,
		`flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="consumer_byte_rate",scope="client"} 1`)
	if strings.Contains(body, `api="Fetch",decision="allowed"`) {
		t.Errorf("the throttled Fetch was also counted allowed:\n%s", grepLines(body, "requests_total"))
	}
	sp := spansNamed(t, rec, "kafka Fetch", 1)[0]
	if got := spanAttr(sp, "kafka.throttle_time_ms").AsInt64(); got != int64(a.ThrottleMillis) {
		t.Errorf("span throttle %d ms, the answer carried %d", got, a.ThrottleMillis)
	}
	if got := spanAttr(sp, "kafka.decision").AsString(); got != "throttled" {
		t.Errorf("span decision %q, want throttled", got)
	}
}

// brokerProduceAnswer is kfake's answer to pr with the broker's own
// throttle of ms.
func brokerProduceAnswer(pr *kmsg.ProduceRequest, ms int32) *kmsg.ProduceResponse {
	resp := pr.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	resp.ThrottleMillis = ms
	return resp
}

// Q2, O1: a broker's own throttle (its quota on the gateway's principal),
// no quota of the gateway's: counted quota="broker", scope="broker", the
// request decision="throttled" (cause quota), its span's throttle the
// broker's, the one its answer carried.
func TestBrokerThrottleCounted(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	rec := traceAll(t, env)
	kf := kfakeOf(t, env)
	kf.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		return brokerProduceAnswer(req.(*kmsg.ProduceRequest), 250), nil, true
	})
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	r.send(rawProduce(100))
	a := produceAnswer()
	r.recv(a)
	if a.ThrottleMillis != 250 {
		t.Fatalf("throttle_time_ms = %d, want the broker's 250", a.ThrottleMillis)
	}
	body := waitMetrics(t, env,
		`flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Produce",decision="throttled",cause="quota"} 1`,
		`flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="broker",scope="broker"} 1`)
	if strings.Contains(body, `api="Produce",decision="allowed"`) {
		t.Errorf("the Produce the broker throttled was counted allowed:\n%s", grepLines(body, "requests_total"))
	}
	sp := spansNamed(t, rec, "kafka Produce", 1)[0]
	if got := spanAttr(sp, "kafka.throttle_time_ms").AsInt64(); got != 250 {
		t.Errorf("span throttle %d ms, want the answer's 250", got)
	}
	if got := spanAttr(sp, "kafka.decision").AsString(); got != "throttled" {
		t.Errorf("span decision %q, want throttled", got)
	}
}

// O5: a span starts at the read that brought its request's first byte and
// ends at its answer's last byte written, the broker's round trip
// included. A Produce sent in two parts 300 ms apart, its broker 200 ms
// late: its span starts before the second part and lasts 500 ms at least;
// two Produces sent in one write start together.
func TestSpanFromFirstByteToAnswer(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	rec := traceAll(t, env)
	kf := kfakeOf(t, env)
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		time.Sleep(200 * time.Millisecond) // the broker answers 200 ms late
		return nil, nil, false
	})
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r) // the broker connection dialed: the span below is the request's
	frame := r.frame(rawProduce(1000))
	first := time.Now()
	r.writeRaw(frame[:20])
	time.Sleep(300 * time.Millisecond) // the client's own pause within its request
	second := time.Now()
	r.writeRaw(frame[20:])
	r.recv(produceAnswer())
	answered := time.Now()
	sp := spansNamed(t, rec, "kafka Produce", 1)[0]
	if s := sp.StartTime(); s.Before(first) || !s.Before(second) {
		t.Errorf("span started at %v: want at its first byte's read, after %v and before the rest at %v", s, first, second)
	}
	if e := sp.EndTime(); e.Before(second.Add(200*time.Millisecond)) || e.After(answered) {
		t.Errorf("span ended at %v: want after the broker's 200 ms (%v) and before the answer was read (%v)", e, second.Add(200*time.Millisecond), answered)
	}
	if d := sp.EndTime().Sub(sp.StartTime()); d < 500*time.Millisecond {
		t.Errorf("span lasted %v: want 500 ms at least (300 ms of the client's, 200 of the broker's)", d)
	}
	// Two requests in one write: both start at that read.
	two := append(r.frame(rawProduce(100)), r.frame(rawProduce(100))...)
	sent := time.Now()
	r.writeRaw(two)
	r.recv(produceAnswer())
	r.recv(produceAnswer())
	spans := spansNamed(t, rec, "kafka Produce", 3)[1:]
	if !spans[0].StartTime().Equal(spans[1].StartTime()) || spans[1].StartTime().Before(sent) {
		t.Errorf("pipelined spans start at %v and %v: want both at the read after %v", spans[0].StartTime(), spans[1].StartTime(), sent)
	}
	if d := spans[1].EndTime().Sub(spans[1].StartTime()); d < 400*time.Millisecond {
		t.Errorf("the second pipelined Produce's span lasted %v: it waited for the first's 200 ms at the broker and its own", d)
	}
}

// frame encodes req as send would, the next correlation id, without
// sending it.
func (r *rawConn) frame(req kmsg.Request) []byte {
	r.corr++
	b := []byte{0, 0, 0, 0}
	b = codec.AppendRequestHeader(b, req.Key(), req.GetVersion(), r.corr, []byte("raw"), false, req.IsFlexible())
	b = req.AppendTo(b)
	codec.PutSize(b, len(b)-4)
	return b
}

// O1: a request forwarded whose answer never leaves (its client closed
// first) is counted all the same, at the close, and its span ends there.
func TestRequestCountedWhenItsAnswerNeverLeaves(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnv(t, "")
	rec := traceAll(t, env)
	kf := kfakeOf(t, env)
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		time.Sleep(time.Second) // the client is gone before the answer
		return nil, nil, false
	})
	r := dialRaw(t, env.boot, "acme-app", env.keys["acme-app"])
	servedOrders(t, r)
	r.send(rawProduce(100))
	waitUntil(t, 10*time.Second, "the Produce forwarded", func() bool { return env.e.inFlight() > 0 })
	_ = r.c.Close()
	waitMetrics(t, env, `flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Produce",decision="allowed",cause="none"} 1`)
	spansNamed(t, rec, "kafka Produce", 1)
}

// O1, Q2: a franz-go consumer held to consumer_byte_rate: every throttle
// its Fetches got (flexway_kafka_throttle_seconds, consumer_byte_rate) is
// a Fetch counted decision="throttled", those throttled after forwarding
// (the answer's bytes past the bucket) as those answered empty in debt.
func TestConsumerThrottlesAllCounted(t *testing.T) {
	skipOnRealKafka(t)
	env := newTestEnvWith(t, envConfig{
		listenerExtra: "    quotas:\n      client: { consumer_byte_rate: 256KiB }\n      max_throttle: 1s\n",
		upstream:      "    embedded: { brokers: 1, partitions: 2 }\n",
	})
	prod := env.client("acme-orders-producer", kgo.ProducerBatchCompression(kgo.NoCompression()))
	produceN(t, prod, "orders", 4, strings.Repeat("x", 200<<10)) // 800 KiB in batches of 200 KiB
	cons := env.client("acme-app", kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < 4 && ctx.Err() == nil; {
		got += cons.PollFetches(ctx).NumRecords()
	}
	if ctx.Err() != nil {
		t.Fatal("the consumer did not read its 4 records")
	}
	var throttles, throttled uint64
	defer func() {
		if t.Failed() {
			t.Logf("%d throttles of consumer_byte_rate, %d Fetches counted throttled", throttles, throttled)
		}
	}()
	waitUntil(t, 10*time.Second, "every throttle counted throttled", func() bool {
		body := metricsText(t, env.e)
		throttles = metricValue(body, `flexway_kafka_throttle_seconds_count{cluster="shop",tenant="acme",quota="consumer_byte_rate",scope="client"}`)
		throttled = metricValue(body, `flexway_kafka_requests_total{cluster="shop",tenant="acme",api="Fetch",decision="throttled",cause="quota"}`)
		return throttles > 0 && throttled == throttles
	})
	t.Logf("%d throttles, %d Fetches counted throttled", throttles, throttled)
}

// metricValue reads the value of the series line (its name and labels)
// in a /metrics text, 0 when absent.
func metricValue(body, series string) uint64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
