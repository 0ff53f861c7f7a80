package session

// What a client sent and the gateway has not handled yet (B2, issue 33.1):
// a frame being gathered, requests read while authentication runs or
// while a quota mutes the client, TLS records decrypted ahead. These bytes
// are counted in the connection's, its tenant's and the replica's
// in-flight budgets exactly as answers are (relay.Budget.SyncInbound),
// and the client is not read (conn.Inbound) while they would pass one:
// what it sends meanwhile waits in the kernel.
//
// A frame gathered whole is counted at its full size from its head on
// (its bytes are coming): once counted it always completes, so clients of
// a tenant whose share is full make progress one frame at a time instead
// of each holding a part. Unlike an answer, a request never passes alone:
// a frame that does not fit waits unread; one that can never fit its
// connection's budget is refused (refuseOverBudget). A client that never
// completes the frame it began is closed at idle_timeout (sweep.go: the
// pause is its, not the gateway's). A connection may hold one read of
// gnet's past its budgets, read before its reads could be paused; over
// TLS, with what its handshake's worker was fed and did not read (at most
// hsFeed: feedHandshake).

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/configs"
	"github.com/flexway/flexway/engine/conn"
	"github.com/flexway/flexway/engine/signals"
)

// inboundFloor: bytes read and not handled below it never pause a client
// (a few small requests pipelined).
const inboundFloor = codec.MaxStreamUnit

// gatherMin: a frame gathered whole above it is read into a buffer of its
// own size (conn.Gather).
const gatherMin = 1 << 20

// preAuthInbound is a connection's bound before authentication (it has no
// tenant yet; the replica's share counts it): two requests of the size
// allowed then.
const preAuthInbound = 2 * (codec.SizeLen + int64(configs.UnauthenticatedMaxRequestBytes))

// syncIn counts what the client sent and the gateway has not handled in
// its budgets, and pauses or resumes its reads accordingly. Called at the
// end of each processing of the client, and at each tick while paused.
func (cl *flow) syncIn() {
	if cl.closed || cl.c == nil {
		return
	}
	if cl.auth.tlsHS != nil {
		cl.feedHandshake()
		return
	}
	held := int64(cl.c.Buffered()) // over TLS: records not yet decrypted
	if t := cl.auth.tls; t != nil {
		held += int64(t.rec.Buffered())
	}
	whole := cl.gathering()
	want := max(held, whole)
	if cl.budget.Fits(want, inboundFloor) { // counted
		if whole > gatherMin && cl.auth.tls == nil {
			cl.c.Gather(int(whole)) // one buffer of its size, not gnet's ring doubling
		}
		if cl.c.PausedFor(conn.Inbound) {
			cl.c.Resume(conn.Inbound)
		}
		return
	}
	cl.budget.SyncInbound(held)
	if !cl.c.PausedFor(conn.Inbound) {
		if !cl.client().flow().pause(conn.Inbound) {
			return
		}
		cl.env.Series.ReadWaits.Add(1)
	}
	if !cl.wait.inListed {
		cl.wait.inListed = true
		cl.lp.reading = append(cl.lp.reading, cl.client())
	}
}

// hsFeed bounds what a TLS client sent during its handshake and the
// handshake's worker has not read yet: a client's handshake flight
// (certificates and all) is far below it; what follows it waits in the
// kernel until the handshake ends. As much as a request before
// authentication may be (L3).
const hsFeed = int(configs.UnauthenticatedMaxRequestBytes)

// feedHandshake gives the handshake's worker what the client sent, up to
// hsFeed bytes it has not read; the rest (one read of gnet's at most) waits
// in gnet's buffer, and the client is not read meanwhile. The client is
// listed for the tick, which feeds the worker again as it reads (a
// flight above hsFeed); the handshake's end (tlsDone) reads the rest. Both
// parts count in the connection's budgets (before authentication: its
// own bound and the replica's share).
func (cl *flow) feedHandshake() {
	hs := cl.auth.tlsHS
	if n := min(cl.c.Buffered(), hsFeed-hs.Buffered()); n > 0 {
		if b, err := cl.c.Peek(n); err == nil {
			hs.Feed(b) // copied: gnet's buffer is the loop's
			cl.c.Discard(n)
		}
	}
	cl.budget.SyncInbound(int64(cl.c.Buffered() + hs.Buffered()))
	if cl.c.Buffered() == 0 {
		if cl.c.PausedFor(conn.Inbound) {
			cl.c.Resume(conn.Inbound)
		}
		return
	}
	if !cl.c.PausedFor(conn.Inbound) {
		cl.c.Pause(conn.Inbound)
		cl.env.Series.ReadWaits.Add(1)
	}
	if !cl.wait.inListed {
		cl.wait.inListed = true
		cl.lp.reading = append(cl.lp.reading, cl.client())
	}
}

// gathering returns the whole size of the frame at the head of the input
// when it is not whole yet and is gathered (not streamed); else 0.
func (cl *flow) gathering() int64 {
	if cl.ps.s != nil || cl.client().inBuffered() < codec.SizeLen {
		return 0
	}
	hb, err := cl.client().peek(codec.SizeLen)
	if err != nil {
		return 0
	}
	size := codec.FrameSize(hb)
	total := int64(codec.SizeLen) + int64(size)
	switch {
	case size < 0 || total <= int64(cl.client().inBuffered()):
		return 0
	case cl.auth.state == stAuthed && !cl.ps.gather && int64(size) > cl.env.Tune.StreamMin.Load():
		return 0 // it may be streamed: it holds one read (invariant 26)
	}
	return total
}

// retryReading asks again, at the tick, whether what the paused clients
// sent fits their budgets now.
func (l *Loop) retryReading() {
	if len(l.reading) == 0 {
		return
	}
	list := l.reading
	l.reading = nil
	for _, cl := range list {
		cl.wait.inListed = false
		cl.flow().syncIn()
	}
}

// refuseOverBudget closes a client whose frame at the head, not whole and
// gathered whole, can never fit its connection's in-flight budget
// (max_in_flight_bytes below max_request_bytes): it would be held unread
// for ever. Kafka closes a connection whose request is too large.
func (cl *flow) refuseOverBudget(size int32) {
	if cl.closed || cl.auth.state != stAuthed {
		return
	}
	total := int64(codec.SizeLen) + int64(size)
	if total <= cl.budget.Limit || cl.gathering() == 0 {
		return
	}
	cl.client().close(signals.CloseOverBudget, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "size", size, "max_in_flight_bytes", cl.budget.Limit)
}
