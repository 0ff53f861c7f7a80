package session

import (
	"time"

	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
)

// The requests counted (flexway_kafka_requests_total) and traced (seed 001
// "Signaux", SPEC O1, O5). A request is counted where its decision is
// known: a refusal or an answer of the gateway's own at its judgement; a
// request forwarded when its answer leaves, with the throttle that answer
// carries (the gateway's, raised by a Fetch answer's bytes, or the
// broker's: issue 34.3). When its session is authenticated and it falls in
// the sample, it makes one span (signals.Tracer) from the read that
// brought its first byte (clientClock.reqSince) to its answer's last byte
// written (requestDone), the broker's round trip included. What the span
// needs rides in the Pending (decide.Life): outside the sample a nil check
// or a random draw, no allocation (TestTraceOutsideSampleAllocs).

// sampled draws whether the request at hand makes a span: only on an
// authenticated session.
func (cl *auditor) sampled() bool {
	return cl.env.Tracer != nil && cl.auth.state == stAuthed && cl.env.Tracer.Sampled()
}

// count counts a request of key done with now (refused, or answered by
// the gateway at once): its decision, its cause, the throttle_time_ms of
// its answer; its span ends now.
func (cl *auditor) count(key int16, dec signals.Decision, cause signals.Cause, throttleMs int32) {
	cl.ts.Request(key, dec, cause)
	if cl.sampled() {
		cl.span(key, dec, cause, throttleMs, &decide.Life{Since: cl.clock.reqSince.Time()})
	}
}

// countLocal counts a request of key the gateway answered itself, its
// first byte read at since: its span ends with its answer, now (p nil: it
// was written) or when p, queued behind the broker's answers, leaves.
func (cl *auditor) countLocal(key int16, p *decide.Pending, dec signals.Decision, cause signals.Cause, since instant) {
	if p == nil {
		cl.ts.Request(key, dec, cause)
		if cl.sampled() {
			cl.span(key, dec, cause, 0, &decide.Life{Since: since.Time()})
		}
		return
	}
	p.Key = key
	cl.countAt(key, p, dec, cause)
	if p.Life.Sampled {
		p.Life.Since = since.Time()
	}
}

// countAt counts a request of key now, its decision known at its
// judgement, and keeps in p what its span needs when its answer leaves
// (requestDone).
func (cl *auditor) countAt(key int16, p *decide.Pending, dec signals.Decision, cause signals.Cause) {
	cl.ts.Request(key, dec, cause)
	s := cl.sampled()
	p.Life = decide.Life{Since: cl.spanStart(s), Sampled: s, Counted: true, Decision: uint8(dec), Cause: uint8(cause)}
}

// countLater keeps in p what a request forwarded needs to be counted and
// traced when its answer leaves (requestDone).
func (cl *auditor) countLater(p *decide.Pending) {
	s := cl.sampled()
	p.Life = decide.Life{Since: cl.spanStart(s), Sampled: s}
}

// spanStart is the head request's first byte read, for a span: read
// against the clock (instant.Time) for a sampled request only.
func (cl *auditor) spanStart(sampled bool) time.Time {
	if !sampled {
		return time.Time{}
	}
	return cl.clock.reqSince.Time()
}

// requestDone ends the life of the request p once its answer's last byte is
// written (or at once, when it has none): counted now unless its judgement
// was (a forwarded request: throttled when its answer carries a throttle,
// the gateway's or the broker's), its span recorded with the throttle its
// answer carried.
func (cl *auditor) requestDone(p *decide.Pending) {
	dec, cause := signals.Decision(p.Life.Decision), signals.Cause(p.Life.Cause)
	thr := max(p.Throttle, p.BrokerThrottle)
	if !p.Life.Counted {
		p.Life.Counted = true
		dec, cause = signals.Allowed, signals.CauseNone
		if thr > 0 {
			dec, cause = signals.Throttled, signals.CauseQuota
		}
		cl.ts.Request(p.Key, dec, cause)
	}
	if p.Life.Sampled {
		p.Life.Sampled = false
		cl.span(p.Key, dec, cause, thr, &p.Life)
	}
}

// span records a sampled request's span, ending now.
func (cl *auditor) span(key int16, dec signals.Decision, cause signals.Cause, throttleMs int32, l *decide.Life) {
	cl.env.Tracer.Record(&signals.Span{
		Start:      l.Since,
		Key:        key,
		Cluster:    cl.route.clusterName(),
		Tenant:     cl.auth.ident.Tenant,
		Mechanism:  string(cl.auth.ident.Mechanism),
		Decision:   dec,
		Cause:      cause,
		ThrottleMs: throttleMs,
	})
}

// nextRequest: the request at the head of the input was taken whole. The
// next one's first byte came with the last read, or, when bytes read
// before it are left, with an earlier read (prevRead: exact unless several
// reads waited unhandled); an empty input waits for the next read, unless
// a TLS record not yet whole may hold its first byte. frameSince (the
// sweep's) follows the whole frames only.
func (cl *auditor) nextRequest() {
	switch {
	case cl.client().inBuffered() == 0:
		cl.clock.frameSince, cl.clock.reqSince = 0, 0
		if cl.recordPart() > 0 {
			cl.clock.reqSince = cl.clock.lastActive
		}
	case cl.clock.older > 0:
		cl.clock.frameSince, cl.clock.reqSince = cl.clock.lastActive, cl.clock.prevRead
	default:
		cl.clock.frameSince, cl.clock.reqSince = cl.clock.lastActive, cl.clock.lastActive // the next frame came with the last read
	}
}

// recordPart: over TLS, the bytes of a record not yet whole (they decrypt
// to nothing yet, but a request's first byte may be among them).
func (cl *auditor) recordPart() int {
	if cl.auth.tls == nil {
		return 0
	}
	return cl.c.Buffered()
}
