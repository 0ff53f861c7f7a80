package splice

import (
	"fmt"
	"sync/atomic"

	"github.com/flexway/flexway/engine/kernel"
)

// PipeSize is what the loop's pipe is asked to hold (F_SETPIPE_SZ; the
// kernel's pipe-max-size is 1 MiB by default): one pass moves at most this
// much between two writes to the destination.
const PipeSize = 1 << 20

// unitPeek is what Unit looks at: a partition's header and the tags
// around it take some 20 to 100 bytes (more with aborted transactions:
// such a unit goes through the loop's buffer).
const unitPeek = 256

// Stream is what a pass needs of a record stream (codec's
// ProduceRequestStream and FetchResponseStream).
type Stream interface {
	RecordsLeft() int
	SkipRecords(n int) bool
	Remaining() int
	Pending() int
	Feed(chunk []byte) (int, error)
	Slices() [][]byte
	Done() bool
}

// Ends is one direction of a pass: the owner of the stream (the client for
// a Produce, the broker connection for a Fetch answer).
type Ends interface {
	More(left int) bool  // a partition with left record bytes to come is spliced
	Spliced(n int)       // n record bytes went through
	PipeFull(rest int)   // the destination did not take the pipe's last rest bytes: ReadOut them
	Room(dst int) int    // what the destination's socket takes now; -1: not bounded
	RoomOut()            // the pass ended before a full destination: nothing is in the pipe
	UnitOut(sl [][]byte) // a unit's output, to the destination (nothing is unsent)
	UnitTaken(used int)  // a unit of used bytes was taken from the source's socket
	DestClear() bool     // both open, nothing unsent to the destination
	Failed(why string)   // the stream cannot go on: the client is closed
}

// Pipe is a loop's pipe and its scratch, made at first use.
type Pipe struct {
	*kernel.Pipe
	Out []byte // 64 KiB: what a pass could not write is read out into this; Unit's peek

	// Short (tests): every pass writes half of what the pipe holds to the
	// destination's socket, as when it is full, and the rest as any bytes.
	Short atomic.Bool
}

// NewPipe makes a loop's pipe; an error where the kernel has no splice.
func NewPipe() (*Pipe, error) {
	p, err := kernel.NewPipe(PipeSize)
	if err != nil {
		return nil, err
	}
	return &Pipe{Pipe: p, Out: make([]byte, 64<<10)}, nil
}

// Pass moves what the source's socket holds of the stream's records to
// the destination; true when bytes moved (the stream went on by them).
// The stream is inside records that More accepts, with nothing of the
// source buffered and no piece pending.
func (pp *Pipe) Pass(st Stream, e Ends, src, dst int) bool {
	left := st.RecordsLeft()
	moved := false
	for {
		for left > 0 {
			want := min(left, pp.Size())
			if r := e.Room(dst); r >= 0 && r < want {
				if r < kernel.RoomMin { // full for a pass bounded by its room
					e.RoomOut()
					return moved
				}
				want = r
			}
			n := pp.From(src, want)
			if n <= 0 {
				return moved // the socket is empty (EAGAIN), ended or failed: gnet sees which at its next read
			}
			moved = true
			if !st.SkipRecords(n) { // cannot happen: n is at most RecordsLeft
				_ = pp.ReadOut(n, nil)
				e.Failed("records spliced past the partition")
				return false
			}
			left -= n
			e.Spliced(n)
			if rest := pp.to(n, dst); rest > 0 {
				e.PipeFull(rest)
				return moved
			}
		}
		// The partition's records are through: the next unit, if whole in
		// the socket, is taken here rather than with a read of the loop's
		// buffer (which would copy the records after it).
		if st.Done() || !pp.Unit(st, e, src) {
			return moved
		}
		moved = true
		if left = st.RecordsLeft(); !e.More(left) {
			return moved // a partition not spliced, or the frame's end: through the loop's buffer
		}
	}
}

// Unit takes the stream's next unit (a partition's tags and header, a
// topic's, the frame's) from the source's socket, looked at first
// (MSG_PEEK) then taken for what the stream used, and writes its output
// to the destination. False: not whole there yet, the destination did not
// take it all, the frame is through, or the stream failed.
func (pp *Pipe) Unit(st Stream, e Ends, src int) bool {
	head := pp.Out[:min(unitPeek, st.Remaining())]
	if len(head) == 0 {
		return false // the frame's own last bytes: the owner's feed ends it
	}
	k, err := kernel.Peek(src, head)
	if k <= 0 || err != nil {
		return false
	}
	used, err := st.Feed(head[:k])
	if err != nil {
		e.Failed(err.Error())
		return false
	}
	if used == 0 {
		return false // a unit not yet whole
	}
	if sl := st.Slices(); len(sl) > 0 {
		e.UnitOut(sl)
	}
	// Take what the stream used (the bytes just looked at: they are there).
	got, err := kernel.Read(src, pp.Out[unitPeek:unitPeek+used])
	if got != used {
		e.Failed(fmt.Sprintf("the socket gave %d of %d bytes it held (%v)", got, used, err))
		return false
	}
	e.UnitTaken(used)
	return !st.Done() && e.DestClear()
}

// Head looks at the head of what the socket holds (MSG_PEEK), into the
// pipe's scratch: a request's size and its first unit.
func (pp *Pipe) Head(src int) ([]byte, error) {
	head := pp.Out[:unitPeek]
	k, err := kernel.Peek(src, head)
	return head[:max(k, 0)], err
}

// Take reads n bytes the caller looked at (Head) from the socket.
func (pp *Pipe) Take(src, n int) (int, error) {
	return kernel.Read(src, pp.Out[unitPeek:unitPeek+n])
}

// to splices n bytes from the pipe to dst; it returns how many are still
// in the pipe (the socket took no more).
func (pp *Pipe) to(n, dst int) int {
	stop := 0
	if pp.Short.Load() {
		stop = n / 2 // as if the socket took only half
	}
	return stop + pp.To(dst, n-stop)
}

// Writer is where ReadOut writes what the pipe held (a conn.Conn).
type Writer interface{ Write(b []byte) error }

// ReadOut reads the n bytes left in the pipe and writes them to w as any
// other bytes; with w nil they are dropped. An error: the pipe lost bytes
// it held (cannot happen); the caller closes it and the connection whose
// bytes it carried.
func (pp *Pipe) ReadOut(n int, w Writer) error {
	for n > 0 {
		m, err := pp.Read(pp.Out[:min(n, len(pp.Out))])
		if m <= 0 {
			return err
		}
		n -= m
		if w != nil {
			_ = w.Write(pp.Out[:m])
		}
	}
	return nil
}

// Drain reads and drops what the socket holds, up to 1 MiB, before a
// close: a socket closed with bytes unread sends a reset, where the peer
// is owed an orderly close.
func (pp *Pipe) Drain(fd int) {
	for i := 0; fd >= 0 && i < 16; i++ {
		if n, _ := kernel.Read(fd, pp.Out); n <= 0 {
			return
		}
	}
}
