package session

// Flow control (issue 23.1): one mechanism, engine/conn. Every socket, a
// client's and its broker connection's, has a conn.Conn from OnOpen on,
// with one write queue and its two marks; the pair reacts to the marks of
// each side with a read pause of the other, counted by reason:
//
//   - The broker is not read until the client reads: the client's queue
//     (what its socket did not take) passes flowHigh, its broker connection
//     is paused (conn.PeerFull); back to flowLow, it is resumed.
//   - The client is not read until its broker takes: the broker
//     connection's queue passes flowHigh, the client is paused; back to
//     flowLow, resumed. What the client sends meanwhile waits in the
//     kernel, as it would before a slow broker without the gateway. While
//     the client's Produce records are spliced (invariant 39) the marks are
//     0: it is paused at the first byte its broker did not take, and at a
//     socket without room (NoRoom, invariant 42), and what waits in its
//     socket is spliced before it is read again (invariant 40).
//   - A client whose head request waits on the gateway (its budget, its
//     broker connection's dial) is not read either (conn.Budget,
//     conn.Dial): what it pipelines waits in the kernel, not in the loop's
//     buffer. One muted by a quota is read, not handled, up to MuteInPlace,
//     then paused (conn.Quota).
//
// The resume is prompt: the loop's watcher tells when a socket takes more,
// in microseconds, not at a tick.

import (
	"time"

	"github.com/flexway/flexway/engine/conn"
)

// pause pauses the client's reads for r; false when it cannot be paused
// now (closed, or in its TLS handshake: a worker reads what the loop feeds).
func (cl *flow) pause(r conn.Reason) bool {
	if cl.closed || cl.auth.tlsHS != nil {
		return false
	}
	cl.c.Pause(r)
	return true
}

// unpause drops r from the client's reasons.
func (cl *flow) unpause(r conn.Reason) {
	if !cl.closed {
		cl.c.Resume(r)
	}
}

// syncReads pauses the client's reads while its head request waits on
// the gateway and resumes them when it goes on (at the end of process).
func (cl *flow) syncReads() {
	cl.client().flow().syncIn()
	if cl.closed || cl.auth.state != stAuthed {
		return
	}
	cl.syncReason(conn.Budget, cl.wait.held)
	cl.syncReason(conn.Dial, cl.up.state == upDialing)
}

func (cl *flow) syncReason(r conn.Reason, want bool) {
	switch {
	case want && !cl.c.PausedFor(r):
		cl.pause(r)
	case !want && cl.c.PausedFor(r):
		cl.c.Resume(r)
	}
}

// The client's side of the mechanism (conn.Owner).

// Traffic: the client sent bytes.
func (cl *Client) Traffic() { cl.onTraffic() }

// Closed: the client's socket ended.
func (cl *Client) Closed(err error) {
	// Its place under max_connections is given back after the release
	// (the gauge never counts the next one before this one is gone), and
	// even if onClose panics.
	defer cl.env.FreeSlot()
	cl.onClose(err)
}

// Above: the client has more than flowHigh bytes unread; its broker is
// not read until it reads.
func (cl *Client) Above() {
	u := cl.up.conn
	if cl.closed || u == nil || u.closed || u.c == nil {
		return
	}
	cl.env.Series.BrokerPauses.Add(1)
	u.flowSince = nowInstant()
	u.c.Pause(conn.PeerFull)
}

// Below: the client read down to flowLow; its broker is read again.
func (cl *Client) Below() {
	u := cl.up.conn
	if u == nil || u.c == nil || !u.c.PausedFor(conn.PeerFull) {
		return
	}
	cl.env.Series.pausedFor(u.flowSince.age(time.Now()))
	if u.closed || u.spliceDetached() || u.closed { // the pass may close it
		return // closed, or held on: the client's socket is full again
	}
	u.c.Resume(conn.PeerFull)
}

// Drained: the client's socket took bytes (the watcher, or the tick):
// its unread bytes are counted again, a held request retried.
func (cl *Client) Drained() {
	if cl.closed {
		return
	}
	cl.answers().syncOut()
	if cl.wait.held {
		cl.resume()
	}
}

// The broker connection's side (conn.Owner).

// Traffic: the broker sent bytes.
func (u *upstreamConn) Traffic() { u.onTraffic() }

// Closed: the broker connection ended.
func (u *upstreamConn) Closed(err error) { u.onClose(err) }

// Above: the broker has more than its high mark unsent (or no room for a
// splice): its client is not read until it takes.
func (u *upstreamConn) Above() {
	cl := u.cl
	if u.closed || cl.closed || cl.c.PausedFor(conn.PeerFull) {
		return
	}
	if cl.flow().pause(conn.PeerFull) {
		cl.env.Series.ClientPauses.Add(1)
	}
}

// Below: the broker took what it held. A producer whose records are
// spliced has what waits in its socket spliced first (spliceOn), and is
// read again only if the broker took that too.
func (u *upstreamConn) Below() {
	cl := u.cl
	if cl.closed || !cl.c.PausedFor(conn.PeerFull) {
		return
	}
	if !u.closed && cl.flow().splicesProduce() && cl.inBuffered() == 0 {
		cl.producer().spliceOn()
		if cl.closed || u.closed || u.c.Above() {
			return // held on: the broker's socket is full again
		}
	}
	cl.c.Resume(conn.PeerFull)
}

// Drained: nothing waits on a broker's socket taking more beyond its marks.
func (u *upstreamConn) Drained() {}

// syncMarks sets the broker connection's marks: 0 while the client's
// Produce records are spliced (the producer is paused at the first byte
// its broker did not take, invariant 40), flowHigh and flowLow otherwise.
func (cl *flow) syncMarks() {
	u := cl.up.conn
	if u == nil || u.c == nil || u.closed {
		return
	}
	high, low := cl.env.marks()
	if cl.splicesProduce() {
		high, low = 0, 0
	}
	u.c.SetMarks(high, low)
}

// splicesProduce: the client is inside a streamed Produce, or its last
// Produce was one, whose records are spliced once its broker's socket has
// nothing unsent (invariant 39).
func (cl *flow) splicesProduce() bool {
	u := cl.up.conn
	return (cl.ps.s != nil || cl.ps.large) && cl.env.Tune.ProduceSpliceMin.Load() > 0 && cl.auth.tls == nil && u != nil && u.rec == nil
}
