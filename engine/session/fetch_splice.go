package session

// The records of a Fetch answer, spliced on the loop (issue 11.4, 23.2,
// invariant 41): the counterpart of produce_splice.go. Without it every
// record byte was read into the loop's buffer and written out again.
//
// When a streamed answer (invariant 21) is inside a partition's records
// with at least fetchSpliceMin of them to come, everything gnet read of
// the broker is consumed, the client's connection has nothing unsent, and
// both sides are in clear text, what the broker's socket holds of those
// records goes to the client's by the loop's splice pass (engine/splice),
// inside the broker connection's traffic event. The pass is bounded by
// the client socket's room (invariant 42, as a Produce's by the broker's):
// a client socket without room ends it with nothing left in the pipe, the
// client is above its mark (conn.NoRoom) and its broker is not read until
// it reads, so that the records a stalled reader does not take wait in the
// broker's socket, not in the loop's memory. What a socket took short of
// its room (the pipe's rest) is written to the client's queue.

import (
	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
)

// spliceFetch moves what the broker's socket holds of the current
// partition's records to the client, when it may (see above); true when
// bytes moved (the stream went on by them). Runs on the loop, in the
// broker connection's traffic event, with nothing of it buffered and the
// stream's piece written.
func (u *upstreamConn) spliceFetch() bool {
	fs, cl := u.fs, u.cl
	e := (*fetchEnds)(u)
	if !u.splicesFetch() || fs.Pending() > 0 || cl.closed || u.closed || !cl.c.Attached() {
		return false
	}
	cl.flushOwn(false) // the loop's batches first: they come before
	if cl.closed || u.closed || cl.c.Queued() > 0 || u.c.Buffered() > 0 {
		return false
	}
	bfd, cfd := u.c.Fd(), cl.c.Fd()
	if bfd < 0 || cfd < 0 {
		return false
	}
	pp := cl.lp.pipe()
	if pp == nil {
		return false
	}
	return pp.Pass(fs, e, bfd, cfd)
}

// spliceDetached: the client's socket takes more while its broker is
// paused for it inside spliced records. What the broker's socket holds of
// them is spliced from it, detached, before it is read again: a resume
// would have gnet read (and copy) a buffer of records first. True: the
// client's socket is full again, its broker stays paused.
func (u *upstreamConn) spliceDetached() bool {
	cl := u.cl
	if u.fs == nil || u.fs.Done() || u.c.Buffered() > 0 || !u.c.Detached() {
		return false
	}
	if u.spliceFetch() {
		u.onTraffic() // the answer's end, if the pass reached it; the marks
	}
	return !cl.closed && !u.closed && cl.c.Above()
}

// syncFetchMarks sets the client's marks: 0 while its streamed answer is
// inside records a pass splices (invariant 42), so that the broker is not
// read while the client has bytes unsent: the records wait in the broker's
// socket for a pass bounded by the client's room, not in the client's
// queue (a client that stops reading holds one read of its broker, not the
// high mark). FlowHigh and FlowLow otherwise.
func (u *upstreamConn) syncFetchMarks() {
	cl := u.cl
	if cl.closed || u.closed || cl.c == nil {
		return
	}
	high, low := cl.env.marks()
	if u.splicesFetch() && cl.env.Tune.RoomBound.Load() {
		high, low = 0, 0
	}
	cl.c.SetMarks(high, low)
}

// splicesFetch: the streamed answer is inside records a pass splices
// (Options.FetchSpliceMin or more left), both sides in clear text.
func (u *upstreamConn) splicesFetch() bool {
	fs, cl := u.fs, u.cl
	return fs != nil && !fs.Done() && (*fetchEnds)(u).More(fs.RecordsLeft()) &&
		cl.auth.tls == nil && cl.auth.tlsHS == nil && u.rec == nil
}

// fetchEnds is the broker connection's side of a pass (splice.Ends): its
// answer's records go to its client.
type fetchEnds upstreamConn

// More: left record bytes of a partition are spliced (Options.FetchSpliceMin or more).
func (e *fetchEnds) More(left int) bool {
	min := e.cl.env.Tune.FetchSpliceMin.Load()
	return min > 0 && int64(left) >= min
}

func (e *fetchEnds) Spliced(n int) {
	e.cl.env.Series.FetchSpliced.Add(int64(n))
	if e.c.Detached() {
		e.cl.env.Series.FetchDetached.Add(int64(n))
	}
	e.cl.ts.Fetched(n)
}

// PipeFull: the client's socket is full; what the pipe still holds is
// read out and written to the client's queue (as any answer: the broker
// is not read until the client reads).
func (e *fetchEnds) PipeFull(rest int) {
	cl := e.cl
	cl.env.Series.FetchPipeOuts.Add(1)
	if err := cl.lp.pp.ReadOut(rest, cl.c); err != nil {
		cl.lp.closePipe()
		cl.close(signals.CloseInternal)
		cl.env.Log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "error", err)
		return
	}
	cl.answers().syncOut()
}

// Room bounds a pass by what the client's socket takes (invariant 42).
func (e *fetchEnds) Room(dst int) int { return e.cl.env.room(dst) }

// RoomOut: the client's socket is full. The client is above its mark
// until its socket takes more (conn.NoRoom): its broker is paused, and
// read again (the pass goes on) once the client reads. The write timeout
// counts what the client's socket holds meanwhile (sweep.go).
func (e *fetchEnds) RoomOut() {
	cl := e.cl
	cl.env.Series.FetchRoomOuts.Add(1)
	if !cl.closed {
		cl.c.NoRoom()
	}
}

// UnitOut writes straight to the client's socket: nothing is unsent.
func (e *fetchEnds) UnitOut(sl [][]byte) { _ = e.cl.c.Writev(sl) }

func (e *fetchEnds) UnitTaken(used int) {
	e.cl.ts.Fetched(used)
	e.cl.env.Series.FetchUnits.Add(1)
	e.cl.answers().syncOut()
}

func (e *fetchEnds) DestClear() bool {
	cl := e.cl
	return !cl.closed && !e.closed && cl.c.Queued() == 0
}

// Failed closes the client whose streamed answer cannot go on, as feed
// does for a malformed one.
func (e *fetchEnds) Failed(why string) {
	e.fs, e.fp = nil, nil
	cl := e.cl
	cl.close(signals.CloseAnswerMalformed, "cluster", cl.route.Cluster.Name, "api", codec.KeyFetch, "error", "streamed Fetch: "+why)
}
