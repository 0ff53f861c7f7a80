package session

import (
	"testing"
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// traceTestClient is an authenticated client of tenant acme on cluster
// shop (api_key), its requests counted and traced at ratio (0: no tracer),
// its spans in the recorder returned.
func traceTestClient(t *testing.T, ratio float64) (*Client, *tracetest.SpanRecorder) {
	t.Helper()
	cl := quotaTestClient(t, false, nil)
	cl.auth.ident.Mechanism = "api_key"
	cl.auth.state = stAuthed
	cl.env.Signals = signals.New(nil)
	cl.ts = cl.env.Signals.Tenant("shop", "acme")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	cl.env.Tracer = signals.NewTracer(tp.Tracer("test"), ratio)
	return cl, rec
}

// Seed 001 "Signaux": outside the sample a request's count allocates
// nothing more, observability.otlp absent (no tracer) or present with a
// request left out of the sample; and no span is made. Its whole life:
// a request forwarded and its answer (counted then), one refused at once.
func TestTraceOutsideSampleAllocs(t *testing.T) {
	for _, ratio := range []float64{0, 1e-15} {
		cl, rec := traceTestClient(t, ratio)
		if (cl.env.Tracer == nil) != (ratio == 0) {
			t.Fatalf("ratio %v: tracer %v", ratio, cl.env.Tracer)
		}
		p := &decide.Pending{Key: codec.KeyProduce}
		step := func() {
			cl.auditor().countRequest(codec.KeyProduce, p, decide.Forward)
			p.BrokerThrottle = 5 // its answer, throttled by the broker
			cl.auditor().requestDone(p)
			cl.auditor().countRequest(codec.KeyProduce, p, decide.Disconnect)
		}
		step() // the series is made at the first request
		if n := testing.AllocsPerRun(1000, step); n != 0 {
			t.Errorf("ratio %v: %v allocations per request outside the sample", ratio, n)
		}
		if n := len(rec.Ended()); n != 0 {
			t.Errorf("ratio %v: %d spans made outside the sample", ratio, n)
		}
	}
}

// In the sample, a judged request of an authenticated session makes one
// span, `kafka <API>` with the seed's six attributes and nothing else; a
// session not authenticated yet makes none. A forwarded request's span
// and count wait for its answer: its throttle is the one the answer
// carried, the gateway's raised after forwarding or the broker's (the
// larger), and such an answer is counted throttled with cause quota.
func TestTraceSpanAttributes(t *testing.T) {
	cl, rec := traceTestClient(t, 1)
	fetch := &decide.Pending{Key: codec.KeyFetch}
	cl.auditor().countRequest(codec.KeyFetch, fetch, decide.Forward)
	prod := &decide.Pending{Key: codec.KeyProduce, Throttle: 300}
	cl.auditor().countRequest(codec.KeyProduce, prod, decide.Forward)
	if n := len(rec.Ended()) + int(cl.env.Signals.RequestCount(codec.KeyFetch, signals.Allowed)); n != 0 {
		t.Fatalf("%d spans or counts before the answers", n)
	}
	fetch.Throttle = 250 // consumer_byte_rate spent on its answer (quotaAnswer)
	cl.auditor().requestDone(fetch)
	prod.BrokerThrottle = 700 // the broker's own, larger
	cl.auditor().requestDone(prod)
	ipid, meta := int16(kmsg.InitProducerID), int16(kmsg.Metadata)
	cl.auditor().countRequest(ipid, &decide.Pending{Key: ipid}, decide.Disconnect)
	cl.auth.state = stAuthed - 1
	mp := &decide.Pending{Key: meta}
	cl.auditor().countRequest(meta, mp, decide.Forward)
	cl.auditor().requestDone(mp)
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (the session's authenticated requests)", len(spans))
	}
	want := []struct {
		name            string
		decision, cause string
		throttle        int64
	}{{"kafka Fetch", "throttled", "quota", 250}, {"kafka Produce", "throttled", "quota", 700}, {"kafka InitProducerId", "refused", "unsupported", 0}}
	for i, sp := range spans {
		w := want[i]
		got := map[attribute.Key]attribute.Value{}
		for _, kv := range sp.Attributes() {
			got[kv.Key] = kv.Value
		}
		exp := map[attribute.Key]attribute.Value{
			"kafka.cluster": attribute.StringValue("shop"), "tenant": attribute.StringValue("acme"),
			"auth.mechanism": attribute.StringValue("api_key"), "kafka.decision": attribute.StringValue(w.decision),
			"kafka.cause": attribute.StringValue(w.cause), "kafka.throttle_time_ms": attribute.Int64Value(w.throttle),
		}
		if sp.Name() != w.name || len(got) != len(exp) {
			t.Errorf("span %q with %v: want %q with %v", sp.Name(), got, w.name, exp)
		}
		for k, v := range exp {
			if got[k] != v {
				t.Errorf("span %q: %s = %v, want %v", sp.Name(), k, got[k].Emit(), v.Emit())
			}
		}
	}
	for _, c := range []struct {
		key  int16
		dec  signals.Decision
		want uint64
	}{{codec.KeyFetch, signals.Throttled, 1}, {codec.KeyFetch, signals.Allowed, 0}, {codec.KeyProduce, signals.Throttled, 1}, {meta, signals.Allowed, 1}} {
		if n := cl.env.Signals.RequestCount(c.key, c.dec); n != c.want {
			t.Errorf("%s %v: counted %d, want %d", decide.Name(c.key), c.dec, n, c.want)
		}
	}
}

// O5: a span is the request's life, from the read that brought its first
// byte to its answer's last byte written; a request refused at once ends
// at its refusal, from its first byte too.
func TestTraceSpanFromFirstByteToAnswer(t *testing.T) {
	cl, rec := traceTestClient(t, 1)
	read := time.Now().Add(-200 * time.Millisecond) // its first byte, 200 ms ago
	cl.clock.reqSince = instantOf(read)
	p := &decide.Pending{Key: codec.KeyProduce}
	cl.auditor().countRequest(codec.KeyProduce, p, decide.Forward)
	cl.clock.reqSince = 0 // the next request's, not yet read
	answer := time.Now()
	cl.auditor().requestDone(p)
	cl.clock.reqSince = instantOf(read)
	cl.auditor().countRequest(codec.KeyProduce, &decide.Pending{Key: codec.KeyProduce}, decide.Disconnect)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, sp := range spans {
		if !sp.StartTime().Equal(read) || sp.EndTime().Sub(read) < 200*time.Millisecond {
			t.Errorf("span %s from %v to %v: want from its first byte %v, 200 ms at least", sp.Name(), sp.StartTime(), sp.EndTime(), read)
		}
	}
	if end := spans[0].EndTime(); end.Before(answer) {
		t.Errorf("the forwarded request's span ended at %v, before its answer (%v)", end, answer)
	}
}

// A ratio samples about that share of the requests.
func TestTraceSamplingRatio(t *testing.T) {
	cl, rec := traceTestClient(t, 0.25)
	p := &decide.Pending{Key: codec.KeyProduce}
	for range 4000 {
		cl.auditor().countRequest(codec.KeyProduce, p, decide.Forward)
		cl.auditor().requestDone(p)
	}
	// 1000 expected; sd = sqrt(4000 x 0.25 x 0.75) ~ 27: 8 sd each side.
	if n := len(rec.Ended()); n < 780 || n > 1220 {
		t.Errorf("%d spans of 4000 requests at ratio 0.25", n)
	}
}
