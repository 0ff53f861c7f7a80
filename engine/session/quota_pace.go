package session

// A streamed Produce paced by producer_byte_rate (Q2, invariant 33): its
// bytes are charged as they are read, from the gateway's buffer or spliced
// from the client's socket. A request whose debt fits within max_throttle
// goes through at the client's pace and its answer leaves at once with
// the throttle (KIP-219, the seed's letter). Once its principal or tenant
// owes more than max_throttle, the stream stops being read until the debt
// is back at the cap: a request larger than the rate times max_throttle
// is held to the rate while it arrives, instead of being charged whole at
// its head and making the next request wait for all of it. So no request
// waits longer than max_throttle at its head or in the silence after its
// answer, and the rate holds whatever the batch size ("a debt larger than
// the cap is paid over several throttles"). What is still owed at its
// last byte is the throttle its answer carries (streamThrottle).

import (
	"time"

	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/kernel"
	"github.com/flexway/flexway/quota"
)

// pace charges n bytes of the streamed Produce just read; past the
// buckets' depth, the stream is muted (q.paced) for what is owed.
func (cl *quotas) pace(n int) {
	if n <= 0 || cl.closed {
		return
	}
	q := cl.quotaOn()
	if q == nil || (q.lim.Client[quota.ProduceBytes] <= 0 && q.lim.Tenant[quota.ProduceBytes] <= 0) {
		return
	}
	now := time.Now()
	q.p.Spend(quota.ProduceBytes, int64(n), now, &q.lim)
	if cl.ps.s == nil || cl.ps.s.Done() {
		return // the stream's end: its answer carries what is owed (streamThrottle)
	}
	capped := q.capped()
	d := q.p.Owed(quota.ProduceBytes, now, &capped)
	if d <= 0 {
		return
	}
	_, s := q.p.Debt(quota.ProduceBytes, now, &q.lim)
	q.paced = true
	cl.env.Series.QuotaPaced.Add(1)
	cl.throttled(quota.ProduceBytes, s, d)
	cl.mute(q, now.Add(d))
}

// pacing reports whether the stream under way waits for its quota.
func (cl *quotas) pacing() bool { return cl.q != nil && cl.q.paced && cl.q.muted }

// paceRoom bounds a splice pass of a streamed Produce by what the
// buckets still hold (RoomMin at least: a pass moves something, and the
// charge past the depth mutes the stream): -1, no bound.
func (cl *quotas) paceRoom() int {
	if cl.pacing() {
		return 0
	}
	q := cl.quotaOn()
	if q == nil {
		return -1
	}
	capped := q.capped()
	left := q.p.Left(quota.ProduceBytes, time.Now(), &capped)
	if left < 0 {
		return -1
	}
	return int(min(max(left, kernel.RoomMin), 1<<30))
}

// streamThrottle gives the answer of a stream that went through whole the
// throttle of what its principal or tenant still owes (capped), counted
// as the others' (quotaPending).
func (cl *quotas) streamThrottle(p *decide.Pending) {
	q := cl.quotaOn()
	if q == nil || p == nil {
		return
	}
	d, s := q.p.Debt(quota.ProduceBytes, time.Now(), &q.lim)
	if ms := throttleMs(d); d > 0 && ms > p.Throttle {
		cl.throttled(quota.ProduceBytes, s, time.Duration(ms-p.Throttle)*time.Millisecond)
		p.Throttle = ms
	}
}

// capped are the limits whose buckets hold max_throttle more than their
// depth: the debt a stream may run before it is paced.
func (q *quotaConn) capped() quota.Limits {
	l := q.lim
	l.Window += l.MaxThrottle
	return l
}
