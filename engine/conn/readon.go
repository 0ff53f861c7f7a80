package conn

import (
	"github.com/flexway/flexway/engine/kernel"
	"github.com/valyala/bytebufferpool"
)

// Reading on (issue 35.1). gnet reads every socket of a loop with one
// buffer size, the first read: small, so that the records of a large
// Produce (or Fetch answer) stay in the socket to be spliced, where a
// large read would copy them in and out of the loop. An owner whose frame
// that read left incomplete, and which does not splice it (small
// partitions: the Java producer's 16 KiB batches, pipelined), reads on
// from the socket itself in one call, into the loop's read-on buffer: the
// Conn's stash for the rest of its traffic event, read before anything
// gnet holds. What the event leaves of it is kept in a pooled buffer of
// the Conn's (keep), read first at its next event, where it is moved back
// into the loop's buffer with what gnet read (absorb), not into a new
// array. Only inside the Conn's own traffic event, attached and not
// paused, after gnet's read filled its buffer (the socket may hold more),
// once an event: what the read on leaves in the socket waits for gnet.

// stash is what the owner reads before gnet's buffer: what gnet had read
// when the socket was detached, a gathered frame (Gather), or what was
// read on (ReadOn) and kept.
type stash struct {
	in []byte // resliced as it is consumed
	// gather: the frame Gather made room for in the stash (0: none)
	gather int
	// pool: the stash's pooled buffer (keep)
	pool *bytebufferpool.ByteBuffer
	// kept: what gnet held at the end of the last event
	kept int32
	// inMore: the stash is in the loop's read-on buffer; event: in the
	// Conn's traffic event; filled: its last read filled what it asked,
	// and it has not read on since
	inMore, event, filled bool
}

// stashes pools the stashes kept after an event (keep): a pool of their
// own, calibrated to their sizes (kernel.Queue's chunks have theirs).
var stashes bytebufferpool.Pool

// readOnMin: a read on asked for less than this is not made (a budget
// nearly spent: gnet's next read comes anyway).
const readOnMin = 4 << 10

// SetReadOn sets gnet's read size (first) and the loop's read-on buffer
// size (on; 0: no reading on), before the loop's first traffic.
func (l *Loop) SetReadOn(first, on int) { l.first, l.onCap = first, on }

// MayReadOn reports whether ReadOn may read now: in the Conn's traffic
// event, after a read that filled what it asked.
func (c *Conn) MayReadOn() bool {
	return c.rd.event && c.rd.filled && c.why == 0 && c.st == attached && c.live != nil &&
		c.rd.gather == 0 && c.l.moreFree(c)
}

// NoMore: the owner found the socket empty (it looked at it): nothing is
// read on until gnet's next read.
func (c *Conn) NoMore() { c.rd.filled = false }

// moreFree: the read-on buffer holds no other Conn's stash.
func (l *Loop) moreFree(c *Conn) bool {
	return l.moreBy == nil || l.moreBy == c || !l.moreBy.rd.inMore
}

// ReadOn reads what the socket holds, up to most bytes, after what the
// Conn holds; it returns how many it read (0: it may not, or the socket
// had none, or ended: gnet's next read says which). What the Conn holds
// is moved to the front of the loop's buffer first: slices the owner
// peeked before are not valid after it.
func (c *Conn) ReadOn(most int) int {
	if !c.MayReadOn() {
		return 0
	}
	l := c.l
	held := c.Stashed() + c.live.InboundBuffered()
	room := min(most, l.onCap-held)
	if room < readOnMin {
		return 0
	}
	held = c.intoMore() // the same bytes, now at the buffer's front
	n, _ := kernel.Read(c.live.Fd(), l.more[held:held+room])
	n = max(n, 0)
	c.rd.in = l.more[: held+n : held+n]
	c.rd.filled = false // once an event: gnet's next read comes for the rest
	return n
}

// intoMore moves the stash, then what gnet holds, to the front of the
// loop's read-on buffer, which becomes the stash (a memmove when the stash
// is there already), made at its first use; it returns the stash's length.
func (c *Conn) intoMore() int {
	l := c.l
	if l.more == nil {
		l.more = make([]byte, l.onCap)
	}
	k := copy(l.more, c.rd.in)
	if !c.rd.inMore {
		c.rd.unpool(c.l)
	}
	if g := c.live.InboundBuffered(); g > 0 {
		if b, err := c.live.Peek(g); err == nil {
			k += copy(l.more[k:], b)
			_, _ = c.live.Discard(g)
		}
	}
	c.rd.in, c.rd.inMore = l.more[:k:k], true
	l.moreBy = c
	return k
}

// keep moves what the stash holds of the loop's read-on buffer to a pooled
// buffer, at the end of the Conn's traffic event.
func (s *stash) keep(l *Loop) {
	if !s.inMore {
		return
	}
	s.inMore = false
	l.moreBy = nil
	if len(s.in) == 0 {
		s.in = nil
		return
	}
	bb := stashes.Get()
	bb.B = append(bb.B[:0], s.in...)
	s.pool = bb
	s.in = bb.B[:len(bb.B):len(bb.B)]
}

// unpool gives the stash's pooled buffer back, or forgets the loop's
// buffer: the caller replaces in.
func (s *stash) unpool(l *Loop) {
	if s.inMore {
		s.inMore = false
		l.moreBy = nil
	}
	if s.pool != nil {
		stashes.Put(s.pool)
		s.pool = nil
	}
}

// traffic runs the owner's traffic event: it notes whether gnet's read
// filled its buffer, and keeps what the event leaves of the read-on buffer.
func (c *Conn) traffic() {
	r := &c.rd
	if c.live != nil {
		r.filled = c.l.onCap > 0 && c.live.InboundBuffered()-int(r.kept) >= c.l.first
	}
	r.event = true
	defer func() {
		r.event = false
		r.keep(c.l)
		r.kept = 0
		if c.live != nil {
			r.kept = int32(c.live.InboundBuffered())
		}
	}()
	c.owner.Traffic()
}
