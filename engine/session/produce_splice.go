package session

// The records of a large Produce request, spliced on the loop (issue
// 11.4, invariant 39). A streamed Produce (produce_stream.go) passes its
// record bytes through untouched; read into the loop's buffer and written
// out again they cost two copies per byte, most of the gateway's CPU when
// producing. When the stream is inside a partition's records with at least
// produceSpliceMin of them to come, everything read is consumed, and both
// sides are in clear text, the records already waiting in the client's
// socket go to the broker's by the loop's splice pass (engine/splice),
// inside the client's traffic event. The broker's batch is flushed first
// and its connection must have nothing unsent, so the spliced bytes follow
// everything written before them. A pass splices no more than the broker's
// socket takes (its room, invariant 42) and ends before a full one: the
// producer is held (flow.go) with the rest in its own socket, and once the
// broker reads, the rest is spliced from there, even from a socket the
// pause detached. What the broker's socket still leaves in the pipe (the
// room is the kernel's estimate) is written to the broker connection as
// any other bytes.

import (
	"fmt"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
	"github.com/flexway/flexway/engine/splice"
)

// spliceProduce moves what the client's socket holds of the current
// partition's records to the broker, when it may (see above); true when
// bytes moved (the stream went on by them). Runs on the loop, with
// nothing of the client buffered and the stream's piece written.
func (cl *producer) spliceProduce() bool {
	ps := cl.ps.s
	e := (*produceEnds)(cl)
	if !e.More(ps.RecordsLeft()) || ps.Pending() > 0 {
		return false
	}
	pp, cfd, bfd := cl.spliceReady()
	if pp == nil {
		return false
	}
	return pp.Pass(ps, e, cfd, bfd)
}

// spliceReady returns the loop's pipe and both sockets when the client's
// bytes may go to its broker's socket by splice: both in clear text, the
// client read by gnet or detached (paused: its socket is the engine's, and
// what waits in it is spliced before it is enrolled again, rather than
// read into the loop's buffer at its resume, invariant 42), the broker's
// connection with nothing unsent once the loop's batch for it is flushed
// (what was written before comes first). A nil pipe: not now.
func (cl *producer) spliceReady() (pp *splice.Pipe, cfd, bfd int) {
	if cl.auth.tls != nil || cl.auth.tlsHS != nil || cl.closed {
		return nil, 0, 0
	}
	u := cl.up.conn
	if u == nil || u.closed || u.c == nil || u.rec != nil {
		return nil, 0, 0
	}
	if !cl.c.Attached() && !cl.c.Detached() {
		return nil, 0, 0 // a re-enroll under way
	}
	if b := &cl.lp.out; b.toBroker.up == u {
		b.toBroker.flush() // what the event wrote before comes first
	}
	if u.closed || u.c.Queued() > 0 {
		return nil, 0, 0
	}
	cfd, bfd = cl.c.Fd(), u.c.Fd()
	if cfd < 0 || bfd < 0 {
		return nil, 0, 0
	}
	return cl.lp.pipe(), cfd, bfd
}

// spliceChain bounds the requests one spliceOn begins from the socket, so
// that one producer does not keep its loop from the others.
const spliceChain = 8

// spliceOn splices what the client's socket holds of its streamed
// requests while nothing of it is buffered: the rest of the one under way,
// then the requests after it, each begun from its head looked at in the
// socket (spliceNext), so that gnet never reads their first bytes into the
// loop's buffer (a read of 16 KiB each, copied twice). Called at the end of a
// client's event once a stream went through, and before a producer paused
// for its broker is read again (upstreamConn.Below): it stops at the first
// request not to be streamed, a socket emptied, or a broker's socket full.
func (cl *producer) spliceOn() {
	cl.ps.ended = false
	for i := 0; i < spliceChain && !cl.closed && cl.client().inBuffered() == 0; i++ {
		if ps := cl.ps.s; ps != nil {
			if !cl.spliceProduce() || cl.closed || !ps.Done() {
				return
			}
			cl.endStream()
			cl.ps.ended = false
		}
		if !cl.spliceNext() {
			return
		}
		cl.clock.lastActive = nowInstant()
	}
}

// spliceNext begins the client's next request from its head looked at in
// its socket (MSG_PEEK), when it is a Produce to be streamed and not whole
// in what is looked at: its size prefix is taken, then its head unit by
// the pipe's Unit; true: begun (the stream's records are then the
// caller's). Whatever it declines, gnet reads and the client's event handles.
func (cl *producer) spliceNext() bool {
	if cl.ps.s != nil || !cl.ps.large || cl.ps.gather || cl.drain.on || cl.wait.held || cl.auth.reauthing ||
		cl.up.state != upReady || cl.client().quotas().muted() || cl.env.Tune.ProduceSpliceMin.Load() == 0 {
		return false
	}
	pp, cfd, _ := cl.spliceReady()
	if pp == nil {
		return false
	}
	head, err := pp.Head(cfd)
	k := len(head)
	if k == 0 {
		cl.c.NoMore() // the socket is empty: nothing to read on (readon.go)
	}
	if err != nil || k < codec.SizeLen {
		return false
	}
	size := codec.FrameSize(head)
	if size < 0 || int64(size) > int64(cl.snap.Listener.MaxRequestBytes) || codec.SizeLen+int(size) <= k {
		return false // refused, or small: through the loop's buffer
	}
	if !cl.beginStream(size, head) {
		return false
	}
	cl.env.Series.ProduceNexts.Add(1)
	if got, err := pp.Take(cfd, codec.SizeLen); got != codec.SizeLen {
		(*produceEnds)(cl).Failed(fmt.Sprintf("the socket gave %d of the %d bytes it held (%v)", got, codec.SizeLen, err))
		return true
	}
	cl.clock.frameSince = nowInstant()
	pp.Unit(cl.ps.s, (*produceEnds)(cl), cfd) // the head, and the first partition's header
	return true
}

// produceEnds is the client's side of a pass (splice.Ends): its records
// go to its broker.
type produceEnds Client

func (e *produceEnds) More(left int) bool {
	min := e.env.Tune.ProduceSpliceMin.Load()
	return min > 0 && int64(left) >= min
}

func (e *produceEnds) Spliced(n int) {
	e.env.Series.ProduceSpliced.Add(int64(n))
	if e.c.Detached() {
		e.env.Series.ProduceDetached.Add(int64(n))
	}
	(*Client)(e).quotas().pace(n)
}

// PipeFull: the broker's socket is full; what the pipe still holds is read
// out and written to the broker connection as any other bytes (it waits in
// its queue, and the producer's pause, flow.go, applies).
func (e *produceEnds) PipeFull(rest int) {
	cl := (*Client)(e)
	cl.env.Series.ProducePipeOuts.Add(1)
	var w splice.Writer
	if u := cl.up.conn; !u.closed && u.c != nil {
		w = u.c
	}
	if err := cl.lp.pp.ReadOut(rest, w); err != nil {
		cl.lp.closePipe()
		cl.close(signals.CloseInternal)
		cl.env.Log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "error", err)
	}
}

// Room bounds a pass by what the broker's socket takes (invariant 42), so
// that nothing is left in the pipe to be read out and copied: the records
// the broker cannot take yet stay in the client's socket.
// A paced stream's pass is bounded by its quota as well (paceRoom).
func (e *produceEnds) Room(dst int) int {
	r := e.env.room(dst)
	if q := (*Client)(e).quotas().paceRoom(); q >= 0 && (r < 0 || q < r) {
		return q
	}
	return r
}

// RoomOut: the broker's socket is full. The broker connection is above its
// mark until its socket takes more (conn.NoRoom): the client is paused,
// and read again (what waits in its socket spliced first) once it does.
func (e *produceEnds) RoomOut() {
	if (*Client)(e).quotas().pacing() {
		return // its quota's, not its broker's: unmute goes on (quota.go)
	}
	e.env.Series.ProduceRoomOuts.Add(1)
	if u := e.up.conn; u != nil && !u.closed {
		u.c.NoRoom()
	}
}

// UnitOut writes straight to the broker's socket: the batch was flushed, nothing is unsent.
func (e *produceEnds) UnitOut(sl [][]byte) { _ = e.up.conn.c.Writev(sl) }

func (e *produceEnds) UnitTaken(used int) {
	e.env.Series.ProduceUnits.Add(1)
	(*Client)(e).quotas().pace(used)
}

func (e *produceEnds) DestClear() bool {
	u := e.up.conn
	return !e.closed && !u.closed && u.c.Queued() == 0
}

// Failed closes the client whose streamed Produce cannot go on, as
// feedProduce does for a malformed one: its frame is partly written to
// the broker, whose connection closes with it.
func (e *produceEnds) Failed(why string) {
	cl := (*Client)(e)
	cl.producer().dropUnread()
	cl.ps.s, cl.ps.pend = nil, nil
	cl.auditor().count(codec.KeyProduce, signals.Refused, signals.CauseUnsupported, 0)
	cl.close(signals.CloseMalformed, "cluster", cl.route.Cluster.Name, "tenant", cl.auth.ident.Tenant, "api_key", codec.KeyProduce, "version", cl.ps.version, "error", "streamed Produce: "+why)
}

// dropUnread reads and drops what the client's socket holds (up to 1 MiB)
// before a close for a streamed request that cannot go on: the rest of the
// frame would otherwise be unread at the close, and a socket closed with
// bytes unread sends a reset, where the client is owed an orderly close
// (the stream may fail from a peek at the socket, or from a detached one,
// where gnet had not read the rest).
func (cl *producer) dropUnread() {
	pp := cl.lp.pp
	if cl.auth.tls != nil || cl.closed || pp == nil {
		return
	}
	pp.Drain(cl.c.Fd())
}
