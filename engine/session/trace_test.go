package session

import (
	"testing"

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
// request left out of the sample; and no span is made.
func TestTraceOutsideSampleAllocs(t *testing.T) {
	for _, ratio := range []float64{0, 1e-15} {
		cl, rec := traceTestClient(t, ratio)
		if (cl.env.Tracer == nil) != (ratio == 0) {
			t.Fatalf("ratio %v: tracer %v", ratio, cl.env.Tracer)
		}
		p := &decide.Pending{Key: codec.KeyProduce}
		step := func() { cl.countRequest(codec.KeyProduce, p, decide.Forward) }
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
// session not authenticated yet makes none.
func TestTraceSpanAttributes(t *testing.T) {
	cl, rec := traceTestClient(t, 1)
	cl.throttling = true
	cl.countRequest(codec.KeyFetch, &decide.Pending{Key: codec.KeyFetch, Throttle: 250}, decide.Forward)
	ipid, meta := int16(kmsg.InitProducerID), int16(kmsg.Metadata)
	cl.countRequest(ipid, &decide.Pending{Key: ipid}, decide.Disconnect)
	cl.auth.state = stAuthed - 1
	cl.countRequest(meta, &decide.Pending{Key: meta}, decide.Forward)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (the session's two authenticated requests)", len(spans))
	}
	want := []struct {
		name            string
		decision, cause string
		throttle        int64
	}{{"kafka Fetch", "throttled", "quota", 250}, {"kafka InitProducerId", "refused", "unsupported", 0}}
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
}

// A ratio samples about that share of the requests.
func TestTraceSamplingRatio(t *testing.T) {
	cl, rec := traceTestClient(t, 0.25)
	p := &decide.Pending{Key: codec.KeyProduce}
	for range 4000 {
		cl.countRequest(codec.KeyProduce, p, decide.Forward)
	}
	// 1000 expected; sd = sqrt(4000 x 0.25 x 0.75) ~ 27: 8 sd each side.
	if n := len(rec.Ended()); n < 780 || n > 1220 {
		t.Errorf("%d spans of 4000 requests at ratio 0.25", n)
	}
}
