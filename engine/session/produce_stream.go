package session

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/decide"
	"github.com/flexway/flexway/engine/signals"
)

// produceStream is a client's large Produce request relayed to its broker
// connection as it arrives (cut-through, invariant 26).
type produceStream struct {
	// s is the stream under way (nil: none): while it is, nothing else of
	// the client is processed.
	s *codec.ProduceRequestStream
	// carry is what the last Feed left unconsumed (a partition header not
	// yet whole), which gnet keeps in its ring between reads.
	carry   int
	version int16
	// gather: the frame at the head of the buffer is not streamed; it is
	// gathered whole and handled as any other (cleared once it is).
	gather bool
	// large: the client's last Produce was streamed (splicesProduce)
	large bool
	// ended: a stream went through since the last look at the socket
	// for the next request's head (spliceOn)
	ended bool
	// pend: the stream's answer owed, until its last byte (streamThrottle)
	pend *decide.Pending
}

// beginProduce starts relaying the frame of size bytes at the head of the
// buffer (n bytes of it buffered, not whole) as it arrives, if it is a
// Produce the session streams; false: it waits until it is whole (another
// API, a Produce not streamed), or until more of its head has come, or for
// the broker connection or the budget, or the client was closed.
func (cl *producer) beginProduce(size int32, n int) bool {
	b, err := cl.client().peek(min(n, codec.SizeLen+codec.MaxStreamUnit))
	if err != nil || !cl.beginStream(size, b) {
		return false
	}
	cl.client().discard(codec.SizeLen)
	return true
}

// beginStream begins the stream of the frame of size bytes whose first
// bytes, its size prefix included, are head (from the loop's buffer, or
// looked at in the socket: spliceNext); true: begun, and the caller takes
// the size prefix. Nothing of head is kept.
func (cl *producer) beginStream(size int32, head []byte) bool {
	if cl.ps.gather || cl.auth.state != stAuthed || cl.auth.legacySASL || int64(size) <= cl.env.Tune.StreamMin.Load() {
		return false
	}
	if q := cl.snap.Listener.Quotas; q != nil && q.Quota != "" && cl.env.Quotas.Counters != nil {
		// The tenant's day/month budget (budget_quota.go) judges the
		// whole frame: its Produce requests are gathered.
		cl.ps.gather = true
		return false
	}
	prefix := head[codec.SizeLen:]
	h, err := codec.ParseRequestHeader(prefix)
	switch {
	case err == codec.ErrCodecShort && len(head) < codec.SizeLen+codec.MaxStreamUnit:
		return false // more of the header to come
	case err != nil || h.Key != codec.KeyProduce:
		cl.ps.gather = true
		return false
	}
	if !cl.client().authn().checkSession() || cl.client().quotas().quotaHold(h.Key, 0) { // its bytes are charged as they come (pace)
		return false // closed, or its principal owes: it waits, muted (quota.go)
	}
	p := cl.queue.Get()
	ps, err := cl.sess.ProduceStream(&h, prefix, int(size), cl.up.corr+1, p)
	if err != nil {
		cl.queue.Put(p)
		cl.ps.gather = err != codec.ErrCodecShort // else more of the head to come
		return false
	}
	// The broker connection is enrolled and the budget allows the answer
	// before the first byte is written; else the frame waits, and the
	// stream is begun again when the client is processed again.
	if _, ok := (inFlightStage{}).grant(cl.client(), h.Key); !ok {
		cl.queue.Put(p) // while it waits, the client is not read (syncReads, flow.go)
		return false
	}
	cl.client().quotas().quotaGate(&h, 0) // spent by quotaHold (never true for a Produce)
	cl.client().quotas().quotaPending(p)  // its answer carries the throttle; the silence begins as it leaves
	cl.up.corr++
	cl.ps.s, cl.ps.carry, cl.ps.version, cl.ps.large, cl.ps.pend = ps, 0, h.Version, true, p
	cl.client().flow().syncMarks() // its records are spliced: paused at its broker's first byte unsent
	// Counted as its answer leaves (requestDone), with the throttle it
	// carries (what it owed at its end too: streamThrottle).
	cl.client().auditor().countRequest(h.Key, p, decide.Forward)
	cl.client().answers().owe(p)
	cl.ts.Produced(int(size))
	return true
}

// feedProduce relays what the buffer holds of the streamed request:
// rewritten, written to the broker, then released. false: more bytes are
// needed, or the client was closed. A Feed error closes the client as a
// malformed request: its frame is partly written to the broker, whose
// connection closes with it.
func (cl *producer) feedProduce() bool {
	ps := cl.ps.s
	want := min(cl.client().inBuffered(), ps.Remaining())
	if want == 0 {
		return false
	}
	lim := want
	if cl.ps.carry > 0 {
		lim = min(want, cl.ps.carry+streamPeek)
	}
	for {
		chunk, err := cl.client().peek(lim)
		if err != nil {
			return false
		}
		used, err := ps.Feed(chunk)
		if err != nil {
			cl.ps.s, cl.ps.pend = nil, nil
			cl.client().auditor().count(codec.KeyProduce, signals.Refused, signals.CauseUnsupported, 0)
			cl.client().close(signals.CloseMalformed, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "api_key", codec.KeyProduce, "version", cl.ps.version, "error", "streamed Produce: "+err.Error())
			return false
		}
		if sl := ps.Slices(); len(sl) > 0 {
			cl.up.conn.write(sl)
		}
		if used > 0 { // gnet's Discard(0) discards everything
			cl.client().discard(used)
			cl.client().quotas().pace(used)
		}
		if cl.closed {
			return false
		}
		if !ps.Done() && cl.client().inBuffered() == 0 && !cl.client().quotas().pacing() {
			// The records (and the headers between them) still in the
			// socket go to the broker without the loop's buffer.
			cl.spliceProduce()
			if cl.closed || cl.ps.s == nil {
				return false
			}
		}
		if ps.Done() {
			cl.endStream()
			return true
		}
		if used > 0 { // feed again: the buffer may hold more
			cl.ps.carry = len(chunk) - used
			return true
		}
		if lim == want { // a unit not yet whole: wait for the socket
			cl.ps.carry = want
			return false
		}
		lim = min(want, 2*lim)
	}
}

// endStream: the streamed request went through whole.
func (cl *producer) endStream() {
	cl.client().quotas().streamThrottle(cl.ps.pend)
	cl.ps.s, cl.ps.carry, cl.ps.ended, cl.ps.pend = nil, 0, true, nil
	cl.client().auditor().nextRequest()
}

// streamingProduce: a request is relayed to the broker half sent; the
// broker connection cannot carry anything else of the client's.
func (cl *producer) streamingProduce() bool { return cl.ps.s != nil }
