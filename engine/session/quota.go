package session

// KIP-219 throttling (issue 8, SPEC Q1-Q2): the quotas of
// listeners.kafka.quotas spent inline on the loop, the throttle set in the
// answer, then the client's reads paused for that long (invariant 20), so
// a client that ignores throttle_time_ms is held to the rate all the same.

import (
	"time"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/quota"
)

// quotaConn is a client's part of the quotas, from its first request
// under quotas to its close.
type quotaConn struct {
	p    *quota.Principal
	lim  quota.Limits
	snap *configs.Snapshot // lim is this snapshot's

	// next is the throttle decided for the request being handled (its
	// answer carries it); broker is the broker's own, read in an answer.
	next      time.Duration
	nextKind  quota.Kind
	nextScope quota.Scope

	spent bool // the request at the head was spent (quotaHold), not yet taken (quotaGate)
	// heldSince: the request at the head has waited for a debt since
	// then (zero: it does not wait); at max_throttle it goes on (Q2).
	heldSince time.Time
	// quietSince: the start of the silences after answers since the last
	// request let through (waitedFrom)
	quietSince time.Time
	// paced: muted in the middle of a streamed Produce, whose bytes are
	// charged as they are read (pace): the stream waits, not only the
	// next request.
	paced     bool
	fetcher   bool      // counted among its principal's fetching connections (Principal.Fetcher)
	muted     bool      // no request is handled until muteUntil
	muteUntil time.Time // the end of the silence (KIP-219)
	listed    bool      // in lp.muted

	// timer ends the silence on time: it posts wake to the client's loop
	// at muteUntil (both made at the first mute, then reset); the tick
	// is the fallback. A silence that ends up to a tick late costs a
	// consumer throttled ten times a second a tenth of its rate.
	timer *time.Timer
	wake  *task
}

// limitsOf reads the rates in force from a snapshot.
func limitsOf(q *configs.Quotas) quota.Limits {
	var l quota.Limits
	if q == nil {
		return l
	}
	set := func(dst *[quota.NumKinds]int64, r *configs.Rates) {
		if r == nil {
			return
		}
		dst[quota.ProduceBytes] = int64(r.ProducerByteRate)
		dst[quota.FetchBytes] = int64(r.ConsumerByteRate)
		dst[quota.Requests] = int64(r.RequestRate)
	}
	set(&l.Client, q.Client)
	set(&l.Tenant, q.Tenant)
	l.Window, l.MaxThrottle = q.Window.D(), q.MaxThrottle.D()
	return l
}

// quotaOn returns the client's quota state when some rate is bounded in
// the snapshot in force (nil otherwise: nothing is counted). The buckets
// are taken at the first request under quotas (a reload may add them);
// a reload's rates apply at the next request.
func (cl *quotas) quotaOn() *quotaConn {
	q := cl.q
	if q != nil && q.snap == cl.snap {
		if q.p == nil {
			return nil
		}
		return q
	}
	if q == nil {
		if cl.snap.Listener.Quotas == nil {
			return nil // no quota: nothing held for it (an idle pair's bytes, issue 23.5)
		}
		q = &quotaConn{}
		cl.q = q
	}
	q.snap = cl.snap
	q.lim = limitsOf(cl.snap.Listener.Quotas)
	if !q.lim.Any() {
		// Kept while muted: a throttle already decided runs its course.
		return nil
	}
	if q.p == nil {
		q.p = cl.env.Quotas.Buckets.Acquire(cl.auth.ident.Tenant, string(cl.auth.ident.Mechanism)+":"+cl.auth.ident.Principal, time.Now())
	}
	return q
}

// quotaRelease gives the buckets back at the client's close.
func (cl *quotas) quotaRelease() {
	if q := cl.q; q != nil && q.p != nil && q.fetcher {
		q.fetcher = false
		q.p.Fetcher(-1)
	}
	if q := cl.q; q != nil && q.p != nil {
		cl.env.Quotas.Buckets.Release(q.p, time.Now())
		q.p = nil
	}
	if q := cl.q; q != nil && q.timer != nil {
		q.timer.Stop()
	}
}

// quotaLocal counts a request the gateway answers itself (ApiVersions, a
// re-authentication) against request_rate.
func (cl *quotas) quotaLocal() {
	q := cl.quotaOn()
	if q == nil || cl.closed {
		return
	}
	now := time.Now()
	if d, s := q.p.Spend(quota.Requests, 1, now, &q.lim); d > 0 {
		cl.throttled(quota.Requests, s, d)
		cl.silence(q, now, now.Add(d))
	}
}

// quotaHold reports whether a request of key (a frame of size bytes)
// must wait because its principal or tenant owes (invariant 33): any
// request while requests are owed, a Produce while produced bytes are. The
// connection is then muted until the debt is paid, or until the request
// has waited max_throttle (Q2: the cap bounds the wait as it bounds the
// silence after an answer; no throttle may make a request expire), and
// the request stays in the buffer; what the client sends behind it waits
// in the kernel. Past the cap the request goes on, and its answer carries
// what is still owed (capped): a debt larger than the cap is paid over
// several throttles. The wait runs from the frame's first byte waiting in
// the buffer (frameSince) when it came before: a request pipelined during
// a silence has waited that silence already. The debt is the principal's,
// so it holds the next request on every connection of the principal, in
// any replica sharing its counters. A Fetch owing bytes is not held:
// quotaGate answers it empty at once (Q2).
//
// A request let through is spent at once, in the same step as the look
// at the debt, so that two loops seeing a paid debt together are a few
// nanoseconds' race, not a request's: the principal's next request after
// one past the bucket waits on every connection. The spending is kept for
// quotaGate (q.spent) while the request waits for something else (its
// broker connection, the budget). A streamed Produce is spent its size
// prefix here, the rest as it is read (pace).
func (cl *quotas) quotaHold(key int16, size int) bool {
	q := cl.quotaOn()
	if q == nil || q.spent {
		return false
	}
	now := time.Now()
	d := q.p.Owed(quota.Requests, now, &q.lim)
	if key == codec.KeyProduce {
		d = max(d, q.p.Owed(quota.ProduceBytes, now, &q.lim))
	}
	if d > 0 {
		if q.heldSince.IsZero() {
			q.heldSince = q.waitedFrom(cl.clock.frameSince.Time(), now)
		}
		if left := q.lim.MaxThrottle - now.Sub(q.heldSince); left > 0 {
			cl.mute(q, now.Add(min(d, left)))
			return true
		}
		cl.env.Series.QuotaCapped.Add(1) // waited max_throttle: it goes on, in debt
	}
	q.heldSince, q.quietSince = time.Time{}, time.Time{}
	q.spend(key, size, now)
	return false
}

// waitedFrom is when the request at the head began to wait for its quota:
// now, or when its first byte was buffered (frameSince) if before, or the
// start of the last silence after an answer (quietSince) if one came since
// the last request let through: a KIP-219 client sends its next request as
// the throttle of the last answer ends, and has waited that throttle
// already. So the wait of a request, silence included, is capped at
// max_throttle; a connection is let through in debt at most once per
// silence.
func (q *quotaConn) waitedFrom(frameSince, now time.Time) time.Time {
	from := now
	if !frameSince.IsZero() && frameSince.Before(from) {
		from = frameSince
	}
	if !q.quietSince.IsZero() && q.quietSince.Before(from) {
		from = q.quietSince
	}
	return from
}

// silence mutes the client after an answer that carries a throttle
// (KIP-219), from now to until; quietSince keeps its start for the next
// request's wait (waitedFrom).
func (cl *quotas) silence(q *quotaConn, now, until time.Time) {
	if q.quietSince.IsZero() {
		q.quietSince = now
	}
	cl.mute(q, until)
}

// quotaHoldStage: a request of a principal or tenant in debt waits
// (quotaHold).
type quotaHoldStage struct{}

func (quotaHoldStage) admit(cl *Client, h codec.RequestHeader, frame []byte) step {
	if cl.quotas().quotaHold(h.Key, len(frame)) {
		return stepWait // muted until the debt is paid, max_throttle at most
	}
	return stepNext
}

// quotaGateStage: a Fetch in debt is answered empty at once; a Fetch let
// through asks at most its allowance (quotaGate).
type quotaGateStage struct{}

func (quotaGateStage) admit(cl *Client, h codec.RequestHeader, frame []byte) step {
	if cl.quotas().quotaGate(&h, len(frame)) {
		return stepDone
	}
	return stepNext
}

// spend charges a request of key (a frame of size bytes) and keeps the
// throttle decided for its answer.
func (q *quotaConn) spend(key int16, size int, now time.Time) {
	q.spent = true
	q.next, q.nextScope = q.p.Spend(quota.Requests, 1, now, &q.lim)
	q.nextKind = quota.Requests
	if key == codec.KeyProduce {
		n := int64(size + codec.SizeLen)
		if d, s := q.p.Spend(quota.ProduceBytes, n, now, &q.lim); d > q.next {
			q.next, q.nextKind, q.nextScope = d, quota.ProduceBytes, s
		}
	}
}

// minFetchShare: a Fetch is forwarded once its buckets hold an eighth of
// their depth; below, it is answered empty with the time that part takes
// to come (no round trip to the broker for a few bytes, and no answer cut
// to a few KiB: Apache Kafka ends an answer with the part of a batch that
// fits, which the client drops and the quota counts; invariant 33).
const minFetchShare = 8

// quotaGate takes a request about to be judged, spent by quotaHold (one
// request, and for a Produce its whole frame). A Fetch of a principal or
// tenant in debt is answered at once, empty, with its throttle, the broker
// not asked: true then (the request is done with). A Fetch forwarded asks
// the broker for no more than the buckets hold (Session.FetchQuota, the
// allowance, split over its partitions by codec). Otherwise the throttle
// decided waits in q.next for quotaPending.
func (cl *quotas) quotaGate(h *codec.RequestHeader, size int) bool {
	q := cl.quotaOn()
	if q == nil {
		return false
	}
	now := time.Now()
	if !q.spent { // a reload brought the quotas between the two steps: spent now, not held
		q.spend(h.Key, size, now)
	}
	q.spent = false
	switch h.Key {
	case codec.KeyFetch:
		if !q.fetcher {
			q.fetcher = true
			q.p.Fetcher(1)
		}
		d, s := q.p.Debt(quota.FetchBytes, now, &q.lim)
		if d <= 0 {
			left := q.p.Left(quota.FetchBytes, now, &q.lim)
			if left < 0 {
				break // no consumer_byte_rate
			}
			if left >= q.minFetch() {
				a := q.p.Allowance(quota.FetchBytes, now, &q.lim)
				cl.sess.FetchQuota = int32(min(max(a, 1), 1<<31-1)) // for this Fetch alone (judge)
				break
			}
			d, s = q.lim.Window/minFetchShare, quota.ScopeClient
		}
		if q.next > d {
			d, s = q.next, q.nextScope
		}
		p := cl.queue.Get()
		if !cl.sess.ThrottledFetch(h, p, throttleMs(d)) {
			cl.queue.Put(p)
			break
		}
		q.next = 0
		cl.throttled(quota.FetchBytes, s, time.Duration(throttleMs(d))*time.Millisecond)
		cl.client().auditor().countAt(h.Key, p, signals.Throttled, signals.CauseQuota)
		cl.client().answers().answerPending(p)
		cl.silence(q, now, now.Add(d))
		return true
	}
	return false
}

// minFetch is what the buckets must hold for a Fetch to be forwarded: an
// eighth of the smaller consumer_byte_rate bucket's depth.
func (q *quotaConn) minFetch() int64 {
	m := int64(-1)
	for _, r := range [2]int64{q.lim.Client[quota.FetchBytes], q.lim.Tenant[quota.FetchBytes]} {
		if r <= 0 {
			continue
		}
		if d := int64(float64(r) * q.lim.Window.Seconds()); m < 0 || d < m {
			m = d
		}
	}
	return max(m/minFetchShare, 1)
}

// quotaPending gives the request's answer its throttle, counted as the
// client reads it (whole milliseconds); the silence begins when the answer
// leaves (answerThrottle, KIP-219).
func (cl *quotas) quotaPending(p *decide.Pending) {
	q := cl.q
	if q == nil || q.next <= 0 {
		return
	}
	d := q.next
	q.next = 0
	p.Throttle = throttleMs(d) // counted decision="throttled", cause="quota" as the answer leaves (requestDone)
	cl.throttled(q.nextKind, q.nextScope, time.Duration(p.Throttle)*time.Millisecond)
}

// quotaAnswer spends a Fetch answer of n bytes (its whole frame) before it
// is rewritten: past consumer_byte_rate, the answer carries the throttle,
// and the client is muted once it has left (answerThrottle).
func (cl *quotas) quotaAnswer(p *decide.Pending, n int) {
	if p.Key != codec.KeyFetch {
		return
	}
	q := cl.quotaOn()
	if q == nil {
		return
	}
	now := time.Now()
	d, s := q.p.Spend(quota.FetchBytes, int64(n), now, &q.lim)
	if d <= 0 {
		return
	}
	if ms := throttleMs(d); ms > p.Throttle {
		cl.throttled(quota.FetchBytes, s, time.Duration(ms-p.Throttle)*time.Millisecond)
		p.Throttle = ms
	}
}

// answerThrottle begins, once an answer has left, the silence its
// throttle_time_ms announces (KIP-219: from the answer, not from the
// request): the larger of the gateway's throttle and the broker's own.
// Nothing is read from the client, so nothing is sent on its broker
// connection (which only carries its requests), before it ends.
func (cl *quotas) answerThrottle(p *decide.Pending) {
	if cl.closed || (p.Throttle <= 0 && p.BrokerThrottle <= 0) {
		return
	}
	if p.BrokerThrottle > 0 {
		cl.ts.Throttled(signals.QuotaBroker, signals.ScopeBroker, time.Duration(p.BrokerThrottle)*time.Millisecond)
	}
	if cl.q == nil {
		cl.q = &quotaConn{}
	}
	now := time.Now()
	cl.silence(cl.q, now, now.Add(time.Duration(max(p.Throttle, p.BrokerThrottle))*time.Millisecond))
}

func throttleMs(d time.Duration) int32 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return int32(min(ms, 1<<31-1))
}

// mute stops handling the client's requests until until; its reads are
// paused once the frame at hand is done with (quotaPause).
func (cl *quotas) mute(q *quotaConn, until time.Time) {
	if until.After(q.muteUntil) {
		q.muteUntil = until
		cl.armUnmute(q)
	}
	q.muted = true
	if !q.listed {
		q.listed = true
		if cl.lp.muted == nil {
			cl.lp.muted = map[*Client]struct{}{}
		}
		cl.lp.muted[cl.client()] = struct{}{}
	}
}

// armUnmute sets the client's timer to the end of its silence. The timer
// and its task are made once per connection (no allocation per throttle
// but gnet's queueing of the task); a client without a loop (unit tests)
// is left to the tick.
func (cl *quotas) armUnmute(q *quotaConn) {
	if cl.lp == nil || cl.lp.el == nil {
		return
	}
	d := time.Until(q.muteUntil)
	if q.timer != nil {
		q.timer.Reset(d)
		return
	}
	lp := cl.lp
	q.wake = &task{l: lp, where: "unmute", x: cl.client(), took: cl.env.Series.LoopUnmute, fn: func() {
		cl.env.unmute(lp, cl.client(), time.Now())
	}}
	q.timer = time.AfterFunc(d, func() { _ = lp.post(q.wake) })
}

// muted reports whether requests wait for the end of a throttle.
func (cl *quotas) muted() bool { return cl.q != nil && cl.q.muted }

// quotaPause pauses a muted client's reads once it sent MuteInPlace
// unhandled (at once over TLS): called between frames (the frame handled
// is discarded), never while slices of the input are held, and at each of
// its traffic events while muted. A KIP-219 client sends nothing while
// throttled: its socket stays enrolled, and the loop is spared a detach and
// a re-enrolment per mute (issue 22.7: with them, a held neighbour's sweeps
// held the loop 10 ms and more).
func (cl *quotas) quotaPause() {
	if cl.muted() && !cl.closed && (cl.ps.s == nil || cl.q.paced) { // a streamed Produce goes on to its end first, unless paced
		if cl.auth.tls == nil && cl.c.Buffered() < MuteInPlace {
			return // muted in place: read on (a KIP-219 client sends nothing meanwhile), not handled
		}
		cl.client().flow().pause(conn.Quota)
	}
}

// MuteInPlace is what a muted client may have sent unhandled (in gnet's
// buffer) before its socket is paused; with one read, what it holds.
const MuteInPlace = 256 << 10

// sweepMuted runs at each tick on loop l: a client whose throttle has
// run out is read again and its waiting requests handled.
func (env *Env) sweepMuted(l *Loop) {
	if len(l.muted) == 0 {
		return
	}
	now := time.Now()
	for cl := range l.muted {
		env.unmute(l, cl, now)
	}
}

// unmute ends a client's silence once its time has come (on its loop: at
// its timer, or at a tick); before, it pauses the reads of a client muted
// outside process (by an answer).
func (env *Env) unmute(l *Loop, cl *Client, now time.Time) {
	q := cl.q
	if _, listed := l.muted[cl]; !listed || q == nil {
		return
	}
	if cl.closed {
		delete(l.muted, cl)
		return
	}
	if now.Before(q.muteUntil) {
		if q.muted && !cl.c.PausedFor(conn.Quota) {
			cl.quotas().quotaPause() // muted outside process (an answer): pause now
		}
		return
	}
	delete(l.muted, cl)
	if q.paced && cl.ps.s != nil {
		cl.clock.frameSince = instantOf(now) // the pause was the gateway's (idle_timeout's partial frame, sweep.go)
	}
	q.listed, q.muted, q.paced = false, false, false
	cl.flow().unpause(conn.Quota)
	if !cl.closed {
		cl.process()
	}
	if !cl.closed && cl.ps.s != nil && cl.inBuffered() == 0 {
		cl.producer().spliceOn() // a paced stream's rest waits in the socket
	}
}

// throttled records a throttle of the quotas in the tenant's series
// (flexway_kafka_throttle_seconds, quota and scope).
func (cl *quotas) throttled(k quota.Kind, s quota.Scope, d time.Duration) {
	q := signals.QuotaRequestRate
	switch k {
	case quota.ProduceBytes:
		q = signals.QuotaProducerByteRate
	case quota.FetchBytes:
		q = signals.QuotaConsumerByteRate
	}
	sc := signals.ScopeClient
	if s == quota.ScopeTenant {
		sc = signals.ScopeTenant
	}
	cl.ts.Throttled(q, sc, d)
}
