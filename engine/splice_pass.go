package engine

// The loop's splice pass (issue 11.4), shared by both directions: the
// records of a streamed Produce request from the client's socket to the
// broker's (produce_splice.go, invariant 39) and those of a streamed Fetch
// answer from the broker's socket to the client's (fetch_splice.go,
// invariant 41). A pass runs on the loop, inside the source connection's
// traffic event, with non-blocking calls: the loop owns both sockets, and
// gnet reads the source's only when the event returns (what is left in it
// then brings another event: epoll is level-triggered). What the source's
// socket holds of a partition's records goes through the loop's pipe to
// the destination's socket, and the stream counts it (SkipRecords); at a
// partition's end the next unit is taken from the socket too (spliceUnit)
// and the next partition's records spliced in turn. A pass ends when the
// source's socket is empty, the frame is through or what is left of a
// partition is not to be spliced, or the destination's socket is full:
// what the pipe still holds is then written to the destination as any
// other bytes (pipeFull). An owner that bounds its passes by the
// destination's room (the client's, invariant 42) splices no more into the
// pipe than the destination's socket takes, and its pass ends before a
// full one (roomOut): what waits stays in the source's socket. The pipe is
// empty whenever a pass returns.

import (
	"fmt"
	"sync/atomic"

	"github.com/flexway/flexway/engine/kernel"
	"github.com/panjf2000/gnet/v2"
)

// loopPipeSize is what the loop's pipe is asked to hold (F_SETPIPE_SZ;
// the kernel's pipe-max-size is 1 MiB by default): one pass moves at most
// this much between two writes to the destination.
const loopPipeSize = 1 << 20

// testPipeShort (tests): every pass writes half of what the pipe holds to
// the destination's socket, as when it is full, and the rest as any bytes.
var testPipeShort atomic.Bool

// loopPipe is a loop's pipe for splicing, made at first use.
type loopPipe struct {
	*kernel.Pipe
	out []byte // 64 KiB: what a pass could not write is read out into this; spliceUnit's peek
}

// pipe returns the loop's pipe, nil when none can be made (nothing is
// spliced on this loop then; tried again after a while; never where the
// kernel has no splice).
func (lp *loop) pipe() *loopPipe {
	if lp.pp != nil {
		return lp.pp
	}
	if lp.ppFailed > 0 {
		lp.ppFailed--
		return nil
	}
	p, err := kernel.NewPipe(loopPipeSize)
	if err != nil {
		lp.ppFailed = 1000
		return nil
	}
	lp.pp = &loopPipe{Pipe: p, out: make([]byte, 64<<10)}
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
		p.Close()
		lp.pp = nil
	}
}

// spliceRoomMin: a destination whose socket takes fewer bytes than this is
// full for a pass bounded by its room (the client's side, invariant 42:
// what the broker's socket does not take would be left in the pipe, to be
// read out and copied through the broker connection's buffer). Smaller
// passes would cost their system calls for little.
const spliceRoomMin = 4 << 10

// recordStream is what a pass needs of a stream (codec's
// ProduceRequestStream and FetchResponseStream).
type recordStream interface {
	RecordsLeft() int
	SkipRecords(n int) bool
	Remaining() int
	Pending() int
	Feed(chunk []byte) (int, error)
	Slices() [][]byte
	Done() bool
}

// spliceEnds is one direction of a pass: the owner of the stream (the
// client for a Produce, the broker connection for a Fetch answer).
type spliceEnds interface {
	spliceMore(left int) bool // a partition with left record bytes to come is spliced
	spliced(n int)            // n record bytes went through
	pipeFull(rest int)        // the destination's socket did not take the pipe's last rest bytes
	room(dst int) int         // what the destination's socket takes now; -1: not bounded
	roomOut()                 // the pass ended before a full destination: nothing is in the pipe
	unitOut(sl [][]byte)      // a unit's output, to the destination's socket (nothing is unsent)
	unitTaken(used int)       // a unit of used bytes was taken from the source's socket
	destClear() bool          // both open, nothing unsent to the destination
	streamFailed(why string)  // the stream cannot go on: the client is closed
}

// splicePass moves what the source's socket holds of the stream's records
// to the destination (see above); true when bytes moved (the stream went
// on by them). The stream is inside records that spliceMore accepts, with
// nothing of the source buffered and no piece pending; pp is the loop's.
func (lp *loop) splicePass(st recordStream, e spliceEnds, pp *loopPipe, src, dst int) bool {
	left := st.RecordsLeft()
	moved := false
	for {
		for left > 0 {
			want := min(left, pp.Size())
			if r := e.room(dst); r >= 0 && r < want {
				if r < spliceRoomMin {
					e.roomOut()
					return moved
				}
				want = r
			}
			n := pp.From(src, want)
			if n <= 0 {
				return moved // the socket is empty (EAGAIN), ended or failed: gnet sees which at its next read
			}
			moved = true
			if !st.SkipRecords(int(n)) { // cannot happen: n is at most RecordsLeft
				_ = lp.readOut(int(n), nil)
				e.streamFailed("records spliced past the partition")
				return false
			}
			left -= int(n)
			e.spliced(int(n))
			if rest := pp.pipeTo(int(n), dst); rest > 0 {
				e.pipeFull(rest)
				return moved
			}
		}
		// The partition's records are through: the next unit, if whole
		// in the socket, is taken here rather than with a read of the
		// loop's buffer (which would copy the records after it).
		if st.Done() || !lp.spliceUnit(st, e, pp, src) {
			return moved
		}
		moved = true
		if left = st.RecordsLeft(); !e.spliceMore(left) {
			return moved // a partition not spliced, or the frame's end: through the loop's buffer
		}
	}
}

// spliceUnit takes the stream's next unit (a partition's tags and header,
// a topic's, the frame's) from the source's socket, looked at first
// (MSG_PEEK) then taken for what the stream used, and writes its output to
// the destination's socket. False: not whole there yet, the destination
// did not take it all (the rest waits in its buffer: nothing may pass
// it), the frame is through, or the stream failed.
func (lp *loop) spliceUnit(st recordStream, e spliceEnds, pp *loopPipe, src int) bool {
	head := pp.out[:min(spliceUnitPeek, st.Remaining())]
	if len(head) == 0 {
		return false // the frame's own last bytes: the owner's feed ends it
	}
	k, err := kernel.Peek(src, head)
	if k <= 0 || err != nil {
		return false
	}
	used, err := st.Feed(head[:k])
	if err != nil {
		e.streamFailed(err.Error())
		return false
	}
	if used == 0 {
		return false // a unit not yet whole
	}
	if sl := st.Slices(); len(sl) > 0 {
		e.unitOut(sl)
	}
	// Take what the stream used (the bytes just looked at: they are there).
	got, err := kernel.Read(src, pp.out[spliceUnitPeek:spliceUnitPeek+used])
	if got != used {
		e.streamFailed(fmt.Sprintf("the socket gave %d of %d bytes it held (%v)", got, used, err))
		return false
	}
	e.unitTaken(used)
	return !st.Done() && e.destClear()
}

// spliceUnitPeek: what spliceUnit looks at; a partition's header and the
// tags around it take some 20 to 100 bytes (more with aborted
// transactions: such a unit goes through the loop's buffer), the rest it
// sees of the records is written from it.
const spliceUnitPeek = 256

// pipeTo splices n bytes from the pipe to the socket fd; it returns how
// many are still in the pipe (the socket took no more).
func (pp *loopPipe) pipeTo(n, fd int) int {
	stop := 0
	if testPipeShort.Load() {
		stop = n / 2 // as if the socket took only half
	}
	return stop + pp.To(fd, n-stop)
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
		m, err := pp.Read(pp.out[:min(n, len(pp.out))])
		if m <= 0 {
			lp.closePipe()
			return err
		}
		n -= m
		if c != nil {
			_, _ = c.Write(pp.out[:m])
		}
	}
	return nil
}
