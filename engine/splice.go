package engine

// The records of a large Fetch answer, spliced (issue 11.4). Between the
// headers the gateway rewrites, a partition's records pass through
// untouched: read into the loop's buffer and written out again, they cost
// two copies per byte, most of the relay's CPU. When the stream is inside
// records with at least spliceMin of them to come, and both sides are in
// clear text, the rest of that partition's records go from the broker's
// socket to the client's with splice(2) through a pipe (Go's
// TCPConn.ReadFrom of a LimitedReader of a TCPConn): they never enter the
// process. The broker connection is paused meanwhile (whySplice: gnet does
// not read it; the session does); the client stays read by gnet, and what
// the loop writes to it meanwhile waits in its stand-in's queue, after the
// spliced bytes. At the end, on the loop, the stream counts the bytes as
// relayed (FetchResponseStream.SkipRecords) and the broker connection is
// read again by gnet for what follows (the next partition's header...).
//
// A session is one goroutine, on dups of the two sockets (net.FileConn:
// Go's poller waits for them; gnet's epoll keeps the client's). Its
// progress is atomic; everything else is the loop's. What the client's
// stand-in had queued when the session began is handed to it and written
// first (the order holds). A close of either side, or the engine's stop,
// aborts it: the dups are closed, which ends the goroutine's calls.

import (
	"context"
	"io"
	"net"
	"sync/atomic"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
)

// spliceMin: a partition with fewer record bytes left than this is not
// spliced (a session costs two dups, two pollers' registrations and a
// re-enroll of the broker's socket). 0 turns splicing off.
var spliceMin atomic.Int64

// spliceStep bounds one ReadFrom of a session: its progress (what the
// write timeout sees) is counted per step.
const spliceStep = 1 << 20

func init() { spliceMin.Store(1 << 20) }

// spliceRuns, splicedBytes: the sessions begun and the record bytes they
// moved (tests, the profile run).
var spliceRuns, splicedBytes atomic.Int64

// spliceRun is one session: n record bytes from the broker to the client.
type spliceRun struct {
	u      *upstreamConn
	cp, bp *pausedConn // the client's and the broker's stand-ins
	el     gnet.EventLoop
	bc, cc *net.TCPConn // dups of the broker's and the client's sockets
	pre    kernel.Queue // the client's queue when the session began: written first
	n      int64

	preLeft atomic.Int64 // bytes of pre not written yet
	moved   atomic.Int64 // record bytes written to the client
	dead    bool         // on the loop: ended or aborted
}

// unsent is what the session still owes the client: its queue's bytes and
// the records not written yet (in the kernel: the broker's socket, the pipe).
func (s *spliceRun) unsent() int {
	return int(s.preLeft.Load() + s.n - s.moved.Load())
}

// spliceCheck runs at the end of a broker connection's traffic: if the
// stream is inside records with spliceMin or more to come, all that was
// read is consumed and both sides are in clear text, the rest of the
// partition's records are spliced.
func (u *upstreamConn) spliceCheck() {
	cl := u.cl
	fs := u.fs
	if fs == nil || u.sp != nil || cl.closed || u.closed || u.c == nil || cl.tls != nil || cl.tlsHS != nil ||
		(u.sec != nil && u.sec.tls != nil) {
		return
	}
	left := fs.RecordsLeft()
	if min := spliceMin.Load(); min <= 0 || int64(left) < min || fs.Pending() > 0 || u.c.InboundBuffered() > 0 {
		return
	}
	cp, ok := cl.c.(*pausedConn)
	if !ok || cp.st == rpResuming || cp.st == rpClosed || cp.sp != nil {
		return
	}
	cl.flushOwn(false) // the loop's batches first: they come before
	if cl.closed || u.closed || (cp.live != nil && cp.live.OutboundBuffered() > 0) {
		return
	}
	bp := cl.e.holdReads(u.c, whySplice)
	u.c = bp
	if bp.st != rpPaused || bp.stashed() > 0 {
		bp.releaseReads(whySplice)
		return
	}
	s, err := newSplice(u, cp, bp, left)
	if err != nil {
		bp.releaseReads(whySplice)
		return
	}
	u.sp, cp.sp, bp.sp = s, s, s
	cp.disarm()
	spliceRuns.Add(1)
	go s.run()
}

func newSplice(u *upstreamConn, cp, bp *pausedConn, n int) (*spliceRun, error) {
	cfd, err := cp.sockFd()
	if err != nil {
		return nil, err
	}
	bc, err := kernel.FileTCP(bp.fd)
	if err != nil {
		return nil, err
	}
	cc, err := kernel.FileTCP(cfd)
	if err != nil {
		_ = bc.Close()
		return nil, err
	}
	s := &spliceRun{u: u, cp: cp, bp: bp, el: bp.el, bc: bc, cc: cc, n: int64(n)}
	s.pre = cp.q.Take() // its chunks are the session's now
	s.preLeft.Store(int64(s.pre.Len()))
	return s, nil
}

// run is the session's goroutine: the queued bytes, then the records.
func (s *spliceRun) run() {
	var err error
	s.pre.Each(func(p []byte) bool {
		_, err = s.cc.Write(p)
		s.preLeft.Add(-int64(len(p)))
		return err == nil
	})
	s.pre.Reset()
	for err == nil && s.moved.Load() < s.n {
		step := min(s.n-s.moved.Load(), spliceStep)
		var m int64
		m, err = s.cc.ReadFrom(&io.LimitedReader{R: s.bc, N: step})
		s.moved.Add(m)
		if err == nil && m < step {
			err = io.ErrUnexpectedEOF // the broker closed: gnet sees it once resumed
		}
	}
	_ = s.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		defer s.u.cl.e.recoverConn(nil, "splice")
		s.done()
		return nil
	}))
}

// done runs on the loop when the goroutine is through: the records moved
// are counted as relayed, the client's queue goes on, and the broker's
// socket is read by gnet again (an error on either side shows there).
func (s *spliceRun) done() {
	if s.dead {
		return
	}
	s.end()
	u, cl := s.u, s.u.cl
	moved := int(s.moved.Load())
	if u.fs != nil && moved > 0 {
		u.fs.SkipRecords(moved)
		cl.ts.Fetched(moved)
		splicedBytes.Add(int64(moved))
	}
	if !cl.closed {
		s.cp.flushOut()
		cl.syncOut()
	}
	if !u.closed && s.bp.st != rpClosed {
		s.bp.releaseReads(whySplice)
	}
	if u.fs != nil && u.fs.Remaining() == 0 && !cl.closed && !u.closed {
		u.onTraffic() // the answer ends with the records: its last bytes are the gateway's own
	}
}

// end closes the session's sockets (the goroutine's calls return) and
// forgets it. On the loop.
func (s *spliceRun) end() {
	s.dead = true
	_ = s.bc.Close()
	_ = s.cc.Close()
	if s.u.sp == s {
		s.u.sp = nil
	}
	if s.cp.sp == s {
		s.cp.sp = nil
	}
	if s.bp.sp == s {
		s.bp.sp = nil
	}
}

// abort ends a session because p (one of its stand-ins) closes. The
// client's answer cannot be finished: if the broker's side survives, it
// is read again by gnet (the stream's state is off by the pipe's bytes:
// its connection is not reused for this answer; the client is gone).
func (p *pausedConn) abortSplice() {
	s := p.sp
	if s == nil || s.dead {
		return
	}
	s.end()
	if p != s.bp && s.bp.st == rpPaused {
		s.bp.releaseReads(whySplice)
	}
}

// unsent is what the client has not read yet: its stand-in's queue, and
// what a splice session still owes it (the write timeout's measure: a
// client that stops reading mid-session is closed as any other).
func (cl *client) unsent() int {
	n := cl.c.OutboundBuffered()
	if p, ok := cl.c.(*pausedConn); ok && p.sp != nil && p == p.sp.cp {
		n += int(p.sp.n - p.sp.moved.Load())
	}
	return n
}
