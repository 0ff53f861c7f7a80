package engine

// The records of a Fetch answer, spliced on the loop (issue 11.4,
// invariant 41): the counterpart of produce_splice.go for answers whose
// partitions are too small for a splice session (splice.go: a goroutine on
// dups of both sockets, worth its set-up from spliceMin on). With the
// default fetch sizes of most clients (1 MiB a partition) every record
// byte was read into the loop's buffer and written out again.
//
// When a streamed answer (invariant 21) is inside a partition's records
// with at least fetchSpliceMin of them to come, everything gnet read of
// the broker is consumed, the client's connection has nothing unsent, and
// both sides are in clear text, what the broker's socket holds of those
// records goes to the client's by the loop's splice pass (splice_pass.go),
// inside the broker connection's traffic event. A full client socket ends
// the pass: what the pipe still holds is written to the client's stand-in,
// and the broker is not read until the client reads, as for any answer.

import (
	"sync/atomic"

	"github.com/flexway/flexway/codec"
	"github.com/flexway/flexway/engine/signals"
)

// fetchSpliceMin: a partition with fewer record bytes left to come than
// this is relayed through the loop's buffer. 0 turns it off.
var fetchSpliceMin atomic.Int64

func init() { fetchSpliceMin.Store(64 << 10) }

// fetchSplicedBytes: record bytes spliced to clients on the loop;
// fetchPipeOuts: the passes that met a full client socket; fetchUnits: the
// units taken from the broker's socket between two partitions' records.
var fetchSplicedBytes, fetchPipeOuts, fetchUnits atomic.Int64

// spliceFetch moves what the broker's socket holds of the current
// partition's records to the client, when it may (see above); true when
// bytes moved (the stream went on by them). Runs on the loop, in the
// broker connection's traffic event, with nothing of it buffered and the
// stream's piece written.
func (u *upstreamConn) spliceFetch() bool {
	fs, cl := u.fs, u.cl
	if !u.spliceMore(fs.RecordsLeft()) || fs.Pending() > 0 || cl.closed || u.closed || u.sp != nil ||
		cl.tls != nil || cl.tlsHS != nil || (u.sec != nil && u.sec.tls != nil) {
		return false
	}
	if p, ok := u.c.(*pausedConn); ok && (p.st != rpAttached || p.live == nil) {
		return false
	}
	cp, ok := cl.c.(*pausedConn)
	if ok && (cp.st != rpAttached || cp.live == nil || cp.sp != nil) {
		return false
	}
	cl.flushOwn(false) // the loop's batches first: they come before
	if cl.closed || u.closed || cl.c.OutboundBuffered() > 0 || u.c.InboundBuffered() > 0 {
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
	return cl.lp.splicePass(fs, u, pp, bfd, cfd)
}

// The broker connection's side of a pass (spliceEnds): its answer's
// records go to its client.

// spliceMore: left record bytes of a partition are spliced on the loop
// (at least fetchSpliceMin, and below what a session takes).
func (u *upstreamConn) spliceMore(left int) bool {
	min, session := fetchSpliceMin.Load(), spliceMin.Load()
	return min > 0 && int64(left) >= min && (session <= 0 || int64(left) < session)
}

func (u *upstreamConn) spliced(n int) {
	fetchSplicedBytes.Add(int64(n))
	u.cl.ts.Fetched(n)
}

// pipeFull: the client's socket is full; what the pipe still holds is
// read out and written to the client's stand-in (its queue and the drain
// watcher, as for any answer: the broker is not read until the client reads).
func (u *upstreamConn) pipeFull(rest int) {
	cl := u.cl
	fetchPipeOuts.Add(1)
	if err := cl.lp.readOut(rest, cl.c); err != nil {
		cl.close(signals.CloseInternal)
		cl.e.log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "error", err)
		return
	}
	cl.syncOut()
}

// room: an answer's records are not bounded by the client's socket (what it
// does not take waits in the client's queue, counted against its budget).
func (u *upstreamConn) room(int) int { return -1 }

func (u *upstreamConn) roomOut() {}

// unitOut writes straight to the client's socket: nothing is unsent.
func (u *upstreamConn) unitOut(sl [][]byte) { _, _ = u.cl.c.Writev(sl) }

func (u *upstreamConn) unitTaken(used int) {
	u.cl.ts.Fetched(used)
	fetchUnits.Add(1)
	u.cl.syncOut()
}

func (u *upstreamConn) destClear() bool {
	cl := u.cl
	return !cl.closed && !u.closed && cl.c.OutboundBuffered() == 0
}

// streamFailed closes the client whose streamed answer cannot go on, as
// feed does for a malformed one.
func (u *upstreamConn) streamFailed(why string) {
	u.fs, u.fp = nil, nil
	cl := u.cl
	cl.close(signals.CloseAnswerMalformed, "cluster", cl.route.cluster.Name, "api", codec.KeyFetch, "error", "streamed Fetch: "+why)
}
