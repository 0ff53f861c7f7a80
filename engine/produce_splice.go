package engine

// The records of a large Produce request, spliced on the loop (issue 11.4).
// A streamed Produce (produce_stream.go) passes its record bytes through
// untouched; read into the loop's buffer and written out again they cost
// two copies per byte, most of the gateway's CPU when producing. When the
// stream is inside a partition's records with at least produceSpliceMin of
// them to come, everything read is consumed, and both sides are in clear
// text, the records already waiting in the client's socket go to the
// broker's with splice(2) through the loop's pipe: socket to pipe, pipe to
// socket, without entering the process.
//
// It all happens on the loop, inside the client's traffic event, with
// non-blocking calls: the loop owns both sockets, and gnet reads the
// client's only when the event returns (what is left in the socket then
// brings another event: epoll is level-triggered). The broker's batch is
// flushed first and its connection must have nothing unsent, so the
// spliced bytes follow everything written before them. At a partition's
// end the next header is taken from the socket too (produceUnit) and the
// next partition's records spliced in turn. A pass ends when the client's
// socket is empty, the request is through or what is left of a partition
// is below produceSpliceMin, or the broker's socket is full: what the pipe
// still holds is then read out and written to the broker connection as
// any other bytes (it waits in its outbound buffer, and the producer's
// pause, flow.go, applies as before). The pipe is empty whenever the loop
// leaves this file.

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/flexway/flexway/codec"
	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// produceSpliceMin: a partition with fewer record bytes left to come than
// this is relayed through the loop's buffer (a pass costs at least two
// system calls). 0 turns it off.
var produceSpliceMin atomic.Int64

func init() { produceSpliceMin.Store(64 << 10) }

// producePipeSize is what the loop's pipe is asked to hold (F_SETPIPE_SZ;
// the kernel's pipe-max-size is 1 MiB by default): one pass moves at most
// this much between two writes to the broker.
const producePipeSize = 1 << 20

// produceSplicedBytes: record bytes spliced to brokers; producePipeOuts:
// the passes that met a full broker socket; produceUnits: the headers
// taken from the socket between two partitions' records (tests, profiles).
var produceSplicedBytes, producePipeOuts, produceUnits atomic.Int64

// testPipeShort (tests): every pass writes half of what the pipe holds to
// the broker's socket, as when it is full, and reads out the rest.
var testPipeShort atomic.Bool

// loopPipe is a loop's pipe for splicing, made at first use.
type loopPipe struct {
	r, w int
	size int
	out  []byte // 64 KiB: what a pass could not write is read out into this; produceUnit's peek
}

// pipe returns the loop's pipe, nil when none can be made (nothing is
// spliced on this loop then; tried again after a while).
func (lp *loop) pipe() *loopPipe {
	if lp.pp != nil {
		return lp.pp
	}
	if lp.ppFailed > 0 {
		lp.ppFailed--
		return nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		lp.ppFailed = 1000
		return nil
	}
	size, err := unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, producePipeSize)
	if err != nil {
		size, err = unix.FcntlInt(uintptr(fds[1]), unix.F_GETPIPE_SZ, 0)
	}
	if err != nil || size <= 0 {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		lp.ppFailed = 1000
		return nil
	}
	lp.pp = &loopPipe{r: fds[0], w: fds[1], size: size, out: make([]byte, 64<<10)}
	return lp.pp
}

// closePipes closes the loops' pipes (the loops returned).
func (e *Engine) closePipes() {
	e.loopsMu.Lock()
	defer e.loopsMu.Unlock()
	for _, l := range e.loops {
		l.closePipe()
	}
}

// closePipe closes the loop's pipe.
func (lp *loop) closePipe() {
	if p := lp.pp; p != nil {
		_ = unix.Close(p.r)
		_ = unix.Close(p.w)
		lp.pp = nil
	}
}

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// spliceProduce moves what the client's socket holds of the current
// partition's records to the broker, when it may (see above); true when
// bytes moved (the stream went on by them). Runs on the loop, with
// nothing of the client buffered and the stream's piece written.
func (cl *client) spliceProduce() bool {
	ps := cl.ps.s
	left := ps.RecordsLeft()
	if min := produceSpliceMin.Load(); min <= 0 || int64(left) < min || ps.Pending() > 0 ||
		cl.tls != nil || cl.tlsHS != nil || cl.closed {
		return false
	}
	u := cl.up
	if u == nil || u.closed || u.c == nil || u.sp != nil || (u.sec != nil && u.sec.tls != nil) {
		return false
	}
	if p, ok := cl.c.(*pausedConn); ok && (p.st != rpAttached || p.live == nil) {
		return false
	}
	if b := &cl.lp.out; b.toBroker.up == u {
		b.toBroker.flush() // what the event wrote before comes first
	}
	if u.closed || u.c.OutboundBuffered() > 0 {
		return false
	}
	cfd, bfd := cl.c.Fd(), u.c.Fd()
	if cfd < 0 || bfd < 0 {
		return false
	}
	pp := cl.lp.pipe()
	if pp == nil {
		return false
	}
	moved := false
	for {
		for left > 0 {
			n, err := unix.Splice(cfd, nil, pp.w, nil, min(left, pp.size), spliceFlags)
			if n <= 0 {
				if err == unix.EINTR {
					continue
				}
				return moved // the socket is empty (EAGAIN), ended or failed: gnet sees which at its next read
			}
			moved = true
			if !ps.SkipRecords(int(n)) { // cannot happen: n is at most RecordsLeft
				cl.pipeOut(int(n), nil)
				cl.streamFailed("records spliced past the partition")
				return false
			}
			left -= int(n)
			produceSplicedBytes.Add(n)
			if rest := pp.pipeTo(int(n), bfd); rest > 0 {
				cl.pipeOut(rest, u) // the broker's socket is full: the rest waits in its outbound buffer
				return moved
			}
		}
		// The partition's records are through: the next partition's
		// header, if whole in the socket, is taken here rather than with
		// a read of the loop's buffer (which would copy the records after
		// it), and its records are spliced in turn.
		if ps.Done() || !cl.produceUnit(pp, cfd, u) {
			return moved
		}
		moved = true
		if left = ps.RecordsLeft(); int64(left) < produceSpliceMin.Load() {
			return moved // a small partition, or the frame's end: through the loop's buffer
		}
	}
}

// produceUnit takes the stream's next unit (a partition's tags and
// header, the topic's tags, the request's) from the client's socket,
// looked at first (MSG_PEEK) then taken for what the stream used, and
// writes its output to the broker's socket. False: not whole there yet,
// the broker's socket did not take it all (the rest waits in its outbound
// buffer: nothing may pass it), or the stream failed (the client closed).
func (cl *client) produceUnit(pp *loopPipe, cfd int, u *upstreamConn) bool {
	ps := cl.ps.s
	head := pp.out[:min(produceUnitPeek, ps.Remaining())]
	k, _, err := unix.Recvfrom(cfd, head, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if k <= 0 || err != nil {
		return false
	}
	used, err := ps.Feed(head[:k])
	if err != nil {
		cl.streamFailed(err.Error())
		return false
	}
	if used == 0 {
		return false // a unit not yet whole
	}
	if sl := ps.Slices(); len(sl) > 0 {
		_, _ = u.c.Writev(sl) // straight to the socket: the batch was flushed, nothing is unsent
	}
	// Take what the stream used (the bytes just looked at: they are there).
	got, err := unix.Read(cfd, pp.out[produceUnitPeek:produceUnitPeek+used])
	if got != used {
		cl.streamFailed(fmt.Sprintf("the socket gave %d of %d bytes it held (%v)", got, used, err))
		return false
	}
	produceUnits.Add(1)
	return !cl.closed && !u.closed && u.c.OutboundBuffered() == 0
}

// produceUnitPeek: what produceUnit looks at; a partition's header and the
// tags around it take some 20 bytes, the rest it sees of the records is
// written from it.
const produceUnitPeek = 256

// streamFailed closes the client whose streamed Produce cannot go on, as
// feedProduce does for a malformed one: its frame is partly written to the
// broker, whose connection closes with it.
func (cl *client) streamFailed(why string) {
	cl.ps.s = nil
	cl.ts.request(codec.KeyProduce, decRefused, causeUnsupported)
	cl.close(closeMalformed, "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "api_key", codec.KeyProduce, "version", cl.ps.version, "error", "streamed Produce: "+why)
}

// pipeTo splices n bytes from the pipe to the socket fd; it returns how
// many are still in the pipe (the socket took no more).
func (pp *loopPipe) pipeTo(n, fd int) int {
	stop := 0
	if testPipeShort.Load() {
		stop = n / 2 // as if the socket took only half
	}
	for n > stop {
		m, err := unix.Splice(pp.r, nil, fd, nil, n-stop, spliceFlags)
		if m > 0 {
			n -= int(m)
			continue
		}
		if err == unix.EINTR {
			continue
		}
		break // full (EAGAIN), or failed: the connection's own write says which
	}
	return n
}

// readOut reads the n bytes left in the pipe and writes them to c as any
// other bytes (gnet, or the stand-in, keeps what its socket does not take;
// a failed connection is closed by its owner's event); with c nil they are
// dropped (nobody is to receive them). An error: the pipe lost bytes it
// held (cannot happen); it is closed, made anew at its next use, and the
// caller closes the connection whose bytes it carried.
func (lp *loop) readOut(n int, c gnet.Conn) error {
	pp := lp.pp
	for n > 0 {
		m, err := unix.Read(pp.r, pp.out[:min(n, len(pp.out))])
		if m <= 0 {
			if err == unix.EINTR {
				continue
			}
			lp.closePipe()
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		n -= m
		if c != nil {
			_, _ = c.Write(pp.out[:m])
		}
	}
	return nil
}

// pipeOut writes what the pipe still holds (n bytes) to the broker
// connection u, or drops it with u nil.
func (cl *client) pipeOut(n int, u *upstreamConn) {
	var c gnet.Conn
	if u != nil {
		producePipeOuts.Add(1)
		if !u.closed && u.c != nil {
			c = u.c
		}
	}
	if err := cl.lp.readOut(n, c); err != nil && u != nil {
		cl.close(closeInternal)
		cl.e.log.Error("kafka connection closed: splice pipe read failed", "cluster", cl.route.cluster.Name, "tenant", cl.ident.Tenant, "error", err)
	}
}
