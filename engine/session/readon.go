package session

// Reading on (issue 35.1, engine/conn/readon.go): gnet's read of a socket
// is small, so that a large Produce's records (a large Fetch answer's)
// stay in the socket for the splice pass; where a frame that read left
// incomplete is not spliced (small partitions: the Java producer's
// pipelined requests of 16 KiB batches), the owner reads on from the
// socket in one call rather than waiting for gnet's next read, event by
// event. A client reads on within its budgets only (taken before the
// read: a read on never passes one); a broker connection within its
// client's high mark.

import "github.com/flexway/flexway/relay"

// readOn reads on from the client's socket where process waits for bytes
// the socket may already hold; true: bytes came.
func (cl *Client) readOn() bool {
	if cl.closed || cl.c == nil || cl.auth.tls != nil || cl.auth.tlsHS != nil || cl.auth.state != stAuthed ||
		cl.auth.reauthing || cl.wait.held || cl.drain.on || cl.up.state != upReady ||
		cl.quotas().muted() || cl.quotas().pacing() || !cl.c.MayReadOn() {
		return false
	}
	if ps := cl.ps.s; ps != nil {
		if left := ps.RecordsLeft(); left == 0 || (*produceEnds)(cl).More(left) {
			return false // its records are spliced, or its next unit is looked at in the socket
		}
	}
	return readOnWithin(&cl.budget, cl.c.Buffered(), cl.c.ReadOn)
}

// readOnWithin reads on at most what b may hold beyond held, taken in its
// shares first and counted as it is after.
func readOnWithin(b *relay.Budget, held int, read func(int) int) bool {
	before, h := b.Inbound, int64(held)
	room := b.InboundRoom(h)
	if room <= 0 || !b.Fits(h+room, 0) {
		return false
	}
	n := read(int(room))
	b.SyncInbound(max(before, h+int64(n)))
	return n > 0
}

// readOn reads on from the broker's socket where onTraffic waits for
// bytes of an answer not spliced; true: bytes came.
func (u *upstreamConn) readOn() bool {
	cl := u.cl
	if u.closed || cl.closed || u.rec != nil || u.c == nil || cl.c == nil || !u.c.MayReadOn() {
		return false
	}
	if fs := u.fs; fs != nil {
		if left := fs.RecordsLeft(); left == 0 || (*fetchEnds)(u).More(left) {
			return false
		}
	}
	high, _ := cl.env.marks()
	return u.c.ReadOn(high-cl.c.Queued()) > 0 // the client's queue stays within one read of its mark
}
