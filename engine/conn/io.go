package conn

import (
	"io"
	"net"
	"os"

	"github.com/flexway/flexway/engine/kernel"
)

// Reading: the stash first, then gnet's buffer. Once both are asked for
// at once, what gnet holds is moved after the stash (a copy, only while a
// stash is left after a resume).

// Stashed is what the stash holds, not read yet: what gnet had read and the
// owner not consumed when the socket was detached, a gathered frame, or
// what was read on (readon.go).
func (c *Conn) Stashed() int { return len(c.rd.in) }

// absorb moves what gnet holds after the stash: in its traffic event, both
// into the loop's read-on buffer when they fit (readon.go).
func (c *Conn) absorb() {
	if c.live == nil || c.live.InboundBuffered() == 0 {
		return
	}
	if l := c.l; c.rd.event && c.rd.gather == 0 && l.onCap > 0 && l.moreFree(c) && c.Stashed()+c.live.InboundBuffered() <= l.onCap {
		c.intoMore()
		return
	}
	b, err := c.live.Peek(-1)
	if err != nil {
		return
	}
	c.stash(b)
	_, _ = c.live.Discard(len(b))
}

// stash puts b after the stash: in the room Gather made, else in a new
// array. Never over a byte of the stash: slices the owner took of it stay
// as they were (appending after len touches none of them).
func (c *Conn) stash(b []byte) {
	if cap(c.rd.in)-len(c.rd.in) >= len(b) && c.rd.gather > 0 {
		c.rd.in = append(c.rd.in, b...)
		return
	}
	in := append(c.rd.in[:len(c.rd.in):len(c.rd.in)], b...)
	c.rd.unpool(c.l)
	c.rd.in = in
}

// Gather makes the stash the one buffer of a frame of n bytes in all that
// begins at the head of what the Conn holds, and moves what gnet holds
// there: gnet's ring would grow by doubling and copying, and hold twice
// the frame for a while. The owner calls it at the end of each traffic
// event while it gathers such a frame; the room goes with the stash, once
// the frame is consumed (Discard).
func (c *Conn) Gather(n int) {
	if c.live == nil && c.Stashed() == 0 {
		return
	}
	if cap(c.rd.in) < n || c.rd.inMore || c.rd.pool != nil {
		b := make([]byte, c.Stashed(), n)
		copy(b, c.rd.in)
		c.rd.unpool(c.l)
		c.rd.in = b
	}
	c.rd.gather = n
	c.absorb()
}

// Buffered is what the owner may read now.
func (c *Conn) Buffered() int {
	n := c.Stashed()
	if c.live != nil {
		n += c.live.InboundBuffered()
	}
	return n
}

// Peek returns the next n bytes without consuming them (all of them for
// n < 0), valid until the next Discard or the end of the callback;
// io.ErrShortBuffer when fewer are buffered.
func (c *Conn) Peek(n int) ([]byte, error) {
	if c.Stashed() == 0 {
		if c.live != nil {
			return c.live.Peek(n)
		}
		if n > 0 {
			return nil, io.ErrShortBuffer
		}
		return nil, nil
	}
	if n <= 0 || n > c.Stashed() {
		c.absorb()
	}
	if n <= 0 {
		n = c.Stashed()
	}
	if n > c.Stashed() {
		return nil, io.ErrShortBuffer
	}
	return c.rd.in[:n:n], nil
}

// Discard consumes n bytes (all of them for n <= 0).
func (c *Conn) Discard(n int) {
	s := c.Stashed()
	if s == 0 {
		if c.live != nil {
			_, _ = c.live.Discard(n)
		}
		return
	}
	if n > 0 && n < s {
		c.rd.in = c.rd.in[n:]
		return
	}
	c.rd.unpool(c.l)
	c.rd.in, c.rd.gather = nil, 0
	if c.live == nil {
		return
	}
	if n <= 0 || n-s >= c.live.InboundBuffered() {
		_, _ = c.live.Discard(-1)
		return
	}
	if n > s {
		_, _ = c.live.Discard(n - s)
	}
}

// Writing: straight to the socket, attached or not; what it does not take
// waits in the queue, written when the socket takes more (the watcher).
// An error closes, as gnet's Write does.

// Write is Writev of one slice, through a vector of the loop's (a
// [][]byte literal would escape). A Write re-entered from a close inside
// it takes a fresh one.
func (c *Conn) Write(b []byte) error {
	l := c.l
	if l.oneBusy {
		return c.Writev([][]byte{b})
	}
	l.oneBusy = true
	l.one[0] = b
	err := c.Writev(l.one[:])
	l.one[0] = nil
	l.oneBusy = false
	return err
}

// Writev writes bs in order after what the queue holds.
func (c *Conn) Writev(bs [][]byte) error {
	if c.st == closed {
		return net.ErrClosed
	}
	if c.st == resuming || c.q.Len() > 0 {
		for _, b := range bs {
			c.q.Push(b)
		}
		c.marks()
		return nil
	}
	fd := c.Fd()
	if fd < 0 {
		return net.ErrClosed
	}
	if err := c.q.WriteDirect(fd, bs); err != nil {
		err = os.NewSyscallError("writev", err)
		c.writeFailed(err)
		return err
	}
	if c.q.Len() > 0 {
		c.arm()
		c.marks()
	}
	return nil
}

// Queued is what was written and the socket has not taken yet.
func (c *Conn) Queued() int { return c.q.Len() }

// Full reports whether a pass found no room in the socket (NoRoom) and it
// has not taken more since: what waits for the peer is in the kernel's
// send queue (Unsent), not in the Conn's.
func (c *Conn) Full() bool { return c.full }

// Unsent is what the socket's send queue holds (sent and not acknowledged,
// or not sent yet), 0 where the kernel does not say.
func (c *Conn) Unsent() int {
	if fd := c.Fd(); fd >= 0 {
		return max(kernel.Unsent(fd), 0)
	}
	return 0
}

// Took counts the times the socket took queued bytes or had room again
// after a NoRoom: a peer that reads moves it, one that reads nothing does
// not (the write timeout, B3). It wraps; only a change is meaningful.
func (c *Conn) Took() uint32 { return c.took }

// SetMarks sets the write queue's marks (low <= high) and tells the owner
// at once if the queue is now on the other side of them.
func (c *Conn) SetMarks(high, low int) {
	c.high, c.low = high, min(low, high)
	c.marks()
}

// Above reports whether the queue is above its high mark (or the socket
// has no room), not back to its low mark yet.
func (c *Conn) Above() bool { return c.above }

// NoRoom says the socket has no room left for what the owner would write
// by another way (a splice pass bounded by the socket's room): the Conn is
// above its high mark until the socket takes more, as if its queue held it.
func (c *Conn) NoRoom() {
	if c.full || c.st == closed {
		return
	}
	c.full = true
	c.l.track(c)
	c.arm()
	c.marks()
}

// marks tells the owner of a crossing: above when the queue passes high
// (or the socket has no room), below when it is back to low and has room.
// The state changes before the owner is told: a call it makes back sees it.
func (c *Conn) marks() {
	n := c.q.Len()
	switch {
	case !c.above && (n > c.high || c.full):
		c.above = true
		c.l.stats.Above.Inc()
		c.owner.Above()
	case c.above && !c.full && n <= c.low:
		c.above = false
		c.owner.Below()
	}
}

// flush writes what waits for the socket, and arms the watcher for the rest.
func (c *Conn) flush() {
	if c.q.Len() == 0 || c.st == resuming || c.st == closed {
		return
	}
	fd := c.Fd()
	if fd < 0 {
		return
	}
	n, err := c.q.WriteTo(fd)
	if err != nil {
		c.writeFailed(os.NewSyscallError("writev", err))
		return
	}
	if n > 0 {
		c.took++
	}
	if c.q.Len() > 0 {
		c.arm()
	}
}

// writable: the socket takes more (the watcher fired, or the tick looked).
// What waits is written, a socket without room that has some again ends
// its NoRoom, and the owner is told.
func (c *Conn) writable() {
	if c.st == closed || c.st == resuming {
		return
	}
	c.flush()
	if c.st == closed {
		return
	}
	if c.full {
		if fd := c.Fd(); fd < 0 || roomBack(fd) {
			c.full = false
			c.took++
		} else {
			c.arm()
		}
	}
	c.marks()
	if c.st != closed {
		c.owner.Drained()
	}
}

// roomBack reports whether the socket takes kernel.RoomMin bytes or more
// (or its room cannot be known): a NoRoom ends there.
func roomBack(fd int) bool {
	r := kernel.Room(fd)
	return r < 0 || r >= kernel.RoomMin
}

// writeFailed closes the connection after a write error, as gnet's Write
// does: the owner is told at once.
func (c *Conn) writeFailed(err error) {
	c.q.Reset()
	if c.live != nil {
		_ = c.l.el.Close(c.live) // synchronous: OnClose(live) tells the owner
		return
	}
	c.closeDetached(err, true)
}

// arm asks the loop's watcher to say when the socket takes more; without
// a watcher the tick looks.
func (c *Conn) arm() {
	c.l.track(c)
	if fd := c.Fd(); fd >= 0 && c.st != resuming {
		c.l.arm(c, fd)
	}
}

// disarm forgets the Conn's arming (its socket closes or changes).
func (c *Conn) disarm() { c.l.disarm(c) }
