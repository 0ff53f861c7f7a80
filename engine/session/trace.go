package session

import "github.com/flexway/flexway/engine/signals"

// The request spans (seed 001 "Signaux", observability.otlp): every judged
// request is counted (flexway_kafka_requests_total) and, when its session
// is authenticated and it falls in the sample, makes one span
// (signals.Tracer). Off or outside the sample: a nil check or a random
// draw, no allocation (TestTraceOutsideSampleAllocs).

// count counts a judged request of key: its decision, its cause, the
// throttle_time_ms the gateway gave its answer.
func (cl *Client) count(key int16, dec signals.Decision, cause signals.Cause, throttleMs int32) {
	cl.ts.Request(key, dec, cause)
	if cl.env.Tracer == nil || cl.auth.state != stAuthed || !cl.env.Tracer.Sampled() {
		return
	}
	cl.env.Tracer.Record(&signals.Span{
		Key:        key,
		Cluster:    cl.route.clusterName(),
		Tenant:     cl.auth.ident.Tenant,
		Mechanism:  string(cl.auth.ident.Mechanism),
		Decision:   dec,
		Cause:      cause,
		ThrottleMs: throttleMs,
	})
}
