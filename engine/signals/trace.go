package signals

// The spans of seed 001 "Signaux": one per sampled authenticated request,
// from its first byte read to its answer's last byte written (SPEC O5),
// named `kafka <API>` after the table of the API names, with the closed
// attributes kafka.cluster, tenant, auth.mechanism, kafka.decision,
// kafka.cause and kafka.throttle_time_ms: never a topic, a key, a client id
// or an address. The sample is drawn here, before any call to the SDK:
// outside it a request costs a random draw and a compare, no allocation
// (TestTraceOutsideSampleAllocs).

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/flexway/flexway/codec"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Tracer makes the request spans; nil makes none.
type Tracer struct {
	t trace.Tracer
	// below: a request is in the sample when a uniform draw is below it
	// (ratio x 2^64; math.MaxUint64 for every request).
	below uint64
	names [codec.MaxKey + 2]string // "kafka <API>" by apiIndex
}

// NewTracer samples ratio (0 to 1) of the requests into spans of t; nil
// when ratio is 0 or t is nil.
func NewTracer(t trace.Tracer, ratio float64) *Tracer {
	if t == nil || !(ratio > 0) {
		return nil
	}
	tr := &Tracer{t: t, below: math.MaxUint64}
	if ratio < 1 {
		tr.below = uint64(ratio * (1 << 64))
	}
	for k := range tr.names {
		tr.names[k] = "kafka " + apiName(k)
	}
	return tr
}

// Sampled draws whether a request makes a span: allocation-free.
func (tr *Tracer) Sampled() bool {
	return tr != nil && (tr.below == math.MaxUint64 || rand.Uint64() < tr.below)
}

// Span is what a request's span says.
type Span struct {
	// Start is when the request's first byte was read (zero: now); the
	// span ends when Record is called, its answer's last byte written.
	Start      time.Time
	Key        int16
	Cluster    string // the virtual cluster
	Tenant     string
	Mechanism  string // api_key, oauthbearer, mtls
	Decision   Decision
	Cause      Cause
	ThrottleMs int32 // the throttle_time_ms its answer carried (the gateway's or the broker's, the larger)
}

// Record makes the span of one sampled request, from s.Start to now: its
// answer has left (or it has none).
func (tr *Tracer) Record(s *Span) {
	start := s.Start
	if start.IsZero() {
		start = time.Now()
	}
	_, sp := tr.t.Start(context.Background(), tr.names[apiIndex(s.Key)],
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("kafka.cluster", s.Cluster),
			attribute.String("tenant", s.Tenant),
			attribute.String("auth.mechanism", s.Mechanism),
			attribute.String("kafka.decision", decisionNames[s.Decision]),
			attribute.String("kafka.cause", causeNames[s.Cause]),
			attribute.Int("kafka.throttle_time_ms", int(s.ThrottleMs)),
		))
	sp.End()
}
