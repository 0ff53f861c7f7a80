package engine

// The records of a Fetch answer, spliced on the loop (issue 11.4): the
// counterpart of produce_splice.go for answers whose partitions are too
// small for a splice session (splice.go: a goroutine on dups of both
// sockets, worth its set-up from spliceMin on). With the default fetch
// sizes of most clients (1 MiB a partition) every record byte was read
// into the loop's buffer and written out again.
//
// When a streamed answer (invariant 21) is inside a partition's records
// with at least fetchSpliceMin of them to come, everything gnet read of
// the broker is consumed, the client's connection has nothing unsent, and
// both sides are in clear text, what the broker's socket holds of those
// records goes to the client's through the loop's pipe, inside the broker
// connection's traffic event, with non-blocking calls; at a partition's
// end the next unit (the partition's tags and the next header) is taken
// from the socket as well (fetchUnit), and the next partition's records
// spliced in turn. A pass ends when the broker's socket is empty, the
// answer is through or what is left of a partition is below the bound or
// the session's, or the client's socket is full: what the pipe still
// holds is then read out and written to the client's stand-in (its queue
// and the drain watcher, flow.go, as for any answer: the broker is not
// read until the client reads). The pipe is empty whenever the loop
// leaves this file.

import (
	"fmt"
	"sync/atomic"

	"github.com/flexway/flexway/codec"
	"golang.org/x/sys/unix"
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
	left := fs.RecordsLeft()
	if !u.mayLoopSplice(left) || fs.Pending() > 0 || cl.closed || u.closed || u.sp != nil ||
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
	moved := false
	for {
		for left > 0 {
			n, err := unix.Splice(bfd, nil, pp.w, nil, min(left, pp.size), spliceFlags)
			if n <= 0 {
				if err == unix.EINTR {
					continue
				}
				return moved // the socket is empty (EAGAIN), ended or failed: gnet sees which at its next read
			}
			moved = true
			if !fs.SkipRecords(int(n)) { // cannot happen: n is at most RecordsLeft
				_ = cl.lp.readOut(int(n), nil)
				u.streamFailed("records spliced past the partition")
				return false
			}
			left -= int(n)
			fetchSplicedBytes.Add(n)
			cl.ts.fetched(int(n))
			if rest := pp.pipeTo(int(n), cfd); rest > 0 {
				u.pipeOut(rest) // the client's socket is full: the rest waits in its queue
				return moved
			}
		}
		if fs.Done() || !u.fetchUnit(pp, bfd) {
			return moved
		}
		moved = true
		if left = fs.RecordsLeft(); !u.mayLoopSplice(left) {
			return moved // a small partition, the session's, or the answer's end: through the loop's buffer
		}
	}
}

// mayLoopSplice: left record bytes of a partition are spliced on the loop
// (at least fetchSpliceMin, and below what a session takes).
func (u *upstreamConn) mayLoopSplice(left int) bool {
	min, session := fetchSpliceMin.Load(), spliceMin.Load()
	return min > 0 && int64(left) >= min && (session <= 0 || int64(left) < session)
}

// fetchUnit takes the stream's next unit from the broker's socket, looked
// at first (MSG_PEEK) then taken for what the stream used, and writes its
// output to the client's socket. False: not whole there yet, the client's
// socket did not take it all (the rest waits in its queue: nothing may
// pass it), or the stream failed (the client closed).
func (u *upstreamConn) fetchUnit(pp *loopPipe, bfd int) bool {
	fs, cl := u.fs, u.cl
	head := pp.out[:min(produceUnitPeek, fs.Remaining())]
	if len(head) == 0 {
		return false // the answer's own last bytes: feed ends it
	}
	k, _, err := unix.Recvfrom(bfd, head, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if k <= 0 || err != nil {
		return false
	}
	used, err := fs.Feed(head[:k])
	if err != nil {
		u.streamFailed(err.Error())
		return false
	}
	if used == 0 {
		return false // a unit not yet whole
	}
	if sl := fs.Slices(); len(sl) > 0 {
		_, _ = cl.c.Writev(sl) // straight to the socket: nothing is unsent
	}
	got, err := unix.Read(bfd, pp.out[produceUnitPeek:produceUnitPeek+used])
	if got != used {
		u.streamFailed(fmt.Sprintf("the socket gave %d of %d bytes it held (%v)", got, used, err))
		return false
	}
	cl.ts.fetched(used)
	fetchUnits.Add(1)
	cl.syncOut()
	return !cl.closed && !u.closed && !fs.Done() && cl.c.OutboundBuffered() == 0
}

// pipeOut writes what the pipe still holds (n bytes) to the client.
func (u *upstreamConn) pipeOut(n int) {
	cl := u.cl
	fetchPipeOuts.Add(1)
	if err := cl.lp.readOut(n, cl.c); err != nil {
		cl.close(closeInternal)
		cl.e.log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "error", err)
		return
	}
	cl.syncOut()
}

// streamFailed closes the client whose streamed answer cannot go on, as
// feed does for a malformed one.
func (u *upstreamConn) streamFailed(why string) {
	u.fs, u.fp = nil, nil
	cl := u.cl
	cl.close(closeAnswerMalformed, "cluster", cl.route.cluster.Name, "api", codec.KeyFetch, "error", "streamed Fetch: "+why)
}
